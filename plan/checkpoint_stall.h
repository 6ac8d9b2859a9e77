// The checkpoint stall of one plan candidate (docs/planning.md, "Checkpoint stall"): how its saves are
// laid out (who writes how much where, from the plan's inputs and the candidate's sharding), the
// checkpoint window the simulation runs for them, and the stall per save the goodput takes: the
// window's, labelled `simulated`, with the closed form beside it; the closed form alone, labelled
// so, when the simulation has no storage bandwidth to write with.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "plan/candidate_sim.h"
#include "plan/sourced_value.h"

namespace simreplay::plan {

// The plan's checkpoint inputs (plan file, preflight, defaults), resolved.
struct CheckpointInputs {
  double bytes = 0;              // the whole model + optimizer state
  double write_bytes_per_s = 0;  // the plan's (or the preflight's) write bandwidth
  std::string mode = "sync";     // sync | async
  double snapshot_bytes_per_s = 0;   // async: per writer
  std::string ddp_writers = "rank0";  // rank0 | per_node
};

// The window's save interval: 2 steps for synchronous saves; for asynchronous ones long enough for a
// write (estimated from bandwidths on an idle device) to end before the next save begins, x
// kWindowIntervalMargin, in [2, kMaxWindowIntervalSteps] steps.
inline constexpr double kWindowIntervalMargin = 1.5;
inline constexpr int64_t kMaxWindowIntervalSteps = 256;

struct CheckpointLayout {
  CandidateCheckpoint sim;      // what the checkpoint window simulates (sim.simulate false: nothing)
  int writers = 1;
  double bytes_per_writer = 0;
  double closed_form_stall_s = 0;  // sync: bytes / write bandwidth; async: bytes per writer / snapshot rate
  double closed_form_write_s = 0;  // bytes / write bandwidth (the planner's former save time)
  std::string why_not_simulated;   // when !sim.simulate
};

// DDP: the whole state from rank 0, or from local rank 0 of every node (ddp_writers per_node); FSDP
// (full sharding): every rank its bytes / ranks. Target: shared when the scenario's storage is
// shared (the store's aggregate_bytes_per_s must be stated: else not simulated), else the node disks.
CheckpointLayout LayOutCheckpoint(const CheckpointInputs& in, const nlohmann::json& scenario_json, bool fsdp,
                                  int nodes, int gpus_per_node, double compute_s_per_step);

// What goodput and the Monte Carlo take.
struct CheckpointStall {
  SourcedValue per_save;        // delta: `simulated`, or the closed form labelled "closed form"
  double closed_form_s = 0;     // beside it, for comparison
  double write_s = 0;           // one save's write (simulated, or the closed form)
  double min_interval_s = 0;    // async: a save cannot start before the previous write ended
  std::string rule;             // the interval rule in words
};
CheckpointStall StallOf(const CheckpointLayout& layout, const CandidateCheckpointRun& run);

}  // namespace simreplay::plan
