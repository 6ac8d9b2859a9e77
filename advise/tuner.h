// `simreplay tune`: a deterministic search over the job's own settings (loader knobs, the storage
// container and access, a cache tier, for clusters the DDP bucket size and overlap, and GPU decoding
// when the tool-compatibility table allows it) for the configuration the simulator predicts to be
// best, under the limits a real machine imposes (host memory with headroom, cores, the storage's
// streams, cache capacity), with the number of simulations it used (docs/advice.md, "Tuning").
//
// Search: coordinate descent, then successive halving. Axes are ordered by the causal profile's gain
// for their knob (the axis whose relief buys most first; axes with no relief after, in declaration
// order); each step simulates every value of one axis with the others held at the best so far and
// moves to the best feasible value when it buys at least kMoveThreshold; passes repeat until one moves
// nothing or the budget is spent. Then the joint neighbourhood (every combination of the values that
// came within kContenderShare of the chosen one on their axis) is ranked by successive halving on
// simulated steps (short runs first, the best 1/eta kept for runs eta times longer, the survivors
// simulated at full length). Configurations are simulated once (memoised). Ties keep the earlier value:
// the same inputs give the same search and result, whatever `jobs` is. The answer is, among the
// feasible full-length configurations within kMoveThreshold of the best one, the one that changes the
// fewest settings; then each setting it changes must buy kMinSettingGain by itself (the one buying
// least is reverted to its current value and re-simulated, until every change left earns its place);
// it replaces the current configuration only when it buys kMinRecommendedGain (5%), as every
// recommendation must.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "advise/causal_profile.h"
#include "advise/tool_compatibility.h"
#include "common/status.h"
#include "scenarios/scenario.h"

namespace simreplay::advise {

// A move must buy at least this share of the objective (below it, simulator noise across configurations
// and the validated error band make the difference meaningless).
inline constexpr double kMoveThreshold = 0.01;
// Every setting the answer changes must buy at least this share of the objective by itself (reverting
// it alone to its current value costs that much), or it is reverted. Single-setting effects predicted
// below it were not borne out on real runs: prefetch_factor 2 -> 4 predicted +0% to +1%, measured -10%
// to +8% (docs/advice.md, "Every change earns its place").
inline constexpr double kMinSettingGain = 0.02;
// A value within this share of its axis's chosen value (in the descent's last pass) is a contender for
// the joint neighbourhood that successive halving ranks.
inline constexpr double kContenderShare = 0.10;

enum class TuneObjective { kThroughput, kCost };

struct TuneOptions {
  TuneObjective objective = TuneObjective::kThroughput;
  int budget = 40;  // distinct configurations simulated at most (each = end-to-end + pipeline-alone runs)
  int jobs = 1;
  double memory_headroom = 0.10;  // keep this share of host memory free
  double memory_bytes = 0;        // host memory; 0 = the model's memory.capacity_bytes (the trace manifest's)
  // Workers of all ranks on a node <= cores x this. PyTorch warns above one per core (its suggested
  // maximum); two leave room for loaders that wait on storage rather than compute, while the simulated
  // oversubscription keeps CPU-bound loaders from choosing them (docs/advice.md).
  double max_workers_per_core = 2.0;
  // Cost objective: price of one GPU-hour and one core-hour; the search then also chooses the core count.
  double gpu_hour_price = 0, core_hour_price = 0;
  // A local NVMe cache tier per node of this many bytes (the disk space the user can give it); 0 = no
  // NVMe cache is searched (said so).
  double cache_bytes = 0;
  // data.access sequential replaces a shuffled sampler's global shuffle by shard-level shuffling
  // (WebDataset-style): only searched for a shuffled job when the user allows it.
  bool allow_streaming = false;
  // Share of the GPU step that is backward (the most DDP can overlap with gradient buckets). Assumed
  // 2/3 (backward costs about twice the forward) unless given; the scenario's own collective.overlap is
  // kept as one of the values.
  double backward_share = 2.0 / 3.0;
  // Successive halving of the joint neighbourhood: eta, the shortest rung in optimizer steps, and the
  // most candidates ranked (the first ones in knob order beyond it are dropped, said so).
  double contender_share = kContenderShare;
  int halving_eta = 3;
  int halving_min_steps = 10;
  int halving_max_candidates = 81;
  models::ErrorBand band;
  std::function<void(const std::string& what)> on_progress;
};

// The knobs one configuration sets.
struct Knobs {
  int num_workers = 0;
  int prefetch_factor = 2;
  bool pin_memory = false;
  bool persistent_workers = false;
  std::string format;  // "" = as captured
  int cpu_cores = 0;   // searched for the cost objective only
  bool sequential = false;  // data.access: sequential (a streaming pass) rather than random
  std::string cache;        // a cache tier added in front of the storage: "", "nvme_cache" or "page_cache"
  double bucket_bytes = 0;  // collective.bucket_bytes (0 = one bucket)
  double overlap = 0;       // collective.overlap
  bool gpu_decode = false;  // decode.device gpu (DALI-style; only when the compatibility table allows)
  bool operator<(const Knobs& o) const;
  bool operator==(const Knobs& o) const;
};

std::string DescribeKnobs(const Knobs& k);

struct Evaluated {
  Knobs knobs;
  PointMetrics metrics;
  double objective = 0;  // higher is better: samples/s, or samples per unit of price
  bool feasible = true;
  std::string infeasible_because;  // the binding constraint, in words
  bool simulated = false;          // false: rejected before simulation (a static limit, no model)
};

// One axis value that the search did not take, and why.
struct Rejection {
  std::string axis;
  std::string value;
  std::string reason;  // "memory: ...", "cores: ...", "buys +0.3% (< 1%)", "storage streams: ..."
};

// Successive halving over the joint neighbourhood of the descent's answer.
struct HalvingRung {
  int64_t steps = 0;    // optimizer steps simulated per candidate in this rung
  int candidates = 0;   // simulated in it
  int kept = 0;         // passed on to the next rung (the last rung: simulated at full length)
};
struct Halving {
  int neighbourhood = 0;       // combinations of the contenders (before removing known ones)
  int candidates = 0;          // not simulated at full length before halving
  int dropped = 0;             // beyond halving_max_candidates
  int over_budget = 0;         // survivors not simulated at full length: the budget was spent
  std::vector<HalvingRung> rungs;
  int short_simulations = 0;   // simulator runs of the short rungs
  std::string skipped_because; // "" when it ran
};

// A setting the answer no longer changes because it bought less than kMinSettingGain by itself.
struct RevertedSetting {
  std::string setting;  // the axis name: "prefetch_factor", "data.format", ...
  std::string value;    // what the search's answer had set it to
  std::string kept;     // the current configuration's value, which the recommendation keeps
  double gain = 0;      // what the setting bought by itself (the answer's objective over the reverted one, - 1)
};

struct TuneResult {
  Evaluated current;
  Evaluated best;
  double gain = 0, gain_low = 0, gain_high = 0;  // best vs current, objective
  std::vector<Evaluated> runners_up;             // the next best feasible configurations, at most 3
  std::vector<Rejection> rejections;             // from the final pass, per axis
  std::vector<RevertedSetting> reverted;         // changes of the search's answer that bought too little
  std::vector<std::string> axis_order;           // the order the search used, and why
  std::vector<std::string> constraints;          // the limits applied, in words
  double memory_limit_bytes = 0;                 // predicted peak host memory allowed; 0 = unknown
  int configurations = 0, simulations = 0, passes = 0;  // full-length; simulations include the short rungs
  int revert_configurations = 0;  // full-length, beyond the budget: the answer's single-setting reverts
  bool budget_exhausted = false;
  CausalProfile profile;  // the seeding profile of the current configuration
  Halving halving;
  std::vector<ToolCheck> tools;  // the compatibility table checked against the trace's manifest
  std::string tools_checked;     // the table's date
};

// Fails with kInvalidArgument when the constraints cannot hold even for the current configuration's
// memory floor (e.g. a memory limit below what the main process alone needs), or when the cost
// objective has no prices.
Result<TuneResult> Tune(const scenarios::Scenario& scenario, const TuneOptions& options, sim::CostCache* cache);

}  // namespace simreplay::advise
