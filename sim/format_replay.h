// Format what-ifs: the recorded per-sample costs of a trace as if its samples had been stored in
// another container (JPEG files -> the same JPEGs in tar shards, LMDB, HDF5), per the format model of
// models/format_model.h.
#pragma once

#include <string>

#include "common/status.h"
#include "models/format_model.h"
#include "replay/sample_costs.h"

namespace simreplay::sim {

// Read times and bytes per models::ApplyFormat; decode+augment plus the difference in deserialisation
// CPU (added to decode_s). The source container is the trace manifest's (replay::ContainerOfManifest),
// or params.captured when the manifest names none.
// `target_format` "" = the captured one; `sequential`: data.access "sequential" (models/format_model.h).
Result<replay::SampleCostTable> ApplyFormat(const replay::SampleCostTable& in, const models::FormatParams& params,
                                            const std::string& target_format, bool sequential = false);

}  // namespace simreplay::sim
