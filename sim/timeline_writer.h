// Writes a run's timeline in the Chrome trace event format, which Perfetto (ui.perfetto.dev) and
// chrome://tracing open: one process per rank, one thread track per worker, the main loop, the pin
// thread and the GPU. Times in microseconds with fixed formatting, so output is byte-stable.
#pragma once

#include <string>

#include "common/status.h"
#include "sim/sim_types.h"

namespace simreplay::sim {

// `accelerator_label` is written into the trace's metadata and the GPU track name ("emulated" or "cuda").
std::string TimelineToJson(const SimRawStats& stats, int ranks, int workers, bool pin_memory,
                           const std::string& accelerator_label);

}  // namespace simreplay::sim
