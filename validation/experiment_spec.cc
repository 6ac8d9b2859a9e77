#include "validation/experiment_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "common/json_fields.h"
#include "common/paths.h"
#include "scenarios/scenario.h"
#include "common/json_reader.h"

namespace simreplay::validation {

const std::vector<std::string>& FactorNames() {
  static const std::vector<std::string> kNames = {"num_workers", "batch_size",         "prefetch_factor",
                                                  "pin_memory",  "persistent_workers", "format"};
  return kNames;
}

nlohmann::json FactorValue(const BenchConfig& c, const std::string& factor) {
  if (factor == "num_workers") return c.num_workers;
  if (factor == "batch_size") return c.batch_size;
  if (factor == "prefetch_factor") return c.prefetch_factor;
  if (factor == "pin_memory") return c.pin_memory;
  if (factor == "persistent_workers") return c.persistent_workers;
  if (factor == "format") return c.format;
  return nullptr;
}

std::vector<std::string> DifferingFactors(const BenchConfig& a, const BenchConfig& b) {
  std::vector<std::string> out;
  for (const auto& f : FactorNames()) {
    if (FactorValue(a, f) != FactorValue(b, f)) out.push_back(f);
  }
  return out;
}

bool FactorPreservesContent(const std::string& factor) {
  return factor == "prefetch_factor" || factor == "pin_memory" || factor == "format";
}

nlohmann::json BenchConfigToJson(const BenchConfig& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& f : FactorNames()) j[f] = FactorValue(c, f);
  return j;
}

namespace {

// The spec is read with the project's one typed document reader (common/json_reader.h), plus the
// bench configuration every case sets.
class SpecParser : public JsonReader {
 public:
  SpecParser(const std::string& text, std::string path) : JsonReader(std::move(path), text) {}

  Status Config(const nlohmann::json& object, const std::string& pointer, BenchConfig* c) const {
    std::set<std::string> allowed(FactorNames().begin(), FactorNames().end());
    SIMREPLAY_RETURN_IF_ERROR(Keys(object, pointer, allowed));
    SIMREPLAY_RETURN_IF_ERROR(IntAs(object, pointer, "num_workers", &c->num_workers, false, 0, 256));
    SIMREPLAY_RETURN_IF_ERROR(IntAs(object, pointer, "batch_size", &c->batch_size, false, 1, 65536));
    SIMREPLAY_RETURN_IF_ERROR(IntAs(object, pointer, "prefetch_factor", &c->prefetch_factor, false, 1, 1024));
    SIMREPLAY_RETURN_IF_ERROR(Bool(object, pointer, "pin_memory", &c->pin_memory));
    SIMREPLAY_RETURN_IF_ERROR(Bool(object, pointer, "persistent_workers", &c->persistent_workers));
    SIMREPLAY_RETURN_IF_ERROR(String(object, pointer, "format", &c->format, false, {"files", "tar", "lmdb", "hdf5"}));
    if (c->persistent_workers && c->num_workers == 0) {
      return Error(pointer, "persistent_workers requires num_workers > 0");
    }
    return Status::Ok();
  }
};

}  // namespace

Result<ExperimentSpec> ParseExperimentSpec(const std::string& text, const std::string& path) {
  // ParseJsonText: every parser exception becomes "PATH:LINE: ..." (a number like 1e400 is not a
  // parse_error and used to escape).
  auto parsed_or = ParseJsonText(text, path);
  if (!parsed_or.ok()) return parsed_or.status();
  const nlohmann::json parsed = std::move(*parsed_or);
  const nlohmann::json& j = parsed;
  SpecParser p(text, path);
  ExperimentSpec spec;
  spec.path = path;
  spec.raw = j;
  SIMREPLAY_RETURN_IF_ERROR(
      p.Keys(j, "",
                  {"schema", "name", "description", "mode", "dataset", "run", "repetitions", "warmup_runs",
                   "pipeline_only_runs", "base", "cases", "calibration", "bootstrap", "thresholds", "criteria"}));
  if (!j.contains("schema") || j["schema"] != kExperimentSchema) {
    return p.Error("/schema", fmt::format("'schema' must be \"{}\", found {}", kExperimentSchema,
                                          j.contains("schema") ? j["schema"].dump() : "nothing"));
  }
  SIMREPLAY_RETURN_IF_ERROR(p.String(j, "", "name", &spec.name, false));
  SIMREPLAY_RETURN_IF_ERROR(p.String(j, "", "description", &spec.description, false));
  SIMREPLAY_RETURN_IF_ERROR(p.String(j, "", "mode", &spec.mode, false));
  if (spec.mode != "ab" && spec.mode != "suite") {
    return p.Error("/mode", fmt::format("'mode' must be \"ab\" or \"suite\", found \"{}\"", spec.mode));
  }
  std::string dataset;
  SIMREPLAY_RETURN_IF_ERROR(p.String(j, "", "dataset", &dataset, false));
  if (!dataset.empty()) {
    spec.dataset_dir = ResolveBesideFile(path, dataset);
  }

  if (j.contains("run")) {
    const auto& r = j["run"];
    SIMREPLAY_RETURN_IF_ERROR(p.Keys(
        r, "/run", {"steps", "warmup_steps", "step_time_s", "image_size", "frames", "seed", "timeout_s", "command"}));
    SIMREPLAY_RETURN_IF_ERROR(p.IntAs(r, "/run", "steps", &spec.run.steps, false, 1, 1000000));
    SIMREPLAY_RETURN_IF_ERROR(p.IntAs(r, "/run", "warmup_steps", &spec.run.warmup_steps, false, 0, 1000000));
    SIMREPLAY_RETURN_IF_ERROR(p.Number(r, "/run", "step_time_s", &spec.run.step_time_s, false, 0, 3600));
    SIMREPLAY_RETURN_IF_ERROR(p.IntAs(r, "/run", "image_size", &spec.run.image_size, false, 8, 4096));
    SIMREPLAY_RETURN_IF_ERROR(p.IntAs(r, "/run", "frames", &spec.run.frames, false, 1, 1024));
    SIMREPLAY_RETURN_IF_ERROR(p.IntAs(r, "/run", "seed", &spec.run.seed, false, 0, INT64_MAX));
    SIMREPLAY_RETURN_IF_ERROR(p.Number(r, "/run", "timeout_s", &spec.run.timeout_s, false, 1, 86400));
    if (r.contains("command") && !r["command"].is_null()) {
      const auto& c = r["command"];
      if (!c.is_array() || c.empty()) return p.Error("/run/command", "'command' must be a non-empty array of strings");
      for (size_t i = 0; i < c.size(); ++i) {
        if (!c[i].is_string()) {
          return p.Error("/run/command/" + std::to_string(i),
                         fmt::format("'command' items must be strings, found {}", c[i].dump()));
        }
        spec.run.command.push_back(c[i].get<std::string>());
      }
    }
    if (spec.run.warmup_steps >= spec.run.steps) {
      return p.Error("/run/warmup_steps", fmt::format("'warmup_steps' ({}) must be smaller than 'steps' ({})",
                                                      spec.run.warmup_steps, spec.run.steps));
    }
  }
  SIMREPLAY_RETURN_IF_ERROR(p.IntAs(j, "", "repetitions", &spec.repetitions, false, 1, 1000));
  SIMREPLAY_RETURN_IF_ERROR(p.IntAs(j, "", "warmup_runs", &spec.warmup_runs, false, 0, 100));
  SIMREPLAY_RETURN_IF_ERROR(p.Bool(j, "", "pipeline_only_runs", &spec.pipeline_only_runs));
  if (j.contains("base")) SIMREPLAY_RETURN_IF_ERROR(p.Config(j["base"], "/base", &spec.base));

  if (!j.contains("cases") || !j["cases"].is_array() || j["cases"].empty()) {
    return p.Error("/cases", "'cases' must be a non-empty array of {\"name\", \"set\"} objects");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < j["cases"].size(); ++i) {
    const auto& c = j["cases"][i];
    std::string ptr = "/cases/" + std::to_string(i);
    SIMREPLAY_RETURN_IF_ERROR(p.Keys(c, ptr, {"name", "set", "note"}));
    ExperimentCase ec;
    SIMREPLAY_RETURN_IF_ERROR(p.String(c, ptr, "name", &ec.name, false));
    if (ec.name.empty() ||
        ec.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") !=
            std::string::npos) {
      return p.Error(
          ptr + "/name",
          fmt::format("case 'name' must be non-empty letters, digits, '_', '-' or '.', found \"{}\"", ec.name));
    }
    if (!names.insert(ec.name).second)
      return p.Error(ptr + "/name", fmt::format("duplicate case name \"{}\"", ec.name));
    ec.config = spec.base;
    if (c.contains("set")) SIMREPLAY_RETURN_IF_ERROR(p.Config(c["set"], ptr + "/set", &ec.config));
    ec.factors = DifferingFactors(spec.base, ec.config);
    if (spec.mode == "suite" && ec.factors.size() > 1) {
      return p.Error(ptr + "/set",
                     fmt::format("case \"{}\" differs from 'base' in {} factors ({}); a suite case varies "
                                 "exactly one factor",
                                 ec.name, ec.factors.size(), fmt::join(ec.factors, ", ")));
    }
    spec.cases.push_back(std::move(ec));
  }
  if (spec.mode == "ab") {
    if (spec.cases.size() != 2) {
      return p.Error("/cases",
                     fmt::format("mode \"ab\" needs exactly two cases (A then B), found {}", spec.cases.size()));
    }
    auto diff = DifferingFactors(spec.cases[0].config, spec.cases[1].config);
    if (diff.size() != 1) {
      return p.Error("/cases/1", fmt::format("A and B must differ in exactly one factor, they differ in {}{}{}",
                                             diff.size(), diff.empty() ? "" : ": ", fmt::join(diff, ", ")));
    }
    spec.cases[1].factors = diff;
    spec.cases[0].factors = diff;
    // Each side is predicted from the other: never from the configuration being predicted.
    spec.calibrate_from = spec.cases[0].name;
    spec.calibrate_alternate = spec.cases[1].name;
  }
  if (j.contains("calibration")) {
    const auto& c = j["calibration"];
    SIMREPLAY_RETURN_IF_ERROR(p.Keys(c, "/calibration", {"from", "alternate", "cpu_probe"}));
    SIMREPLAY_RETURN_IF_ERROR(p.String(c, "/calibration", "from", &spec.calibrate_from, false));
    SIMREPLAY_RETURN_IF_ERROR(p.String(c, "/calibration", "alternate", &spec.calibrate_alternate, false));
    if (c.contains("cpu_probe")) {
      const auto& cp = c["cpu_probe"];
      const std::string ptr = "/calibration/cpu_probe";
      SIMREPLAY_RETURN_IF_ERROR(
          p.Keys(cp, ptr, {"seconds_per_point", "rounds", "max_total_s", "max_workers", "dataset_args"}));
      SIMREPLAY_RETURN_IF_ERROR(p.Number(cp, ptr, "seconds_per_point", &spec.cpu_probe.seconds_per_point, false, 0.1, 60));
      SIMREPLAY_RETURN_IF_ERROR(p.IntAs(cp, ptr, "rounds", &spec.cpu_probe.rounds, false, 1, 20));
      SIMREPLAY_RETURN_IF_ERROR(p.Number(cp, ptr, "max_total_s", &spec.cpu_probe.max_total_s, false, 1, 3600));
      SIMREPLAY_RETURN_IF_ERROR(p.IntAs(cp, ptr, "max_workers", &spec.cpu_probe.max_workers, false, 0, 256));
      if (cp.contains("dataset_args")) {
        const auto& a = cp["dataset_args"];
        if (!a.is_array() || a.empty()) {
          return p.Error(ptr + "/dataset_args", "'dataset_args' must be a non-empty array of make-dataset arguments");
        }
        for (size_t i = 0; i < a.size(); ++i) {
          if (!a[i].is_string()) {
            return p.Error(ptr + "/dataset_args/" + std::to_string(i),
                           fmt::format("'dataset_args' items must be strings, found {}", a[i].dump()));
          }
          if (a[i].get<std::string>() == "--out") {
            return p.Error(ptr + "/dataset_args/" + std::to_string(i), "'--out' is chosen by validate (OUT/probe-data)");
          }
          spec.cpu_probe.dataset_args.push_back(a[i].get<std::string>());
        }
      }
      if (!spec.run.command.empty())
        return p.Error(ptr, "the CPU probe replays the bench dataset: not with run.command");
      spec.cpu_probe.enabled = true;
    }
  }
  if (spec.mode == "suite") {
    if (spec.calibrate_from.empty()) spec.calibrate_from = spec.cases[0].name;
    if (spec.calibrate_alternate.empty()) {
      if (spec.cases.size() < 2)
        return p.Error("/cases", "a suite needs at least two cases (one calibrates the other)");
      spec.calibrate_alternate = spec.cases[spec.cases[0].name == spec.calibrate_from ? 1 : 0].name;
    }
  }
  for (const auto* key : {"from", "alternate"}) {
    const std::string& n = std::string(key) == "from" ? spec.calibrate_from : spec.calibrate_alternate;
    if (!names.count(n))
      return p.Error(std::string("/calibration/") + key, fmt::format("calibration '{}' names no case: \"{}\"", key, n));
  }
  if (spec.calibrate_from == spec.calibrate_alternate) {
    return p.Error("/calibration/alternate",
                   "calibration 'alternate' must differ from 'from' (a case is never predicted from itself)");
  }
  if (j.contains("bootstrap")) {
    const auto& b = j["bootstrap"];
    SIMREPLAY_RETURN_IF_ERROR(p.Keys(b, "/bootstrap", {"resamples", "seed", "confidence"}));
    SIMREPLAY_RETURN_IF_ERROR(p.IntAs(b, "/bootstrap", "resamples", &spec.bootstrap.resamples, false, 100, 1000000));
    int64_t seed = static_cast<int64_t>(spec.bootstrap.seed);
    SIMREPLAY_RETURN_IF_ERROR(p.IntAs(b, "/bootstrap", "seed", &seed, false, 0, INT64_MAX));
    spec.bootstrap.seed = static_cast<uint64_t>(seed);
    SIMREPLAY_RETURN_IF_ERROR(p.Number(b, "/bootstrap", "confidence", &spec.bootstrap.confidence, false, 0.5, 0.999));
  }
  if (j.contains("thresholds")) {
    const auto& t = j["thresholds"];
    SIMREPLAY_RETURN_IF_ERROR(p.Keys(t, "/thresholds",
                                          {"median_train_throughput_error_pct", "max_gpu_idle_error_pp",
                                           "max_case_train_throughput_error_pct", "beat_persistence_by_pp"}));
    spec.thresholds.enabled = true;
    SIMREPLAY_RETURN_IF_ERROR(p.Number(t, "/thresholds", "median_train_throughput_error_pct", &spec.thresholds.median_train_throughput_error_pct, false, 0, 1000));
    SIMREPLAY_RETURN_IF_ERROR(
        p.Number(t, "/thresholds", "max_gpu_idle_error_pp", &spec.thresholds.max_gpu_idle_error_pp, false, 0, 100));
    SIMREPLAY_RETURN_IF_ERROR(p.Number(t, "/thresholds", "max_case_train_throughput_error_pct", &spec.thresholds.max_case_train_throughput_error_pct, false, 0, 1000));
    SIMREPLAY_RETURN_IF_ERROR(
        p.Number(t, "/thresholds", "beat_persistence_by_pp", &spec.thresholds.beat_persistence_by_pp, false, 0, 1000));
  }
  if (j.contains("criteria")) {
    const auto& c = j["criteria"];
    SIMREPLAY_RETURN_IF_ERROR(p.Keys(c, "/criteria", {"memory_headroom_bytes", "rollback_gpu_idle_margin_pp"}));
    SIMREPLAY_RETURN_IF_ERROR(
        p.Number(c, "/criteria", "memory_headroom_bytes", &spec.criteria.memory_headroom_bytes, false, 0, 1e15));
    SIMREPLAY_RETURN_IF_ERROR(
        p.Number(c, "/criteria", "rollback_gpu_idle_margin_pp", &spec.criteria.rollback_gpu_idle_margin_pp, false, 0, 100));
  }
  return spec;
}

Result<ExperimentSpec> LoadExperimentSpec(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open experiment spec");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParseExperimentSpec(buffer.str(), path);
}

const std::string& PredictedFrom(const ExperimentSpec& spec, const std::string& case_name) {
  return case_name == spec.calibrate_from ? spec.calibrate_alternate : spec.calibrate_from;
}

const ExperimentCase* FindCase(const ExperimentSpec& spec, const std::string& name) {
  for (const auto& c : spec.cases) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace simreplay::validation
