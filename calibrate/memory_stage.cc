#include "calibrate/stages.h"

#include <algorithm>
#include <map>

#include "common/quantile.h"
#include "replay/manifest.h"

namespace simreplay::calibrate {

using replay::ManifestDouble;

Status FitMemory(const CalibrationInput& in, CalibrationDraft* d) {
  const std::vector<TraceData>& traces = in.traces;
  const TraceData& primary = in.primary();
  models::ModelParams& model = d->model;
  nlohmann::json memory_q = nlohmann::json::object();
  std::map<std::pair<size_t, int64_t>, double> worker_peak;  // (trace, pid) -> max PSS
  std::vector<double> main_rss;
  for (size_t ti = 0; ti < traces.size(); ++ti) {
    const replay::WorkerRecord* first_main = nullptr;
    for (const auto& w : traces[ti].workers) {
      if (w.worker >= 0) {
        if (w.pss_bytes > 0) {
          double& peak = worker_peak[{ti, w.pid}];
          peak = std::max(peak, static_cast<double>(w.pss_bytes));
        }
      } else if (first_main == nullptr || w.t_ns < first_main->t_ns) {
        first_main = &w;
      }
    }
    if (first_main != nullptr && first_main->rss_bytes > 0)
      main_rss.push_back(static_cast<double>(first_main->rss_bytes));
  }
  std::vector<double> pss;
  for (const auto& [k, v] : worker_peak) pss.push_back(v);
  if (!pss.empty()) {
    model.memory.worker_base_pss_bytes = QuantileNearestRank(pss, 0.5);
    SetProvenance(&model, "memory.worker_base_pss_bytes", false,
                  "median over worker processes of their peak pss_bytes");
  }
  if (!main_rss.empty()) {
    model.memory.main_base_bytes = QuantileNearestRank(main_rss, 0.5);
    SetProvenance(&model, "memory.main_base_bytes", false, "main process rss_bytes at its first resource sample");
  }
  const double ram = ManifestDouble(primary.manifest, "hardware", "ram_bytes", 0);
  if (ram > 0) {
    model.memory.capacity_bytes = ram;
    SetProvenance(&model, "memory.capacity_bytes", false, "manifest hardware.ram_bytes");
  }
  SetProvenance(&model, "memory.batch_bytes_scale", true,
                "assumed 1: a queued batch holds its tensor bytes (shared memory)");
  memory_q = {{"worker_pss_bytes", QuantileSummary(pss)},
              {"main_rss_bytes", QuantileSummary(main_rss)},
              {"low_confidence", pss.size() < 2}};
  d->quality["memory"] = memory_q;
  return Status::Ok();
}

}  // namespace simreplay::calibrate
