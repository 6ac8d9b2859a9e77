#include "calibrate/stages.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "calibrate/format_model.h"
#include "replay/manifest.h"

namespace simreplay::calibrate {

using replay::ManifestDouble;

namespace {

// Storage latency, bandwidth and useful concurrency from the probe's fit; true when the probe gave a
// bandwidth (then trace reads do not override it).
bool ApplyProbe(const ProbeDocument& probe, CalibrationDraft* d, nlohmann::json* storage_q) {
  models::ModelParams& model = d->model;
  bool from_probe = false;
  // A shuffled map-style loader reads at random; prefer the random fit.
  const char* pattern = probe.random ? "random" : "sequential";
  const std::optional<ProbeFitRecord>& f = probe.random ? probe.random : probe.sequential;
  if (f) {
    const std::string src = std::string("probe ") + probe.file + " fit." + pattern;
    model.storage.latency_s = f->latency_s;
    SetProvenance(&model, "storage.latency_s", false, src);
    if (f->bandwidth_bytes_per_s && *f->bandwidth_bytes_per_s > 0) {
      model.storage.bandwidth_bytes_per_s = *f->bandwidth_bytes_per_s;
      SetProvenance(&model, "storage.bandwidth_bytes_per_s", false, src);
      from_probe = true;
    }
    if (f->max_useful_concurrency) model.storage.max_concurrency = std::max(1, *f->max_useful_concurrency);
    (*storage_q)["probe"] = {
        {"path", probe.file}, {"pattern", pattern}, {"fit", f->ToJson()}, {"cache_drop", probe.cache_drop}};
  } else {
    d->warnings.push_back(probe.file + ": the probe has no usable fit: storage from trace reads or defaults");
  }
  if (probe.page_cache && probe.page_cache->bandwidth_bytes_per_s && *probe.page_cache->bandwidth_bytes_per_s > 0) {
    model.storage.page_cache_bytes_per_s = *probe.page_cache->bandwidth_bytes_per_s;
    SetProvenance(&model, "storage.page_cache_bytes_per_s", false, "probe " + probe.file + " fit.page_cache");
  }
  return from_probe;
}

}  // namespace

Status FitStorage(const CalibrationInput& in, CalibrationDraft* d) {
  const std::vector<TraceData>& traces = in.traces;
  const TraceData& primary = in.primary();
  const std::string primary_src = "trace " + primary.path;
  models::ModelParams& model = d->model;
  std::vector<std::string>& warnings = d->warnings;
  nlohmann::json storage_q = nlohmann::json::object();
  models::FormatParams& formats = d->formats;
  formats = models::CatalogueFormats();
  formats.captured = ContainerOfManifest(primary.manifest);
  bool from_probe = false;
  if (in.probe) from_probe = ApplyProbe(*in.probe, d, &storage_q);
  // Trace read times, per container format; the primary's container refines the storage model.
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> reads;
  std::map<std::string, std::string> first_trace;
  for (const auto& t : traces) {
    const std::string c = ContainerOfManifest(t.manifest);
    first_trace.emplace(c, t.path);
    for (const auto& s : t.samples) {
      if (s.unsplit || s.read_bytes <= 0) continue;
      reads[c].first.push_back(static_cast<double>(s.read_bytes));
      reads[c].second.push_back(s.read_ns * kNs);
    }
  }
  nlohmann::json trace_reads = nlohmann::json::object();
  for (auto& [container, xy] : reads) {
    auto fit = FitContainerReads(xy.first, xy.second, container, first_trace[container], &formats);
    if (!fit.ok()) {
      warnings.push_back(fit.status().message());
      continue;
    }
    trace_reads[container] = fit->ToJson();
    if (container == formats.captured && !from_probe && fit->used[1] && fit->coefficients[1] > 0) {
      model.storage.latency_s = std::max(0.0, fit->coefficients[0]);
      model.storage.bandwidth_bytes_per_s = 1.0 / fit->coefficients[1];
      SetProvenance(&model, "storage.latency_s", false, "Huber fit of read_ns on read_bytes, " + primary_src);
      SetProvenance(&model, "storage.bandwidth_bytes_per_s", false,
                    "Huber fit of read_ns on read_bytes, " + primary_src);
    }
  }
  storage_q["trace_reads"] = trace_reads;
  formats.reference_bandwidth_bytes_per_s = model.storage.bandwidth_bytes_per_s;
  // Page cache: the share of the dataset that fits in the memory that was free at the start.
  const double dataset_bytes = ManifestDouble(primary.manifest, "data", "bytes", 0);
  const double ram = ManifestDouble(primary.manifest, "hardware", "ram_bytes", 0);
  double used = 0;
  if (!primary.hosts.empty()) {
    used = static_cast<double>(
        std::min_element(primary.hosts.begin(), primary.hosts.end(), [](const auto& a, const auto& b) {
          return a.t_ns < b.t_ns;
        })->mem_used_bytes);
  }
  if (dataset_bytes > 0 && ram > 0) {
    double free_bytes = std::max(0.0, ram - used);
    model.storage.page_cache_hit_ratio = std::clamp(free_bytes / dataset_bytes, 0.0, 1.0);
    SetProvenance(
        &model, "storage.page_cache_hit_ratio", true,
        fmt::format("derived: min(1, free memory {:.3g} B / dataset {:.3g} B) (steady state, after the first epoch)",
                    free_bytes, dataset_bytes));
    storage_q["page_cache"] = {{"dataset_bytes", dataset_bytes}, {"free_bytes", free_bytes}, {"ram_bytes", ram}};
  }
  storage_q["mode"] = model.storage.mode;
  if (!from_probe && reads.count(formats.captured) == 0) {
    warnings.push_back("storage: no probe and no read times: latency and bandwidth are defaults (assumed)");
  }
  d->quality["storage"] = storage_q;
  return Status::Ok();
}

}  // namespace simreplay::calibrate
