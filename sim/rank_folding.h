// Rank folding: a large synchronous cluster simulated through a few representative nodes
// (docs/performance.md, "Rank folding"). Where every node is the same system (same hardware, data
// costs drawn from the same table, no straggler, nothing shared between nodes but the collectives'
// network; node-local checkpoint saves are each node's own), the nodes differ only by their random
// draws, and they meet once per optimizer step, at the gradient collectives (and at a synchronous
// save's barrier). The simulation then runs the first `simulated_nodes` nodes' loaders and training
// loops in full and stands in for the others by one "phantom" rank per step: the slowest of the other
// ranks, whose GPU step is drawn as the maximum of their independent draws (an exact order statistic:
// one draw, however many ranks), and whose other per-step time (data wait, host-to-device copy,
// wake-up, host CPU, a save) is the largest the simulated ranks had in that step. The collectives
// still run over the whole topology. Sums over ranks are scaled to the whole cluster; per-rank and
// per-node lists hold the simulated ones. The Parsimon (NSDI 2023) route: one representative per class.
#pragma once

#include <cstdint>
#include <string>

#include "scenarios/simulation_budget.h"
#include "sim/run_config.h"
#include "sim/sim_types.h"

namespace simreplay::sim {

// The representative nodes a folded simulation runs in full (scenarios/simulation_budget.h).
using scenarios::kRepresentativeNodes;

// The phantom rank takes, per step, the largest wait of the simulated ranks, not the largest of all
// ranks: where the ranks' waits differ (a data-bound cluster) the slowest of N ranks waits longer than
// the slowest of 64, and the fold would understate the tail. A folded run measures that spread
// (SimRawStats::rank_folding_wait_spread); above this share of the run the fold is refused and the
// cluster simulated in full, if its estimated memory is at most kMaxUnfoldedFallbackBytes, else kept
// and flagged (docs/performance.md, "Rank folding": 0.08-0.30% at plan settings, 72-83% data-bound).
inline constexpr double kMaxFoldedWaitSpread = 0.02;
inline constexpr double kMaxUnfoldedFallbackBytes = 8e9;

struct RankFolding {
  int simulated_nodes = 0;  // == nodes: not folded
  int nodes = 0;
  std::string off_reason;  // why not folded ("" when folded, or when there is nothing to fold)
  bool folded() const { return simulated_nodes < nodes; }
};

// Whether `input` may be folded, and to how many nodes. `allowed`: false for the full reference and
// when the scenario turns it off (replay.rank_folding "off").
RankFolding PlanRankFolding(const SimInput& input, const RunConfig& config, bool allowed);

// The largest of `n` independent step times drawn as Simulation::DrawStepTime draws one (mean `mean`,
// coefficient of variation `cv`), from one uniform `u` in [0, 1): the inverse of the maximum's
// distribution F(x)^n at u. n = 1 is one ordinary draw.
double MaxOfStepDraws(double mean, double cv, StepDistribution distribution, int64_t n, double u);

}  // namespace simreplay::sim
