// How much memory the simulations of one command may take on this machine: scenarios whose estimated
// simulation exceeds it are refused with the estimate and the limit (scenarios/scenario.cc,
// sim/simulation.h CheckSimulationFits), and simulations run side by side only while their estimates
// fit it together (sim/isolated_run.h). docs/scenario-format.md, "cluster".
#pragma once

#include <string>

#include "common/status.h"

namespace simreplay::scenarios {

// The share of the machine's memory (its RAM, or its cgroup's limit when lower) the simulations of one
// command may take together; the rest is left to the command itself and to the machine.
inline constexpr double kMachineMemoryShare = 0.8;

// What the machine lets simulations use: the environment's SIMREPLAY_MEMORY_LIMIT (bytes, or with a
// K/M/G/T suffix, powers of 1024) when set, else kMachineMemoryShare of the machine's memory. Fixed for
// a machine (MemTotal and the cgroup limit, not what happens to be free), so that one machine refuses
// the same scenarios every time. An unreadable SIMREPLAY_MEMORY_LIMIT is an error naming it.
struct MemoryLimit {
  double bytes = 0;
  std::string source;  // "SIMREPLAY_MEMORY_LIMIT", or "80% of the machine's 25 GB", or "80% of the cgroup's ..."
};
Result<MemoryLimit> MachineMemoryLimit();
// The limit one simulation runs under: the lower of kMaxSimulationBytes (scenarios/scenario.h) and the
// machine's limit (kMaxSimulationBytes alone when SIMREPLAY_MEMORY_LIMIT cannot be read: the scenario
// loader reports that error).
double SimulationMemoryLimitBytes();
// "the 20 GB limit (80% of the machine's 25 GB; SIMREPLAY_MEMORY_LIMIT sets another)", or "the 64 GB
// limit" where the machine allows more.
std::string DescribeSimulationMemoryLimit();
// Bytes as a person reads them: "92 GB", "9.1 GB", "0.21 GB".
std::string ShowGigabytes(double bytes);

}  // namespace simreplay::scenarios
