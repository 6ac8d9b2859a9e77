// Runs one simulation in this process with SimGrid. SimGrid's engine is a per-process singleton, so
// call RunSimulation at most once per process; sweeps and the pipeline-only companion run go through
// RunIsolated (sim/isolated_run.h), which forks first.
#pragma once

#include "common/status.h"
#include "sim/sim_types.h"

namespace simreplay::sim {

Result<SimRawStats> RunSimulation(const SimInput& input);

}  // namespace simreplay::sim
