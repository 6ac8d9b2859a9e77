// SimRawStats across the fork: a simulation runs in a child process (sim/isolated_run.h) and its raw
// statistics come back to the parent as text. This codec is the one place that text is written and
// read, so every consumer (result.json, the validation predictor) works on the typed struct, never on
// JSON keys. Doubles round-trip exactly (shortest round-trip decimal); the timeline is not carried
// (the child writes it to its file itself).
#pragma once

#include <string>

#include "common/status.h"
#include "sim/sim_types.h"

namespace simreplay::sim {

std::string EncodeRawStats(const SimRawStats& stats);
// Internal error when `text` is not what EncodeRawStats wrote.
Result<SimRawStats> DecodeRawStats(const std::string& text);

}  // namespace simreplay::sim
