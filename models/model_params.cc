#include "models/model_params.h"

#include <cmath>
#include <functional>
#include <vector>

#include "common/json_fields.h"
#include "models/collective_model.h"

namespace simreplay::models {

double ModelParams::CollectiveTimeS(int ranks) const {
  if (ranks <= 1) return 0.0;
  if (collective.time_per_step_s > 0) return collective.time_per_step_s;
  if (collective.gradient_bytes <= 0) return 0.0;
  return RingAllReduceS(ranks, collective.gradient_bytes, collective.bus_bytes_per_s, collective.alpha_s);
}

namespace {

// The values a numeric parameter may take: any finite number, >= 0 (CPU seconds, network rates), > 0.
enum class Bound { kAny, kNonNegative, kPositive, kFraction };

// The table of numeric parameters: name in the file, pointer into the model, and its bound.
struct NumericParam {
  const char* section;
  const char* name;
  std::function<double&(ModelParams&)> ref;
  Bound bound;
};

const std::vector<NumericParam>& NumericParams() {
  static const std::vector<NumericParam> table = {
      {"cpu", "core_speed_scale", [](ModelParams& m) -> double& { return m.cpu.core_speed_scale; }, Bound::kPositive},
      {"cpu", "worker_cost_scale", [](ModelParams& m) -> double& { return m.cpu.worker_cost_scale; }, Bound::kPositive},
      {"cpu", "worker_overhead_factor", [](ModelParams& m) -> double& { return m.cpu.worker_overhead_factor; },
       Bound::kPositive},
      {"cpu", "worker_overhead_per_sample_s",
       [](ModelParams& m) -> double& { return m.cpu.worker_overhead_per_sample_s; }, Bound::kAny},
      {"cpu", "worker_send_s_per_byte", [](ModelParams& m) -> double& { return m.cpu.worker_send_s_per_byte; },
       Bound::kNonNegative},
      {"cpu", "main_per_batch_s", [](ModelParams& m) -> double& { return m.cpu.main_per_batch_s; }, Bound::kAny},
      {"cpu", "pin_bytes_per_s", [](ModelParams& m) -> double& { return m.cpu.pin_bytes_per_s; }, Bound::kPositive},
      {"cpu", "worker_startup_s", [](ModelParams& m) -> double& { return m.cpu.worker_startup_s; }, Bound::kAny},
      {"cpu", "worker_spawn_s", [](ModelParams& m) -> double& { return m.cpu.worker_spawn_s; }, Bound::kAny},
      {"cpu", "worker_resume_s", [](ModelParams& m) -> double& { return m.cpu.worker_resume_s; }, Bound::kAny},
      {"cpu", "worker_shutdown_s", [](ModelParams& m) -> double& { return m.cpu.worker_shutdown_s; }, Bound::kAny},
      {"cpu", "worker_warmup_cpu_s", [](ModelParams& m) -> double& { return m.cpu.worker_warmup_cpu_s; }, Bound::kAny},
      {"cpu", "worker_warmup_samples", [](ModelParams& m) -> double& { return m.cpu.worker_warmup_samples; },
       Bound::kNonNegative},
      {"cpu", "worker_warmup_first_share",
       [](ModelParams& m) -> double& { return m.cpu.worker_warmup_first_share; }, Bound::kFraction},
      {"cpu", "recorded_warmup_samples", [](ModelParams& m) -> double& { return m.cpu.recorded_warmup_samples; },
       Bound::kNonNegative},
      {"cpu", "collate_per_sample_s", [](ModelParams& m) -> double& { return m.cpu.collate_per_sample_s; },
       Bound::kAny},
      {"cpu", "background_threads", [](ModelParams& m) -> double& { return m.cpu.background_threads; }, Bound::kAny},
      {"cpu", "busy_core_slowdown", [](ModelParams& m) -> double& { return m.cpu.busy_core_slowdown; }, Bound::kAny},
      {"cpu", "oversubscription_overhead", [](ModelParams& m) -> double& { return m.cpu.oversubscription_overhead; },
       Bound::kAny},
      {"cpu", "wakeup_delay_s", [](ModelParams& m) -> double& { return m.cpu.wakeup_delay_s; }, Bound::kAny},
      {"cpu", "wakeup_delay_per_excess_s", [](ModelParams& m) -> double& { return m.cpu.wakeup_delay_per_excess_s; },
       Bound::kAny},
      {"cpu", "page_fault_cpu_share", [](ModelParams& m) -> double& { return m.cpu.page_fault_cpu_share; },
       Bound::kAny},
      {"cpu", "inline_page_fault_ratio", [](ModelParams& m) -> double& { return m.cpu.inline_page_fault_ratio; },
       Bound::kAny},
      {"storage", "bandwidth_bytes_per_s", [](ModelParams& m) -> double& { return m.storage.bandwidth_bytes_per_s; },
       Bound::kPositive},
      {"storage", "latency_s", [](ModelParams& m) -> double& { return m.storage.latency_s; }, Bound::kAny},
      {"storage", "page_cache_hit_ratio", [](ModelParams& m) -> double& { return m.storage.page_cache_hit_ratio; },
       Bound::kAny},
      {"storage", "page_cache_bytes_per_s", [](ModelParams& m) -> double& { return m.storage.page_cache_bytes_per_s; },
       Bound::kPositive},
      {"memory", "main_base_bytes", [](ModelParams& m) -> double& { return m.memory.main_base_bytes; }, Bound::kAny},
      {"memory", "worker_base_pss_bytes", [](ModelParams& m) -> double& { return m.memory.worker_base_pss_bytes; },
       Bound::kAny},
      {"memory", "batch_bytes_scale", [](ModelParams& m) -> double& { return m.memory.batch_bytes_scale; },
       Bound::kAny},
      {"memory", "capacity_bytes", [](ModelParams& m) -> double& { return m.memory.capacity_bytes; }, Bound::kAny},
      {"pcie", "h2d_pinned_bytes_per_s", [](ModelParams& m) -> double& { return m.pcie.h2d_pinned_bytes_per_s; },
       Bound::kPositive},
      {"pcie", "h2d_pageable_bytes_per_s", [](ModelParams& m) -> double& { return m.pcie.h2d_pageable_bytes_per_s; },
       Bound::kPositive},
      {"pcie", "latency_s", [](ModelParams& m) -> double& { return m.pcie.latency_s; }, Bound::kAny},
      {"gpu", "step_time_s", [](ModelParams& m) -> double& { return m.gpu.step_time_s; }, Bound::kAny},
      {"gpu", "step_cv", [](ModelParams& m) -> double& { return m.gpu.step_cv; }, Bound::kAny},
      {"gpu", "step_intercept_s", [](ModelParams& m) -> double& { return m.gpu.step_intercept_s; }, Bound::kAny},
      {"gpu", "step_per_sample_s", [](ModelParams& m) -> double& { return m.gpu.step_per_sample_s; }, Bound::kAny},
      {"gpu", "step_host_cpu_s", [](ModelParams& m) -> double& { return m.gpu.step_host_cpu_s; }, Bound::kNonNegative},
      {"gpu", "step_host_cpu_after_fork_s", [](ModelParams& m) -> double& { return m.gpu.step_host_cpu_after_fork_s; },
       Bound::kNonNegative},
      {"collective", "time_per_step_s", [](ModelParams& m) -> double& { return m.collective.time_per_step_s; },
       Bound::kAny},
      {"collective", "alpha_s", [](ModelParams& m) -> double& { return m.collective.alpha_s; }, Bound::kAny},
      {"collective", "bus_bytes_per_s", [](ModelParams& m) -> double& { return m.collective.bus_bytes_per_s; },
       Bound::kPositive},
      {"collective", "gradient_bytes", [](ModelParams& m) -> double& { return m.collective.gradient_bytes; },
       Bound::kAny},
      {"collective", "cpu_s_per_bus_byte", [](ModelParams& m) -> double& { return m.collective.cpu_s_per_bus_byte; },
       Bound::kAny},
      {"network", "link_bytes_per_s", [](ModelParams& m) -> double& { return m.network.link_bytes_per_s; },
       Bound::kNonNegative},
      {"network", "link_latency_s", [](ModelParams& m) -> double& { return m.network.link_latency_s; },
       Bound::kNonNegative},
      {"network", "nominal_link_bytes_per_s",
       [](ModelParams& m) -> double& { return m.network.nominal_link_bytes_per_s; }, Bound::kNonNegative},
      {"network", "ranks", [](ModelParams& m) -> double& { return m.network.ranks; }, Bound::kNonNegative},
      {"network", "nodes", [](ModelParams& m) -> double& { return m.network.nodes; }, Bound::kNonNegative},
  };
  return table;
}

const char* kSections[] = {"cpu", "storage", "memory", "pcie", "gpu", "collective", "network"};

// Reads `key` of `section` as a number or {"value",...}; records provenance.
Status ReadParam(const nlohmann::json& section, const std::string& where, const std::string& full_name, const char* key,
                 double* out, ParamInfo* info, bool* present) {
  *present = section.contains(key);
  if (!*present) return Status::Ok();
  const auto& v = section[key];
  if (v.is_object()) {
    JsonFields f(v, where + ": " + full_name);
    SIMREPLAY_RETURN_IF_ERROR(f.GetDouble("value", out));
    info->assumed = false;
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalBool("assumed", &info->assumed));
    info->source = info->assumed ? "assumed" : "measured";
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalString("source", &info->source));
    return Status::Ok();
  }
  JsonFields f(section, where + ": " + std::string(full_name.substr(0, full_name.find('.'))));
  SIMREPLAY_RETURN_IF_ERROR(f.GetDouble(key, out));
  info->assumed = true;
  info->source = "model file";
  return Status::Ok();
}

}  // namespace

Result<ModelParams> ParseModel(const nlohmann::json& json, const std::string& where) {
  if (!json.is_object()) return Status::InvalidArgument(where + ": a model must be a JSON object");
  ModelParams model;
  JsonFields top(json, where);
  std::string schema;
  SIMREPLAY_RETURN_IF_ERROR(top.GetString("schema", &schema));
  if (schema != kModelSchema) {
    return top.Error("wrong schema version: expected \"" + std::string(kModelSchema) + "\", found \"" + schema + "\"");
  }
  for (const char* section : kSections) {
    if (json.contains(section) && !json[section].is_object()) {
      return top.Error(std::string("section '") + section + "' must be an object");
    }
  }
  for (const auto& p : NumericParams()) {
    if (!json.contains(p.section)) continue;
    std::string full = std::string(p.section) + "." + p.name;
    ParamInfo info;
    bool present = false;
    double value = 0;
    SIMREPLAY_RETURN_IF_ERROR(ReadParam(json[p.section], where, full, p.name, &value, &info, &present));
    if (!present) continue;
    if (p.bound == Bound::kPositive && value <= 0) return top.Error(full + " must be > 0");
    if (p.bound == Bound::kNonNegative && value < 0) return top.Error(full + " must be >= 0");
    if (p.bound == Bound::kFraction && (value < 0 || value > 1)) return top.Error(full + " must be in [0, 1]");
    p.ref(model) = value;
    model.info[full] = info;
  }
  if (model.storage.page_cache_hit_ratio > 1) return top.Error("storage.page_cache_hit_ratio must be in [0, 1]");
  if (model.cpu.page_fault_cpu_share > 0.95) return top.Error("cpu.page_fault_cpu_share must be in [0, 0.95]");
  // A ratio far beyond what a probe measures would make inline costs absurd, not merely wrong.
  if (model.cpu.inline_page_fault_ratio > 100) return top.Error("cpu.inline_page_fault_ratio must be in [0, 100]");
  if (json.contains("storage")) {
    JsonFields storage(json["storage"], where + ": storage");
    SIMREPLAY_RETURN_IF_ERROR(storage.GetOptionalString("mode", &model.storage.mode));
    if (model.storage.mode != "recorded" && model.storage.mode != "model") {
      return storage.Error("mode must be \"recorded\" or \"model\", found \"" + model.storage.mode + "\"");
    }
    int64_t concurrency = model.storage.max_concurrency;
    const auto& s = json["storage"];
    if (s.contains("max_concurrency") && s["max_concurrency"].is_object()) {
      JsonFields f(s["max_concurrency"], where + ": storage.max_concurrency");
      SIMREPLAY_RETURN_IF_ERROR(f.GetInt("value", &concurrency));
    } else {
      SIMREPLAY_RETURN_IF_ERROR(storage.GetOptionalInt("max_concurrency", &concurrency));
    }
    if (concurrency < 1 || concurrency > 1 << 20) return storage.Error("max_concurrency must be in [1, 1048576]");
    model.storage.max_concurrency = static_cast<int>(concurrency);
  }
  if (json.contains("gpu")) {
    JsonFields gpu(json["gpu"], where + ": gpu");
    SIMREPLAY_RETURN_IF_ERROR(gpu.GetOptionalString("distribution", &model.gpu.distribution));
    if (model.gpu.distribution != "constant" && model.gpu.distribution != "normal" &&
        model.gpu.distribution != "lognormal") {
      return gpu.Error("distribution must be constant, normal or lognormal, found \"" + model.gpu.distribution + "\"");
    }
    int64_t measured = 0;
    SIMREPLAY_RETURN_IF_ERROR(gpu.GetOptionalInt("measured_batch_size", &measured));
    model.gpu.measured_batch_size = static_cast<int>(measured);
    SIMREPLAY_RETURN_IF_ERROR(gpu.GetOptionalString("accelerator", &model.gpu.accelerator));
  }
  SIMREPLAY_RETURN_IF_ERROR(top.GetOptionalString("trace", &model.trace_path));
  if (json.contains("warmup_steady_cpu_s_per_unit")) {
    const auto& steady = json["warmup_steady_cpu_s_per_unit"];
    if (!steady.is_object()) return top.Error("warmup_steady_cpu_s_per_unit must be an object");
    for (const auto& [format, cost] : steady.items()) {
      if (!cost.is_number() || !std::isfinite(cost.get<double>()) || cost.get<double>() < 0)
        return top.Error("warmup_steady_cpu_s_per_unit." + format + " must be a number >= 0");
      model.warmup_steady_cpu_s_per_unit[format] = cost.get<double>();
    }
  }
  for (const char* keep : {"fit_quality", "provenance", "formats", "warnings", "measured_range", "self_check"}) {
    if (json.contains(keep)) model.extra[keep] = json[keep];
  }
  return model;
}

Result<ModelParams> LoadModelFile(const std::string& path) {
  auto json = ReadJsonFile(path);
  if (!json.ok()) return json.status();
  return ParseModel(*json, path);
}

nlohmann::json ModelToJson(const ModelParams& model) {
  nlohmann::json out = nlohmann::json::object();
  out["schema"] = kModelSchema;
  ModelParams copy = model;
  for (const auto& p : NumericParams()) {
    std::string full = std::string(p.section) + "." + p.name;
    auto it = model.info.find(full);
    ParamInfo info = it == model.info.end() ? ParamInfo{} : it->second;
    out[p.section][p.name] = {{"value", p.ref(copy)}, {"assumed", info.assumed}, {"source", info.source}};
  }
  out["storage"]["mode"] = model.storage.mode;
  out["storage"]["max_concurrency"] = model.storage.max_concurrency;
  out["gpu"]["distribution"] = model.gpu.distribution;
  out["gpu"]["measured_batch_size"] = model.gpu.measured_batch_size;
  out["gpu"]["accelerator"] = model.gpu.accelerator;
  if (!model.trace_path.empty()) out["trace"] = model.trace_path;
  if (!model.warmup_steady_cpu_s_per_unit.empty())
    out["warmup_steady_cpu_s_per_unit"] = model.warmup_steady_cpu_s_per_unit;
  for (auto& [key, value] : model.extra.items()) out[key] = value;
  return out;
}

}  // namespace simreplay::models
