#include "plan/preflight_input.h"

#include <cmath>

#include <fmt/format.h>

#include "common/json_fields.h"

namespace simreplay::plan {

namespace {

using nlohmann::json;

// A positive finite number at a dotted path, or nothing; a present value of the wrong kind is an error.
Status Optional(const json& root, const std::string& path, const std::string& dotted, std::optional<double>* out) {
  const json* node = &root;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    const std::string key = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object() || !node->contains(key) || (*node)[key].is_null()) return Status::Ok();
    node = &(*node)[key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (!node->is_number() || !std::isfinite(node->get<double>()) || node->get<double>() < 0) {
    return Status::InvalidArgument(fmt::format("{}: '{}' must be a number >= 0, found {}", path, dotted, node->dump()));
  }
  *out = node->get<double>();
  return Status::Ok();
}

}  // namespace

Result<PreflightInputs> LoadPreflight(const std::string& path) {
  auto j = ReadJsonFile(path);
  if (!j.ok()) return j.status();
  if (!j->is_object()) return Status::InvalidArgument(path + ":1: a preflight.json must be a JSON object");
  PreflightInputs p;
  p.path = path;
  const std::string schema = j->value("schema", "");
  if (schema != "simreplay.preflight/1") {
    return Status::InvalidArgument(
        fmt::format("{}:1: expected schema \"simreplay.preflight/1\", found \"{}\"", path, schema));
  }
  p.passed = j->value("status", "") == "pass";
  if (!p.passed) {
    return Status::InvalidArgument(path + ":1: expected a preflight whose checks passed (status \"pass\"), found \"" +
                                   j->value("status", "") + "\": fix the job first, its figures are not trustworthy");
  }
  if (!j->contains("measured") || !(*j)["measured"].is_object()) {
    return Status::InvalidArgument(path + ":1: expected a 'measured' object, found none");
  }
  const json& m = (*j)["measured"];
  p.device = m.value("accelerator", j->value("accelerator", "cpu"));
  // The simulator's GPU step is the step callable alone: data wait (simulated) and comm_s (the
  // planner's own communication) excluded.
  SIMREPLAY_RETURN_IF_ERROR(Optional(m, path, "compute_s", &p.step_time_s));
  std::optional<double> peak;
  SIMREPLAY_RETURN_IF_ERROR(Optional(m, path, "peak_memory_bytes", &peak));
  if (m.value("peak_memory_kind", "") == "cuda_reserved") p.peak_memory_bytes = peak;  // host PSS is not GPU memory
  SIMREPLAY_RETURN_IF_ERROR(Optional(m, path, "checkpoint_bytes", &p.checkpoint_bytes));
  SIMREPLAY_RETURN_IF_ERROR(Optional(m, path, "checkpoint_write_bytes_per_s", &p.checkpoint_write_bytes_per_s));
  SIMREPLAY_RETURN_IF_ERROR(Optional(m, path, "checkpoint_read_bytes_per_s", &p.checkpoint_read_bytes_per_s));
  SIMREPLAY_RETURN_IF_ERROR(Optional(m, path, "restart_s", &p.restart_s));
  if (p.step_time_s && *p.step_time_s <= 0) p.step_time_s.reset();
  std::optional<double> world;
  SIMREPLAY_RETURN_IF_ERROR(Optional(m, path, "world_size", &world));
  if (world) {
    if (*world < 1 || *world != std::floor(*world) || *world > 1e6) {
      return Status::InvalidArgument(
          fmt::format("{}: 'world_size' must be a whole number of ranks >= 1, found {}", path, *world));
    }
    p.world_size = static_cast<int>(*world);
  }
  return p;
}

}  // namespace simreplay::plan
