// SimRawStats across the fork: a simulation runs in a child process (sim/isolated_run.h) and its raw
// statistics come back to the parent as bytes. This codec is the one place they are written and read,
// so every consumer (result.json, the validation predictor) works on the typed struct, never on JSON
// keys. The bytes are MessagePack (nlohmann::json::to_msgpack): doubles travel as their binary value,
// so they round-trip exactly, and a 1024-rank run's per-step arrays (millions of doubles) cost neither
// decimal printing nor parsing; the timeline is not carried (the child writes it to its file itself).
#pragma once

#include <string>

#include "common/status.h"
#include "sim/sim_types.h"

namespace simreplay::sim {

std::string EncodeRawStats(const SimRawStats& stats);
// Internal error when `bytes` are not what EncodeRawStats wrote.
Result<SimRawStats> DecodeRawStats(const std::string& bytes);

}  // namespace simreplay::sim
