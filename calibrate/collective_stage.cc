#include "calibrate/stages.h"

#include <algorithm>

#include <fmt/format.h>

#include "replay/manifest.h"

namespace simreplay::calibrate {

Status FitCollectives(const CalibrationInput& in, CalibrationDraft* d) {
  const std::vector<TraceData>& traces = in.traces;
  models::ModelParams& model = d->model;
  std::vector<std::string>& warnings = d->warnings;
  nlohmann::json coll_q = nlohmann::json::object();
  std::vector<double> comm;
  int world = 1;
  for (const auto& t : traces) {
    world = std::max(world, static_cast<int>(t.manifest.value("world_size", 1)));
    for (const auto& s : t.steps) {
      if (s.comm_ns > 0) comm.push_back(s.comm_ns * kNs);
    }
  }
  if (world > 1 && !comm.empty()) {
    double mean = 0;
    for (double c : comm) mean += c;
    model.collective.time_per_step_s = mean / static_cast<double>(comm.size());
    SetProvenance(&model, "collective.time_per_step_s", false, fmt::format("mean comm_ns per step, {} ranks", world));
    warnings.push_back("collective time measured at one world size only: alpha-beta parameters are assumed");
  } else {
    SetProvenance(&model, "collective.time_per_step_s", true, "no multi-rank trace: no collective measured");
  }
  coll_q = {{"world_size", world}, {"comm_s", QuantileSummary(comm)}};
  d->quality["collective"] = coll_q;
  return Status::Ok();
}

}  // namespace simreplay::calibrate
