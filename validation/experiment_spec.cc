#include "validation/experiment_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "common/json_fields.h"
#include "common/paths.h"
#include "scenarios/scenario.h"
#include "common/json_locator.h"

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

class SpecParser {
 public:
  SpecParser(const std::string& text, std::string path) : locator_(text), path_(std::move(path)) {}

  Status Error(const std::string& pointer, const std::string& message) const {
    return Status::InvalidArgument(fmt::format("{}:{}: {}", path_, locator_.Line(pointer), message));
  }

  Status CheckKeys(const nlohmann::json& object, const std::string& pointer,
                   const std::set<std::string>& allowed) const {
    if (!object.is_object())
      return Error(pointer, fmt::format("'{}' must be an object, found {}", Name(pointer), object.type_name()));
    for (const auto& [key, value] : object.items()) {
      if (!allowed.count(key)) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        return Error(pointer + "/" + key, fmt::format("unknown key '{}' (expected one of: {})", key, list));
      }
    }
    return Status::Ok();
  }

  // Integer in [lo, hi] at object[key] when present.
  template <typename T>
  Status Int(const nlohmann::json& object, const std::string& pointer, const char* key, T lo, T hi, T* out) const {
    if (!object.contains(key)) return Status::Ok();
    const auto& v = object[key];
    std::string p = pointer + "/" + key;
    if (!v.is_number_integer()) return Error(p, fmt::format("'{}' must be an integer, found {}", key, v.dump()));
    int64_t x = v.get<int64_t>();
    if (x < static_cast<int64_t>(lo) || x > static_cast<int64_t>(hi)) {
      return Error(p, fmt::format("'{}' must be in {}..{}, found {}", key, lo, hi, x));
    }
    *out = static_cast<T>(x);
    return Status::Ok();
  }

  Status Double(const nlohmann::json& object, const std::string& pointer, const char* key, double lo, double hi,
                double* out) const {
    if (!object.contains(key)) return Status::Ok();
    const auto& v = object[key];
    std::string p = pointer + "/" + key;
    if (!v.is_number()) return Error(p, fmt::format("'{}' must be a number, found {}", key, v.dump()));
    double x = v.get<double>();
    if (!(x >= lo && x <= hi))
      return Error(p, fmt::format("'{}' must be in [{}, {}], found {}", key, lo, hi, v.dump()));
    *out = x;
    return Status::Ok();
  }

  Status Bool(const nlohmann::json& object, const std::string& pointer, const char* key, bool* out) const {
    if (!object.contains(key)) return Status::Ok();
    const auto& v = object[key];
    if (!v.is_boolean())
      return Error(pointer + "/" + key, fmt::format("'{}' must be true or false, found {}", key, v.dump()));
    *out = v.get<bool>();
    return Status::Ok();
  }

  Status String(const nlohmann::json& object, const std::string& pointer, const char* key, std::string* out) const {
    if (!object.contains(key)) return Status::Ok();
    const auto& v = object[key];
    if (!v.is_string())
      return Error(pointer + "/" + key, fmt::format("'{}' must be a string, found {}", key, v.dump()));
    *out = v.get<std::string>();
    return Status::Ok();
  }

  Status Config(const nlohmann::json& object, const std::string& pointer, BenchConfig* c) const {
    std::set<std::string> allowed(FactorNames().begin(), FactorNames().end());
    SIMREPLAY_RETURN_IF_ERROR(CheckKeys(object, pointer, allowed));
    SIMREPLAY_RETURN_IF_ERROR(Int(object, pointer, "num_workers", 0, 256, &c->num_workers));
    SIMREPLAY_RETURN_IF_ERROR(Int(object, pointer, "batch_size", 1, 65536, &c->batch_size));
    SIMREPLAY_RETURN_IF_ERROR(Int(object, pointer, "prefetch_factor", 1, 1024, &c->prefetch_factor));
    SIMREPLAY_RETURN_IF_ERROR(Bool(object, pointer, "pin_memory", &c->pin_memory));
    SIMREPLAY_RETURN_IF_ERROR(Bool(object, pointer, "persistent_workers", &c->persistent_workers));
    SIMREPLAY_RETURN_IF_ERROR(String(object, pointer, "format", &c->format));
    static const std::set<std::string> kFormats = {"files", "tar", "lmdb", "hdf5"};
    if (!kFormats.count(c->format)) {
      return Error(pointer + "/format",
                   fmt::format("'format' must be files, tar, lmdb or hdf5, found \"{}\"", c->format));
    }
    if (c->persistent_workers && c->num_workers == 0) {
      return Error(pointer, "persistent_workers requires num_workers > 0");
    }
    return Status::Ok();
  }

  static std::string Name(const std::string& pointer) {
    auto slash = pointer.rfind('/');
    return slash == std::string::npos ? pointer : pointer.substr(slash + 1);
  }

 private:
  JsonLocator locator_;
  std::string path_;
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
      p.CheckKeys(j, "",
                  {"schema", "name", "description", "mode", "dataset", "run", "repetitions", "warmup_runs",
                   "pipeline_only_runs", "base", "cases", "calibration", "bootstrap", "thresholds", "criteria"}));
  if (!j.contains("schema") || j["schema"] != kExperimentSchema) {
    return p.Error("/schema", fmt::format("'schema' must be \"{}\", found {}", kExperimentSchema,
                                          j.contains("schema") ? j["schema"].dump() : "nothing"));
  }
  SIMREPLAY_RETURN_IF_ERROR(p.String(j, "", "name", &spec.name));
  SIMREPLAY_RETURN_IF_ERROR(p.String(j, "", "description", &spec.description));
  SIMREPLAY_RETURN_IF_ERROR(p.String(j, "", "mode", &spec.mode));
  if (spec.mode != "ab" && spec.mode != "suite") {
    return p.Error("/mode", fmt::format("'mode' must be \"ab\" or \"suite\", found \"{}\"", spec.mode));
  }
  std::string dataset;
  SIMREPLAY_RETURN_IF_ERROR(p.String(j, "", "dataset", &dataset));
  if (!dataset.empty()) {
    spec.dataset_dir = ResolveBesideFile(path, dataset);
  }

  if (j.contains("run")) {
    const auto& r = j["run"];
    SIMREPLAY_RETURN_IF_ERROR(p.CheckKeys(
        r, "/run", {"steps", "warmup_steps", "step_time_s", "image_size", "frames", "seed", "timeout_s", "command"}));
    SIMREPLAY_RETURN_IF_ERROR(p.Int(r, "/run", "steps", 1, 1000000, &spec.run.steps));
    SIMREPLAY_RETURN_IF_ERROR(p.Int(r, "/run", "warmup_steps", 0, 1000000, &spec.run.warmup_steps));
    SIMREPLAY_RETURN_IF_ERROR(p.Double(r, "/run", "step_time_s", 0, 3600, &spec.run.step_time_s));
    SIMREPLAY_RETURN_IF_ERROR(p.Int(r, "/run", "image_size", 8, 4096, &spec.run.image_size));
    SIMREPLAY_RETURN_IF_ERROR(p.Int(r, "/run", "frames", 1, 1024, &spec.run.frames));
    SIMREPLAY_RETURN_IF_ERROR(p.Int<int64_t>(r, "/run", "seed", 0, INT64_MAX, &spec.run.seed));
    SIMREPLAY_RETURN_IF_ERROR(p.Double(r, "/run", "timeout_s", 1, 86400, &spec.run.timeout_s));
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
  SIMREPLAY_RETURN_IF_ERROR(p.Int(j, "", "repetitions", 1, 1000, &spec.repetitions));
  SIMREPLAY_RETURN_IF_ERROR(p.Int(j, "", "warmup_runs", 0, 100, &spec.warmup_runs));
  SIMREPLAY_RETURN_IF_ERROR(p.Bool(j, "", "pipeline_only_runs", &spec.pipeline_only_runs));
  if (j.contains("base")) SIMREPLAY_RETURN_IF_ERROR(p.Config(j["base"], "/base", &spec.base));

  if (!j.contains("cases") || !j["cases"].is_array() || j["cases"].empty()) {
    return p.Error("/cases", "'cases' must be a non-empty array of {\"name\", \"set\"} objects");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < j["cases"].size(); ++i) {
    const auto& c = j["cases"][i];
    std::string ptr = "/cases/" + std::to_string(i);
    SIMREPLAY_RETURN_IF_ERROR(p.CheckKeys(c, ptr, {"name", "set", "note"}));
    ExperimentCase ec;
    SIMREPLAY_RETURN_IF_ERROR(p.String(c, ptr, "name", &ec.name));
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
    SIMREPLAY_RETURN_IF_ERROR(p.CheckKeys(c, "/calibration", {"from", "alternate", "cpu_probe"}));
    SIMREPLAY_RETURN_IF_ERROR(p.String(c, "/calibration", "from", &spec.calibrate_from));
    SIMREPLAY_RETURN_IF_ERROR(p.String(c, "/calibration", "alternate", &spec.calibrate_alternate));
    if (c.contains("cpu_probe")) {
      const auto& cp = c["cpu_probe"];
      const std::string ptr = "/calibration/cpu_probe";
      SIMREPLAY_RETURN_IF_ERROR(
          p.CheckKeys(cp, ptr, {"seconds_per_point", "rounds", "max_total_s", "max_workers", "dataset_args"}));
      SIMREPLAY_RETURN_IF_ERROR(p.Double(cp, ptr, "seconds_per_point", 0.1, 60, &spec.cpu_probe.seconds_per_point));
      SIMREPLAY_RETURN_IF_ERROR(p.Int(cp, ptr, "rounds", 1, 20, &spec.cpu_probe.rounds));
      SIMREPLAY_RETURN_IF_ERROR(p.Double(cp, ptr, "max_total_s", 1, 3600, &spec.cpu_probe.max_total_s));
      SIMREPLAY_RETURN_IF_ERROR(p.Int(cp, ptr, "max_workers", 0, 256, &spec.cpu_probe.max_workers));
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
    SIMREPLAY_RETURN_IF_ERROR(p.CheckKeys(b, "/bootstrap", {"resamples", "seed", "confidence"}));
    SIMREPLAY_RETURN_IF_ERROR(p.Int(b, "/bootstrap", "resamples", 100, 1000000, &spec.bootstrap.resamples));
    int64_t seed = static_cast<int64_t>(spec.bootstrap.seed);
    SIMREPLAY_RETURN_IF_ERROR(p.Int<int64_t>(b, "/bootstrap", "seed", 0, INT64_MAX, &seed));
    spec.bootstrap.seed = static_cast<uint64_t>(seed);
    SIMREPLAY_RETURN_IF_ERROR(p.Double(b, "/bootstrap", "confidence", 0.5, 0.999, &spec.bootstrap.confidence));
  }
  if (j.contains("thresholds")) {
    const auto& t = j["thresholds"];
    SIMREPLAY_RETURN_IF_ERROR(p.CheckKeys(t, "/thresholds",
                                          {"median_train_throughput_error_pct", "max_gpu_idle_error_pp",
                                           "max_case_train_throughput_error_pct", "beat_persistence_by_pp"}));
    spec.thresholds.enabled = true;
    SIMREPLAY_RETURN_IF_ERROR(p.Double(t, "/thresholds", "median_train_throughput_error_pct", 0, 1000,
                                       &spec.thresholds.median_train_throughput_error_pct));
    SIMREPLAY_RETURN_IF_ERROR(
        p.Double(t, "/thresholds", "max_gpu_idle_error_pp", 0, 100, &spec.thresholds.max_gpu_idle_error_pp));
    SIMREPLAY_RETURN_IF_ERROR(p.Double(t, "/thresholds", "max_case_train_throughput_error_pct", 0, 1000,
                                       &spec.thresholds.max_case_train_throughput_error_pct));
    SIMREPLAY_RETURN_IF_ERROR(
        p.Double(t, "/thresholds", "beat_persistence_by_pp", 0, 1000, &spec.thresholds.beat_persistence_by_pp));
  }
  if (j.contains("criteria")) {
    const auto& c = j["criteria"];
    SIMREPLAY_RETURN_IF_ERROR(p.CheckKeys(c, "/criteria", {"memory_headroom_bytes", "rollback_gpu_idle_margin_pp"}));
    SIMREPLAY_RETURN_IF_ERROR(
        p.Double(c, "/criteria", "memory_headroom_bytes", 0, 1e15, &spec.criteria.memory_headroom_bytes));
    SIMREPLAY_RETURN_IF_ERROR(
        p.Double(c, "/criteria", "rollback_gpu_idle_margin_pp", 0, 100, &spec.criteria.rollback_gpu_idle_margin_pp));
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
