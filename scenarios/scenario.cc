#include "scenarios/scenario.h"

#include <set>

#include "common/json_fields.h"

namespace simreplay::scenarios {

namespace {

using Sign = JsonFields::Sign;

const std::set<std::string> kTopKeys = {"model",  "trace", "data",  "loader",  "hardware", "train",
                                        "replay", "seed",  "sweep", "outputs", "name",     "description"};

Status CheckKnownKeys(const nlohmann::json& object, const std::set<std::string>& known, const JsonFields& f) {
  for (const auto& [key, value] : object.items()) {
    if (!known.count(key)) return f.Error("unknown key '" + key + "'");
  }
  return Status::Ok();
}

Status GetIntIn(const JsonFields& f, const char* key, int* out, int64_t lo, int64_t hi) {
  int64_t v = *out;
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt(key, &v, Sign::kAny));
  if (v < lo || v > hi) {
    return f.Error(std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                   "], found " + std::to_string(v));
  }
  *out = static_cast<int>(v);
  return Status::Ok();
}

Status ParseLoader(const nlohmann::json& j, const std::string& where, LoaderConfig* c) {
  JsonFields f(j, where + ": loader");
  SIMREPLAY_RETURN_IF_ERROR(CheckKnownKeys(
      j, {"num_workers", "batch_size", "prefetch_factor", "pin_memory", "persistent_workers", "drop_last", "shuffle"},
      f));
  SIMREPLAY_RETURN_IF_ERROR(GetIntIn(f, "num_workers", &c->num_workers, 0, 4096));
  SIMREPLAY_RETURN_IF_ERROR(GetIntIn(f, "batch_size", &c->batch_size, 1, 1 << 20));
  SIMREPLAY_RETURN_IF_ERROR(GetIntIn(f, "prefetch_factor", &c->prefetch_factor, 1, 4096));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalBool("pin_memory", &c->pin_memory));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalBool("persistent_workers", &c->persistent_workers));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalBool("drop_last", &c->drop_last));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalBool("shuffle", &c->shuffle));
  if (c->persistent_workers && c->num_workers == 0) {
    return f.Error("persistent_workers requires num_workers > 0 (as in PyTorch)");
  }
  return Status::Ok();
}

Status ParseTrain(const nlohmann::json& j, const std::string& where, TrainConfig* c) {
  JsonFields f(j, where + ": train");
  SIMREPLAY_RETURN_IF_ERROR(CheckKnownKeys(j, {"steps", "epochs", "step_time_s", "grad_accum", "dataset_samples"}, f));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("steps", &c->steps));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("epochs", &c->epochs));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalDouble("step_time_s", &c->step_time_s));
  SIMREPLAY_RETURN_IF_ERROR(GetIntIn(f, "grad_accum", &c->grad_accum, 1, 1 << 16));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("dataset_samples", &c->dataset_samples));
  if (c->steps > 0 && c->epochs > 0) return f.Error("give 'steps' or 'epochs', not both");
  if (c->steps == 0 && c->epochs == 0) return f.Error("give 'steps' or 'epochs' (> 0)");
  if (c->steps > 100'000'000 || c->epochs > 100'000) return f.Error("'steps' or 'epochs' too large to simulate");
  if (c->step_time_s > 1e6) return f.Error("'step_time_s' too large");
  return Status::Ok();
}

// Sets a dotted path ("loader.num_workers") inside a JSON object, creating objects on the way.
Status SetDotted(nlohmann::json* root, const std::string& dotted, const nlohmann::json& value, const JsonFields& f) {
  nlohmann::json* node = root;
  size_t start = 0;
  while (true) {
    size_t dot = dotted.find('.', start);
    std::string key = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (key.empty()) return f.Error("sweep axis '" + dotted + "' is not a dotted path");
    if (dot == std::string::npos) {
      (*node)[key] = value;
      return Status::Ok();
    }
    if (!node->contains(key)) (*node)[key] = nlohmann::json::object();
    node = &(*node)[key];
    if (!node->is_object()) return f.Error("sweep axis '" + dotted + "' goes through a non-object");
    start = dot + 1;
  }
}

}  // namespace

Result<nlohmann::json> LoadScenarioJson(const std::string& path) {
  auto json = ReadJsonFile(path);
  if (!json.ok()) return json.status();
  if (!json->is_object()) return Status::InvalidArgument(path + ":1: a scenario must be a JSON object");
  return json;
}

Result<Scenario> ParseScenario(const nlohmann::json& json, const std::string& where, const std::string& base_dir) {
  Scenario s;
  s.path = where;
  JsonFields f(json, where);
  SIMREPLAY_RETURN_IF_ERROR(CheckKnownKeys(json, kTopKeys, f));
  std::string model, trace;
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalString("model", &model));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalString("trace", &trace));
  if (model.empty() && trace.empty()) return f.Error("needs \"model\" or \"trace\" (or both)");
  s.model_path = ResolvePath(base_dir, model);
  s.trace_path = ResolvePath(base_dir, trace);
  for (const char* section : {"data", "loader", "hardware", "train", "replay", "outputs"}) {
    if (json.contains(section) && !json[section].is_object()) {
      return f.Error(std::string("'") + section + "' must be an object");
    }
  }
  if (json.contains("loader")) SIMREPLAY_RETURN_IF_ERROR(ParseLoader(json["loader"], where, &s.loader));
  if (!json.contains("train")) return f.Error("missing required section 'train'");
  SIMREPLAY_RETURN_IF_ERROR(ParseTrain(json["train"], where, &s.train));
  if (json.contains("hardware")) {
    JsonFields h(json["hardware"], where + ": hardware");
    SIMREPLAY_RETURN_IF_ERROR(CheckKnownKeys(json["hardware"], {"cpu_cores", "gpus", "background_threads"}, h));
    SIMREPLAY_RETURN_IF_ERROR(GetIntIn(h, "cpu_cores", &s.hardware.cpu_cores, 0, 4096));
    SIMREPLAY_RETURN_IF_ERROR(GetIntIn(h, "gpus", &s.hardware.gpus, 1, 64));
    SIMREPLAY_RETURN_IF_ERROR(h.GetOptionalDouble("background_threads", &s.hardware.background_threads));
    if (s.hardware.background_threads > 4096) return h.Error("'background_threads' too large");
  }
  if (json.contains("data")) {
    JsonFields d(json["data"], where + ": data");
    SIMREPLAY_RETURN_IF_ERROR(CheckKnownKeys(json["data"], {"format"}, d));
    SIMREPLAY_RETURN_IF_ERROR(d.GetOptionalString("format", &s.data_format));
  }
  if (json.contains("replay")) {
    JsonFields r(json["replay"], where + ": replay");
    SIMREPLAY_RETURN_IF_ERROR(CheckKnownKeys(json["replay"], {"order", "fidelity"}, r));
    SIMREPLAY_RETURN_IF_ERROR(r.GetOptionalString("fidelity", &s.replay_fidelity));
    if (s.replay_fidelity != "sample" && s.replay_fidelity != "batch") {
      return r.Error("'fidelity' must be \"sample\" or \"batch\", found \"" + s.replay_fidelity + "\"");
    }
    SIMREPLAY_RETURN_IF_ERROR(r.GetOptionalString("order", &s.replay_order));
    if (s.replay_order != "recorded" && s.replay_order != "shuffled") {
      return r.Error("'order' must be \"recorded\" or \"shuffled\", found \"" + s.replay_order + "\"");
    }
  }
  if (json.contains("outputs")) {
    JsonFields o(json["outputs"], where + ": outputs");
    SIMREPLAY_RETURN_IF_ERROR(CheckKnownKeys(json["outputs"], {"timeline_max_events"}, o));
    SIMREPLAY_RETURN_IF_ERROR(o.GetOptionalInt("timeline_max_events", &s.timeline_max_events));
  }
  int64_t seed = 0;
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("seed", &seed));
  s.seed = static_cast<uint64_t>(seed);
  s.resolved = json;
  s.resolved.erase("sweep");
  return s;
}

Result<std::vector<SweepPoint>> ExpandSweep(const nlohmann::json& json, const std::string& where,
                                            const std::string& base_dir) {
  JsonFields f(json, where);
  std::vector<std::pair<std::string, std::vector<nlohmann::json>>> axes;
  if (json.contains("sweep")) {
    const auto& sweep = json["sweep"];
    if (!sweep.is_object()) return f.Error("'sweep' must be an object of \"dotted.path\": [values]");
    // nlohmann's object keeps keys sorted, which fixes a deterministic axis order.
    for (const auto& [axis, values] : sweep.items()) {
      if (!values.is_array() || values.empty()) return f.Error("sweep axis '" + axis + "' must be a non-empty array");
      axes.emplace_back(axis, std::vector<nlohmann::json>(values.begin(), values.end()));
    }
  }
  size_t total = 1;
  for (const auto& axis : axes) {
    total *= axis.second.size();
    if (total > 100000) return f.Error("sweep has more than 100000 points");
  }
  std::vector<SweepPoint> points;
  for (size_t i = 0; i < total; ++i) {
    nlohmann::json point_json = json;
    point_json.erase("sweep");
    SweepPoint point;
    size_t rest = i;
    std::vector<size_t> index(axes.size());
    for (size_t a = axes.size(); a-- > 0;) {
      index[a] = rest % axes[a].second.size();
      rest /= axes[a].second.size();
    }
    for (size_t a = 0; a < axes.size(); ++a) {
      const auto& value = axes[a].second[index[a]];
      SIMREPLAY_RETURN_IF_ERROR(SetDotted(&point_json, axes[a].first, value, f));
      point.axes.emplace_back(axes[a].first, value);
    }
    auto scenario = ParseScenario(point_json, where, base_dir);
    if (!scenario.ok()) {
      std::string label;
      for (const auto& [k, v] : point.axes) label += (label.empty() ? "" : ", ") + k + "=" + v.dump();
      return Status::InvalidArgument(scenario.status().message() +
                                     (label.empty() ? "" : " (sweep point " + label + ")"));
    }
    point.scenario = std::move(*scenario);
    points.push_back(std::move(point));
  }
  return points;
}

}  // namespace simreplay::scenarios
