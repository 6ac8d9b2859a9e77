// `simreplay plan`: turns a plan file into one row per candidate cluster (GPU type x node count x
// sharding) with memory fit, simulated throughput, goodput, the whole pipeline budget, days with an
// uncertainty interval, GPU-hours and cost, and a recommendation (docs/planning.md).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "plan/candidate_sim.h"
#include "plan/checkpoint_stall.h"
#include "plan/collective_estimate.h"
#include "plan/interval_widening.h"
#include "plan/failure_model.h"
#include "plan/goodput.h"
#include "plan/memory_fit.h"
#include "plan/plan_spec.h"
#include "plan/preflight_checks.h"
#include "plan/preflight_input.h"
#include "plan/reservation_monte_carlo.h"
#include "plan/restart_model.h"
#include "plan/steady_state.h"
#include "scenarios/point_store.h"
#include "scenarios/sweep_identity.h"
#include "sim/point_runner.h"

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
  double samples_per_step = 0;               // the candidate's global batch
  double samples_to_target_multiplier = 1;   // the samples-vs-batch rule's factor (1 without it)
  double compute_s_per_step = 0;  // the GPU compute of one optimizer step: step_time_s x micro-batches
  double throughput_samples_per_s = 0;
  double scaling_efficiency = 0;
  double training_s = 0;  // failure-free time of all training steps (extrapolated)
  JobFailureRate failure_rate;  // of this job's GPUs and nodes (plan/failure_model.h)
  Restart restart;              // its parts, each with provenance
  CheckpointLayout checkpoint_layout;  // who writes how much where (plan/checkpoint_stall.h)
  CheckpointStall checkpoint;          // the stall per save goodput takes, and the closed form beside it
  Goodput goodput;
  Budget budget, budget_low, budget_high;
  // Monte Carlo reservations at the expected training time and at the pessimistic end of the interval
  // (the verdicts: fits_slot[s] = reservation_high.p_within[s] >= reservation.probability).
  ReservationDistribution reservation, reservation_high;
  ReservationDistribution reservation_low;  // at the optimistic end (reported, no verdict rests on it)
  double gpu_hours = 0, cost = 0;
  std::vector<bool> fits_slot;  // per reservation.days: P(finish within) >= reservation.probability
  std::string bottleneck, bottleneck_evidence;
  bool activation_checkpointing = false;  // the candidate runs with it (plan/pilot_rules.h)
  std::vector<std::string> needs;         // what it needs that the plan has not seen (a qualified ROCm stack)
  std::vector<std::string> assumed;            // inputs that were not measured
  std::vector<std::string> warnings;           // what the report should say, in words (never read back)
  std::vector<Extrapolation> extrapolations;   // what widens the interval (plan/interval_widening.h)
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

// The step time of one micro-batch on a GPU type and where it comes from.
struct GpuStep {
  double step_s = 0;
  // Where the step time comes from: "measured" on that very GPU (a CUDA trace/model or a CUDA
  // preflight), "input" on the emulated accelerator (the planned job runs exactly the scenario's step),
  // or "assumed" (emulated for a real GPU, or scaled from another GPU).
  std::string status = "assumed";
  bool known() const { return status != "assumed"; }
  std::string source;
  std::string scenario_path;  // the scenario this GPU's candidates simulate
  nlohmann::json scenario_json;
  std::vector<std::string> warnings;      // from the scenario's preparation, in words
  std::vector<std::string> extrapolated;  // its parameters outside the measured range (sim::PreparedPoint)
};

// Everything known before any candidate is simulated. The candidates that fit in GPU memory are the
// plan's points (in row order): what `plan --shard I/N` divides and `plan --merge` joins, stored like
// what-if points (scenarios/point_store.h).
struct PlanSetup {
  PlanOutcome out;  // spec, and rows with memory fit, step time, steps and the closed-form collective
  std::map<std::string, GpuStep> steps;
  std::vector<size_t> point_rows;         // rows simulated, in point order
  std::vector<CandidateSimSetup> sims;    // per point
  std::vector<std::string> point_labels;  // per point: "h100-sxm x 4 nodes (fsdp)"
  std::vector<std::pair<std::string, nlohmann::json>> PointAxes(size_t point) const;
  std::optional<PreflightInputs> preflight;
  PreflightVerdict preflight_verdict;  // its checks against the plan (plan/preflight_checks.h)
  // Rows the pilot rules add to plan.json's assumptions: preflight checks and overrides, sequence
  // length, activation checkpointing, precision, ROCm (plan/pilot_rules.h).
  nlohmann::json pilot_assumptions = nlohmann::json::array();
  double checkpoint_bytes = 0, write_bytes_per_s = 0, read_bytes_per_s = 0;
  CheckpointInputs checkpoint_inputs;  // resolved (bytes and write bandwidth as above)
  double eval_duration_s = 0;  // one evaluation pass: the plan file's, else a GPU preflight's eval_s
  bool eval_from_preflight = false;
  std::optional<MeasuredRestart> measured_restart;  // from a preflight
  double peak_memory_bytes = 0;
  int grad_accum = 1;
  int64_t dataset_samples = 0;
  double reference_global_batch = 0;  // samples per optimizer step the target was set at
  std::shared_ptr<sim::CostCache> cache;
};

// Reads the catalogue, the scenarios and the preflight, and lays out the candidates.
Result<PlanSetup> PreparePlan(const PlanSpec& spec, const PreflightUse& preflight_use);
inline Result<PlanSetup> PreparePlan(const PlanSpec& spec, const std::string& preflight_override) {
  return PreparePlan(spec, PreflightUse{preflight_override});
}

// What the candidate runs depend on: the plan file, every scenario, the preflight and catalogue files,
// the models and traces they read, and the simreplay version.
Result<scenarios::SweepIdentity> IdentifyPlan(const PlanSetup& setup);

struct CandidateRunOptions {
  int jobs = 1;
  scenarios::ShardSpec shard;                               // which points this process simulates
  const scenarios::PointStore* store = nullptr;             // saves each point as it finishes (nullptr: memory only)
  bool resume = false;                                      // with a store: keep its finished points
  std::function<void(size_t done, size_t total)> progress;  // simulation runs of this process
};

struct CandidateRunSummary {
  size_t owned = 0, reused = 0, simulated = 0;
  std::vector<std::optional<CandidateRun>> runs;  // by point; set for the points this process simulated
  std::vector<std::pair<size_t, Status>> failures;
};

// Simulates the owned points to a steady state: 240 steps (simulation.initial_steps), 4 x longer while
// not steady and shorter than the job, up to simulation.max_steps. A point whose simulation fails is
// recorded (in the store's failed/ too) and the others go on; a point that cannot be prepared or
// saved fails the call.
Result<CandidateRunSummary> SimulateCandidates(const PlanSetup& setup, const CandidateRunOptions& options);

// The candidate runs of every point, read from sweep directories (a plan's shards). Fails listing the
// missing points, or when a point belongs to another plan than `identity` (IdentifyPlan's).
Result<std::vector<CandidateRun>> LoadCandidateRuns(const PlanSetup& setup, const scenarios::SweepIdentity& identity,
                                                    const std::vector<std::string>& dirs);

// Throughput, goodput, budget, days, cost and the recommendation from one run per point.
Result<PlanOutcome> FinishPlan(PlanSetup setup, const std::vector<CandidateRun>& runs);

// All three steps in one process, without a store.
Result<PlanOutcome> RunPlan(const PlanSpec& spec, const PlanOptions& options);

}  // namespace simreplay::plan
