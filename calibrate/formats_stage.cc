#include "calibrate/stages.h"

#include <algorithm>
#include <climits>
#include <set>

#include "calibrate/calibrator.h"
#include "calibrate/format_model.h"
#include "replay/manifest.h"

namespace simreplay::calibrate {

using replay::ManifestBool;

using replay::ManifestInt;

Status DescribeFormatsAndRange(const CalibrationInput& in, CalibrationDraft* d) {
  const CalibrateOptions& options = *in.options;
  const std::vector<TraceData>& traces = in.traces;
  models::ModelParams& model = d->model;
  nlohmann::json formats_json = models::FormatParamsToJson(d->formats);
  formats_json["media"] = d->media;
  std::set<std::string> containers_measured, media_measured;
  int min_w = INT32_MAX, max_w = -1, min_c = INT32_MAX, max_c = 0, min_bs = INT32_MAX, max_bs = 0;
  int min_pf = INT32_MAX, max_pf = 0;
  bool any_oversubscribed = false;
  std::set<bool> pin, persistent;
  nlohmann::json prov = nlohmann::json::array();
  for (const auto& t : traces) {
    containers_measured.insert(ContainerOfManifest(t.manifest));
    for (const auto& s : t.samples) media_measured.insert(s.format);
    const int w = ManifestInt(t.manifest, "loader", "num_workers", -1);
    const int c = ManifestInt(t.manifest, "hardware", "cores", 0);
    const int bs = ManifestInt(t.manifest, "loader", "batch_size", 0);
    const int pf = ManifestInt(t.manifest, "loader", "prefetch_factor", 2);
    if (w >= 0) min_w = std::min(min_w, w), max_w = std::max(max_w, w);
    if (c > 0) min_c = std::min(min_c, c), max_c = std::max(max_c, c);
    if (bs > 0) min_bs = std::min(min_bs, bs), max_bs = std::max(max_bs, bs);
    min_pf = std::min(min_pf, pf), max_pf = std::max(max_pf, pf);
    if (w >= 0 && c > 0 && w + 1 > c) any_oversubscribed = true;
    pin.insert(ManifestBool(t.manifest, "loader", "pin_memory"));
    persistent.insert(ManifestBool(t.manifest, "loader", "persistent_workers"));
    nlohmann::json entry = {{"path", t.path},
                            {"records",
                             {{"sample", t.samples.size()},
                              {"batch", t.batches.size()},
                              {"step", t.steps.size()},
                              {"worker", t.workers.size()},
                              {"host", t.hosts.size()}}},
                            {"complete", t.has_footer}};
    for (const char* key : {"source", "commit", "dirty", "versions", "hardware", "storage", "loader", "data", "command",
                            "start_time", "accelerator", "rank", "world_size", "per_sample_costs"}) {
      if (t.manifest.contains(key)) entry["manifest"][key] = t.manifest[key];
    }
    prov.push_back(entry);
  }
  nlohmann::json range = nlohmann::json::object();
  if (max_w >= 0) range["num_workers"] = {min_w, max_w};
  if (max_c > 0) range["cpu_cores"] = {min_c, max_c};
  if (max_w >= 0 && max_c > 0) range["max_workers_plus_main_over_cores"] = static_cast<double>(max_w + 1) / min_c;
  // A CPU probe measured the contention curve up to its most workers: that oversubscription is measured
  // too (the worker counts themselves stay the traces': the probe runs the pipeline alone).
  if (in.cpu_probe && in.cpu_probe->cores > 0) {
    int probe_w = 0;
    for (const auto& p : in.cpu_probe->points) probe_w = std::max(probe_w, p.workers);
    const double probe_ratio = static_cast<double>(probe_w + 1) / in.cpu_probe->cores;
    if (!range.contains("max_workers_plus_main_over_cores") ||
        probe_ratio > range["max_workers_plus_main_over_cores"].get<double>()) {
      range["max_workers_plus_main_over_cores"] = probe_ratio;
      range["oversubscription_measured_by"] = in.cpu_probe->file;
    }
  }
  range["oversubscribed_measured"] = any_oversubscribed;
  if (max_bs > 0) range["batch_size"] = {min_bs, max_bs};
  range["prefetch_factor"] = {min_pf, max_pf};
  range["pin_memory"] = std::vector<bool>(pin.begin(), pin.end());
  range["persistent_workers"] = std::vector<bool>(persistent.begin(), persistent.end());
  range["formats"] = std::vector<std::string>(containers_measured.begin(), containers_measured.end());
  range["media"] = std::vector<std::string>(media_measured.begin(), media_measured.end());
  range["gpu_batch_sizes"] =
      d->gpu_batch_size_fitted ? nlohmann::json("several") : nlohmann::json(model.gpu.measured_batch_size);

  model.extra["formats"] = formats_json;
  model.extra["measured_range"] = range;
  model.extra["provenance"] = {
      {"traces", prov},
      {"probe", options.probe_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(options.probe_path)},
      {"calibrated_by", "simreplay calibrate"},
      {"model_trace", model.trace_path}};
  return Status::Ok();
}

}  // namespace simreplay::calibrate
