#include "plan/preflight_input.h"

#include <algorithm>
#include <cmath>
#include <string>

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

// A string at manifest[section][key], or "".
std::string PreflightManifestString(const json& manifest, const char* section, const char* key) {
  if (!manifest.is_object() || !manifest.contains(section) || !manifest[section].is_object()) return "";
  const json v = manifest[section].value(key, json());
  return v.is_string() ? v.get<std::string>() : "";
}

// What the pilot ran (micro-batch, sequence length, device, software stack) and its optional phases:
// precision, activation checkpointing, sequence length, evaluation (docs/preflight-format.md).
Status ReadPilotFacts(const json& doc, const std::string& path, PreflightInputs* p) {
  const json& m = doc["measured"];
  SIMREPLAY_RETURN_IF_ERROR(Optional(m, path, "micro_batch_samples", &p->micro_batch_samples));
  if (!p->micro_batch_samples) SIMREPLAY_RETURN_IF_ERROR(Optional(doc, path, "job.micro_batch_samples", &p->micro_batch_samples));
  SIMREPLAY_RETURN_IF_ERROR(Optional(m, path, "sequence_length", &p->sequence_length));
  if (!p->sequence_length) SIMREPLAY_RETURN_IF_ERROR(Optional(doc, path, "pilot.sequence_length", &p->sequence_length));
  SIMREPLAY_RETURN_IF_ERROR(Optional(m, path, "eval_s", &p->eval_s));
  if (m.contains("precision_low") && m["precision_low"].is_string()) p->precision_low = m["precision_low"];
  SIMREPLAY_RETURN_IF_ERROR(Optional(m, path, "step_time_s_fp32", &p->step_time_s_fp32));
  SIMREPLAY_RETURN_IF_ERROR(Optional(m, path, "step_time_s_low_precision", &p->step_time_s_low_precision));
  SIMREPLAY_RETURN_IF_ERROR(Optional(doc, path, "activation_checkpointing.step_time_s_off", &p->ac_step_time_s_off));
  // The recompute cost is a difference of two noisy means: a small negative one (noise) counts as 0.
  const json ac = doc.value("activation_checkpointing", json::object());
  if (ac.is_object() && ac.value("recompute_s", json()).is_number()) {
    const double recompute = ac["recompute_s"].get<double>();
    if (!std::isfinite(recompute)) {
      return Status::InvalidArgument(fmt::format("{}: 'activation_checkpointing.recompute_s' must be finite", path));
    }
    p->ac_recompute_s = std::max(0.0, recompute);
  }
  SIMREPLAY_RETURN_IF_ERROR(
      Optional(doc, path, "activation_checkpointing.activation_bytes_off", &p->ac_activation_bytes_off));
  SIMREPLAY_RETURN_IF_ERROR(
      Optional(m, path, "activation_checkpointing_bytes_saved", &p->ac_activation_bytes_saved));
  SIMREPLAY_RETURN_IF_ERROR(Optional(m, path, "attention_share_time", &p->attention_share_time));
  SIMREPLAY_RETURN_IF_ERROR(Optional(m, path, "attention_share_activation_memory", &p->attention_share_memory));
  SIMREPLAY_RETURN_IF_ERROR(Optional(m, path, "attention_share_at_sequence_length", &p->attention_share_length));
  for (const auto* share : {&p->attention_share_time, &p->attention_share_memory}) {
    if (*share && **share > 1) {
      return Status::InvalidArgument(
          fmt::format("{}: an attention share must be a fraction in [0, 1], found {:g}", path, **share));
    }
  }
  p->manifest = doc.value("manifest", json());
  if (p->manifest.is_object()) {
    const json hardware = p->manifest.value("hardware", json::object());
    const json gpus = hardware.is_object() ? hardware.value("gpus", json()) : json();
    if (gpus.is_array() && !gpus.empty() && gpus[0].is_object() && gpus[0].value("name", json()).is_string()) {
      p->device_name = gpus[0]["name"].get<std::string>();
    }
    const std::string hip = PreflightManifestString(p->manifest, "versions", "hip");
    const json rocm = p->manifest.value("rocm", json());
    p->rocm = !hip.empty() || (rocm.is_object() && !rocm.empty());
    if (p->rocm) {
      const std::string release = PreflightManifestString(p->manifest, "rocm", "rocm_version");
      p->rocm_stack = fmt::format("ROCm {} (hip {})", release.empty() ? "release not recorded" : release,
                                  hip.empty() ? "not recorded" : hip);
    }
  }
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
  SIMREPLAY_RETURN_IF_ERROR(ReadPilotFacts(*j, path, &p));
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
