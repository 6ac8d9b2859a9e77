// Media what-ifs on a trace's cost table: the recorded per-sample costs as if the samples had another
// media mix or shape (scenario data.media), per models/media_synth.h. Applied before the container
// transformation (sim/format_replay.h): the synthesised read costs are in the captured container.
#pragma once

#include <map>
#include <string>

#include "common/status.h"
#include "models/media_synth.h"
#include "models/model_params.h"
#include "replay/sample_costs.h"

namespace simreplay::sim {

// `model` must hold extra.formats.media (a calibrated model). The warnings of the synthesis are added
// to the returned table's warnings.
Result<replay::SampleCostTable> ApplyMedia(const replay::SampleCostTable& in, const models::ModelParams& model,
                                           const std::map<std::string, models::MediaShapeSpec>& spec, uint64_t seed);

}  // namespace simreplay::sim
