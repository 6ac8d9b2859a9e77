// Format what-ifs at the calibration level: fitting a container's read cost from the read times of a
// trace captured in it, and applying models::ApplyFormat (the pure transformation, models/format_model.h)
// to a whole replay::SampleCostTable. The container a trace was captured in is its manifest's
// data.format ("files", "tar", "lmdb", "hdf5"), falling back to notes.format; "files" when neither.
#pragma once

#include <string>
#include <vector>

#include "calibrate/cost_regression.h"
#include "common/status.h"
#include "models/format_model.h"
#include "replay/sample_costs.h"

namespace simreplay::calibrate {

// The container format named in a trace manifest.
std::string ContainerOfManifest(const nlohmann::json& manifest);

// Replaces the catalogue read cost of `container` by a fit of read_s = latency + bytes / bandwidth to
// the (read_bytes, read_s) pairs of a trace captured in it (Huber, calibrate/cost_regression.h).
// Leaves the catalogue entry alone when the fit has no positive slope; returns the fit for the report.
Result<RobustFit> FitContainerReads(const std::vector<double>& read_bytes, const std::vector<double>& read_s,
                                    const std::string& container, const std::string& source,
                                    models::FormatParams* params);

// The table as if its samples had been stored in `target_format`: read times and bytes per
// models::ApplyFormat, decode+augment plus the difference in deserialisation CPU (added to decode_s).
Result<replay::SampleCostTable> ApplyFormat(const replay::SampleCostTable& in, const models::FormatParams& params,
                                            const std::string& target_format);

}  // namespace simreplay::calibrate
