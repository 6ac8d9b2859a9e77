// `simreplay tune`: a deterministic search over the job's own settings (loader knobs, the storage
// container) for the configuration the simulator predicts to be best, under the limits a real
// machine imposes (host memory with headroom, cores, the storage's streams), with the number of
// simulations it used (docs/advice.md, "Tuning").
//
// Search: coordinate descent. Axes are ordered by the causal profile's gain for their knob (the axis
// whose relief buys most first; axes with no relief after, in declaration order); each step simulates
// every value of one axis with the others held at the best so far and moves to the best feasible value
// when it buys at least kMoveThreshold; passes repeat until one moves nothing or the budget is spent.
// Configurations are simulated once (memoised). Ties keep the earlier value: the same inputs give the
// same search and result, whatever `jobs` is. The answer is, among the feasible configurations within
// kMoveThreshold of the best simulated one, the one that changes the fewest settings; it replaces the
// current configuration only when it buys kMinRecommendedGain (5%), as every recommendation must.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "advise/causal_profile.h"
#include "common/status.h"
#include "scenarios/scenario.h"

namespace simreplay::advise {

// A move must buy at least this share of the objective (below it, simulator noise across configurations
// and the validated error band make the difference meaningless).
inline constexpr double kMoveThreshold = 0.01;

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
};

// One axis value that the search did not take, and why.
struct Rejection {
  std::string axis;
  std::string value;
  std::string reason;  // "memory: ...", "cores: ...", "buys +0.3% (< 1%)", "storage streams: ..."
};

struct TuneResult {
  Evaluated current;
  Evaluated best;
  double gain = 0, gain_low = 0, gain_high = 0;  // best vs current, objective
  std::vector<Evaluated> runners_up;             // the next best feasible configurations, at most 3
  std::vector<Rejection> rejections;             // from the final pass, per axis
  std::vector<std::string> axis_order;           // the order the search used, and why
  std::vector<std::string> constraints;          // the limits applied, in words
  double memory_limit_bytes = 0;                 // predicted peak host memory allowed; 0 = unknown
  int configurations = 0, simulations = 0, passes = 0;
  bool budget_exhausted = false;
  CausalProfile profile;  // the seeding profile of the current configuration
};

// Fails with kInvalidArgument when the constraints cannot hold even for the current configuration's
// memory floor (e.g. a memory limit below what the main process alone needs), or when the cost
// objective has no prices.
Result<TuneResult> Tune(const scenarios::Scenario& scenario, const TuneOptions& options, sim::CostCache* cache);

}  // namespace simreplay::advise
