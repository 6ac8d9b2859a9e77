// Writes a run's timeline in the Chrome trace event format, which Perfetto (ui.perfetto.dev) and
// chrome://tracing open: one process per rank (named by node and local rank), one thread track per worker, the main
// loop, the pin thread and the GPU. Times in microseconds with fixed formatting, so output is byte-stable.
#pragma once

#include <string>

#include "common/status.h"
#include "sim/sim_types.h"

namespace simreplay::sim {

// `accelerator_label` is written into the trace's metadata and the GPU track name ("emulated" or "cuda").
// `ranks` counts all ranks of the cluster; rank r is local rank r mod gpus_per_node of node r / gpus_per_node.
std::string TimelineToJson(const SimRawStats& stats, int ranks, int gpus_per_node, int workers, bool pin_memory,
                           const std::string& accelerator_label);

}  // namespace simreplay::sim
