// Format what-ifs at the calibration level: fitting a container's read cost from the read times of a
// trace captured in it. Applying the transformation to a whole trace's costs is
// sim/format_replay.h; the container of a trace is replay::ContainerOfManifest.
#pragma once

#include <string>
#include <vector>

#include "calibrate/cost_regression.h"
#include "common/status.h"
#include "models/format_model.h"
#include "replay/sample_costs.h"

namespace simreplay::calibrate {

using replay::ContainerOfManifest;

// Replaces the catalogue read cost of `container` by a fit of read_s = latency + bytes / bandwidth to
// the (read_bytes, read_s) pairs of a trace captured in it (Huber, calibrate/cost_regression.h).
// Leaves the catalogue entry alone when the fit has no positive slope; returns the fit for the report.
Result<RobustFit> FitContainerReads(const std::vector<double>& read_bytes, const std::vector<double>& read_s,
                                    const std::string& container, const std::string& source,
                                    models::FormatParams* params);

}  // namespace simreplay::calibrate
