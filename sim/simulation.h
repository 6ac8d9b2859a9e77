// Runs one simulation in this process with SimGrid. SimGrid's engine is a per-process singleton, so
// call RunSimulation at most once per process; sweeps and the pipeline-only companion run go through
// RunIsolated (sim/isolated_run.h), which forks first.
#pragma once

#include "common/status.h"
#include "sim/sim_types.h"

namespace simreplay::sim {

// How to simulate, for tests and benchmarks (a scenario never sets these).
struct SimOptions {
  // Simulate every collective flow and every gradient bucket's barrier, without the exact shortcuts
  // (isomorphic flow components simulated once, one barrier per step for all buckets): the reference
  // those shortcuts are tested against (tests/sim/cluster_test.cc); slower at scale.
  bool full_reference = false;
};

Result<SimRawStats> RunSimulation(const SimInput& input, const SimOptions& options = {});

// Whether `input` fits in memory as it will be simulated. The scenario loader checks a cluster's folded
// estimate (scenarios::SimulatedNodesAtLeast); one whose estimate as simulated here (folded, or every
// rank where folding does not apply: sim/rank_folding.h) exceeds scenarios::SimulationMemoryLimitBytes()
// (the machine's memory share, at most kMaxSimulationBytes) is refused in one line with the estimate,
// the limit and why. RunSimulation checks it first; callers may check before starting anything.
Status CheckSimulationFits(const SimInput& input, const SimOptions& options = {});
// The estimated peak memory of `input`'s simulation as it will run: folded or not, and for a fold the
// full simulation it falls back to where its ranks' waits differ and that fits (sim/rank_folding.h).
double EstimatedBytesAsSimulated(const SimInput& input, const SimOptions& options = {});

}  // namespace simreplay::sim
