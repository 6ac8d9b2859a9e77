// `simreplay plan`: turns a plan file into one row per candidate cluster (GPU type x node count x
// sharding) with memory fit, simulated throughput, goodput, the whole pipeline budget, days with an
// uncertainty interval, GPU-hours and cost, and a recommendation (docs/planning.md).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "plan/collective_estimate.h"
#include "plan/goodput.h"
#include "plan/memory_fit.h"
#include "plan/plan_spec.h"
#include "plan/preflight_input.h"
#include "plan/steady_state.h"

namespace simreplay::plan {

inline constexpr const char* kPlanOutputSchema = "simreplay.plan/1";

// The whole reservation, phase by phase, in seconds (docs/planning.md, "Budget").
struct Budget {
  double download_s = 0, preprocess_s = 0, training_s = 0, eval_s = 0, checkpoint_s = 0, failures_s = 0, export_s = 0,
         copy_out_s = 0, buffer_s = 0;
  double total_s() const {
    return download_s + preprocess_s + training_s + eval_s + checkpoint_s + failures_s + export_s + copy_out_s +
           buffer_s;
  }
};

struct CandidateRow {
  std::string gpu;
  int nodes = 1;
  int gpus_per_node = 1;
  int gpus = 1;
  std::string sharding;  // ddp | fsdp
  MemoryFit memory;
  bool simulated = false;
  double step_time_s = 0;  // one micro-batch on this GPU (scaled or measured)
  std::string step_time_source;
  CollectiveEstimate collective;
  int64_t simulated_steps = 0;
  SteadyState steady;
  int64_t total_steps = 0;
  double samples_per_step = 0;
  double throughput_samples_per_s = 0;
  double scaling_efficiency = 0;
  double training_s = 0;  // failure-free time of all training steps (extrapolated)
  Goodput goodput;
  Budget budget, budget_low, budget_high;
  double gpu_hours = 0, cost = 0;
  std::vector<bool> fits_slot;  // per reservation.days, at the pessimistic end
  std::string bottleneck, bottleneck_evidence;
  std::vector<std::string> assumed;            // inputs that were not measured
  std::vector<std::string> warnings;           // extrapolation and steady-state warnings (they widen the interval)
  double interval_low = 1, interval_high = 1;  // multipliers on training time
};

struct PlanOutcome {
  PlanSpec spec;
  std::vector<CandidateRow> rows;
  nlohmann::json recommendation;  // see docs/plan-format.md
  nlohmann::json assumptions;     // [{"input","value","status","source"}]
  std::string accelerator;        // "cuda" / "emulated" for the measured_on step
  std::string accelerator_note;
  bool provisional = false;    // a step time was assumed
  std::string multinode_mode;  // how nodes > 1 were simulated
  std::string parallel_mode;   // how candidates ran
};

struct PlanOptions {
  int jobs = 1;                // candidate simulations run in parallel
  std::string preflight_path;  // overrides the plan file's "preflight"
  // Progress: (phase, done, total).
  std::function<void(const std::string&, size_t, size_t)> progress;
};

Result<PlanOutcome> RunPlan(const PlanSpec& spec, const PlanOptions& options);

}  // namespace simreplay::plan
