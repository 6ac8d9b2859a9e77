#include "calibrate/stages.h"

#include "replay/manifest.h"

namespace simreplay::calibrate {

using replay::ManifestBool;

Status FitPcie(const CalibrationInput& in, CalibrationDraft* d) {
  const std::vector<TraceData>& traces = in.traces;
  models::ModelParams& model = d->model;
  nlohmann::json pcie_q = nlohmann::json::object();
  double pinned_b = 0, pinned_s = 0, pageable_b = 0, pageable_s = 0;
  for (const auto& t : traces) {
    const bool pinned = ManifestBool(t.manifest, "loader", "pin_memory");
    for (const auto& b : t.batches) {
      if (b.h2d_ns <= 0 || b.h2d_bytes <= 0) continue;
      (pinned ? pinned_b : pageable_b) += static_cast<double>(b.h2d_bytes);
      (pinned ? pinned_s : pageable_s) += b.h2d_ns * kNs;
    }
  }
  if (pinned_s > 0) {
    model.pcie.h2d_pinned_bytes_per_s = pinned_b / pinned_s;
    SetProvenance(&model, "pcie.h2d_pinned_bytes_per_s", false, "sum(h2d_bytes) / sum(h2d_ns), pin_memory traces");
  } else {
    SetProvenance(&model, "pcie.h2d_pinned_bytes_per_s", true,
                  "catalogue: PCIe 4.0 x16 effective, pinned source (no GPU copy measured)");
  }
  if (pageable_s > 0) {
    model.pcie.h2d_pageable_bytes_per_s = pageable_b / pageable_s;
    SetProvenance(&model, "pcie.h2d_pageable_bytes_per_s", false, "sum(h2d_bytes) / sum(h2d_ns), pageable traces");
  } else {
    SetProvenance(&model, "pcie.h2d_pageable_bytes_per_s", true,
                  "catalogue: PCIe 4.0 x16, pageable source via bounce buffer (no GPU copy measured)");
  }
  SetProvenance(&model, "pcie.latency_s", true, "catalogue: 10 us per copy");
  pcie_q = {
      {"pinned_bytes", pinned_b}, {"pinned_s", pinned_s}, {"pageable_bytes", pageable_b}, {"pageable_s", pageable_s}};
  d->quality["pcie"] = pcie_q;
  return Status::Ok();
}

}  // namespace simreplay::calibrate
