#include "calibrate/probe_file.h"

#include <cmath>

#include "common/json_fields.h"

namespace simreplay::calibrate {

namespace {

bool IsObject(const nlohmann::json& j, const char* key) { return j.contains(key) && j[key].is_object(); }

// Reads an optional finite number; null and absent leave *out unset.
Status OptionalNumber(const nlohmann::json& object, const char* key, const std::string& where,
                      std::optional<double>* out) {
  if (!object.contains(key) || object[key].is_null()) return Status::Ok();
  const auto& v = object[key];
  if (!v.is_number()) {
    return Status::InvalidArgument(where + "." + key + ": expected a number, found " + v.type_name());
  }
  *out = v.get<double>();
  return Status::Ok();
}

}  // namespace

Result<ProbeFileFit> ParseProbeDocument(const nlohmann::json& p, const std::string& path) {
  if (!p.is_object() || !p.contains("schema") || p["schema"] != "simreplay.probe/1") {
    return Status::InvalidArgument(path + ":1: not a simreplay.probe/1 document");
  }
  ProbeFileFit out;
  if (p.contains("cache_drop") && p["cache_drop"].is_string()) out.cache_drop = p["cache_drop"].get<std::string>();
  const nlohmann::json fit = IsObject(p, "fit") ? p["fit"] : nlohmann::json::object();
  if (IsObject(fit, "random")) {
    out.pattern = "random";
  } else if (IsObject(fit, "sequential")) {
    out.pattern = "sequential";
  }
  if (!out.pattern.empty()) {
    out.fit = fit[out.pattern];
    const std::string where = path + ": fit." + out.pattern;
    SIMREPLAY_RETURN_IF_ERROR(OptionalNumber(out.fit, "latency_s", where, &out.latency_s));
    if (out.latency_s && *out.latency_s < 0) {
      return Status::InvalidArgument(where + ".latency_s: expected >= 0, found " + out.fit["latency_s"].dump());
    }
    SIMREPLAY_RETURN_IF_ERROR(OptionalNumber(out.fit, "bandwidth_bytes_per_s", where, &out.bandwidth_bytes_per_s));
    if (out.bandwidth_bytes_per_s && !(*out.bandwidth_bytes_per_s > 0)) out.bandwidth_bytes_per_s.reset();
    std::optional<double> concurrency;
    SIMREPLAY_RETURN_IF_ERROR(OptionalNumber(out.fit, "max_useful_concurrency", where, &concurrency));
    if (concurrency) {
      // Compared as a double before any conversion: a huge value must not wrap into range.
      if (!out.fit["max_useful_concurrency"].is_number_integer() || *concurrency < 1 || *concurrency > 64) {
        return Status::InvalidArgument(where + ".max_useful_concurrency: expected an integer in [1, 64], found " +
                                       out.fit["max_useful_concurrency"].dump());
      }
      out.max_useful_concurrency = static_cast<int>(*concurrency);
    }
  }
  if (IsObject(fit, "page_cache")) {
    SIMREPLAY_RETURN_IF_ERROR(OptionalNumber(fit["page_cache"], "bandwidth_bytes_per_s", path + ": fit.page_cache",
                                             &out.page_cache_bytes_per_s));
    if (out.page_cache_bytes_per_s && !(*out.page_cache_bytes_per_s > 0)) out.page_cache_bytes_per_s.reset();
  }
  return out;
}

Result<ProbeFileFit> LoadProbeFile(const std::string& path) {
  auto document = ReadJsonFile(path);
  if (!document.ok()) return document.status();
  return ParseProbeDocument(*document, path);
}

}  // namespace simreplay::calibrate
