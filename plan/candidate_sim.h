// Simulation of one candidate cluster: the plan's scenario on N nodes x G GPUs (cluster.nodes,
// cluster.gpus_per_node), the candidate's step time, and its gradients reduced every optimizer step
// as real SimGrid flows (a hierarchical all-reduce for DDP, reduce-scatter + all-gather for FSDP) over
// the plan's network, cut to a given number of optimizer steps. Runs in a forked child
// (sim/isolated_run.h) and returns the per-step intervals and the run's metrics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "sim/isolated_run.h"
#include "sim/point_runner.h"

namespace simreplay::plan {

// The links the candidate's collectives travel over (docs/planning.md, "Communication").
struct CandidateNetwork {
  double nic_bytes_per_s = 100e9;         // per node, each direction
  double nic_latency_s = 5e-6;            // per message hop between nodes
  double intra_node_bytes_per_s = 300e9;  // GPU to GPU inside a node, each direction
  double intra_node_latency_s = 2e-6;
  double overlap = 0;  // fraction of the step that is backward (DDP buckets go out during it)
};

// PyTorch DDP's default bucket (bucket_cap_mb = 25). A billion-parameter model has a hundred such
// buckets per step; the simulation sends at most kMaxSimulatedBuckets (larger ones), which keeps the
// overlap with backward at that granularity and costs a candidate seconds instead of minutes. Without
// overlap the gradients go as one bucket: the same bytes, the per-bucket latencies dropped
// (docs/planning.md, "Communication").
inline constexpr double kDdpBucketBytes = 25e6;
inline constexpr double kMaxSimulatedBuckets = 16;
double SimulatedBucketBytes(double gradient_bytes, double overlap);

// The checkpoint saves of a candidate's checkpoint window (plan/checkpoint_stall.h lays them out): a
// second, short simulation of the same cluster with a scenario "checkpoint" section, so that the
// training run's step intervals stay free of saves and the stall per save is measured on its own.
struct CandidateCheckpoint {
  bool simulate = false;       // false: no storage bandwidth to simulate a save with (closed form)
  int64_t every_steps = 0;     // the window's save interval; the window runs kCheckpointWindowSaves of them
  double bytes = 0;            // the whole state (scenario checkpoint.bytes)
  std::string mode = "sync";   // sync | async
  std::string writers = "rank0";  // rank0 | per_node | all_ranks
  std::string target = "local";   // local | shared
  double snapshot_bytes_per_s = 0;     // async
  double local_write_bytes_per_s = 0;  // the node disk's bandwidth in the window (target local)
};
inline constexpr int64_t kCheckpointWindowSaves = 3;

struct CandidateSimSetup {
  nlohmann::json scenario_json;  // the base scenario (no sweep)
  std::string scenario_path;
  int gpus_per_node = 1;
  int nodes = 1;
  int64_t dataset_samples = 0;  // the whole dataset (all nodes)
  double step_time_s = 0;       // one micro-batch on this GPU
  double gradient_bytes = 0;    // reduced every optimizer step (0: no communication)
  bool fsdp = false;            // ZeRO-3: reduce-scatter of gradients + all-gather of parameters
  CandidateNetwork network;
  CandidateCheckpoint checkpoint;
};

// The candidate's scenario for `steps` optimizer steps, as the scenario loader reads it (its limits on
// cluster size and simulator memory apply).
Result<scenarios::Scenario> CandidateScenario(const CandidateSimSetup& setup, int64_t steps);

// Prepares the cluster simulation of `steps` optimizer steps (in the parent: children inherit the
// costs). DistributedSampler splits the whole dataset over the N x G ranks.
Result<sim::PreparedPoint> PrepareCandidate(const CandidateSimSetup& setup, int64_t steps, sim::CostCache* cache);

// The candidate's checkpoint window: kCheckpointWindowSaves x checkpoint.every_steps optimizer steps
// with a save after every every_steps. With a local target the node disk runs at the plan's checkpoint
// write bandwidth. REQUIRES: setup.checkpoint.simulate.
Result<scenarios::Scenario> CheckpointWindowScenario(const CandidateSimSetup& setup);
Result<sim::PreparedPoint> PrepareCheckpointWindow(const CandidateSimSetup& setup, sim::CostCache* cache);

// What the checkpoint window measured (sim CheckpointStats), per save.
struct CandidateCheckpointRun {
  bool simulated = false;      // false: no window ran (the planner uses the closed form)
  int64_t saves = 0;
  double stall_per_save_s = 0;  // the longest a rank was held, mean over saves
  double write_s_per_save = 0;  // first write start -> last write end, mean over saves
  double bytes_written = 0;     // all saves, all writers
};
sim::IsolatedJob MakeCheckpointWindowJob(const sim::PreparedPoint& window);
Result<CandidateCheckpointRun> ParseCheckpointWindowRun(const Result<std::string>& output);

// What the simulator hands the planner for one candidate: a typed record, read from the simulation's
// own statistics (no JSON looked up by key). JSON exists only at the edges: the forked child's
// output and the plan's point files (CandidateRunJson / CandidateRunFromJson, schema
// simreplay.plan-candidate/3: interval_s, and metrics {collective_s, exposed_comm_s, bottleneck,
// checkpoint: null or {saves, stall_per_save_s, write_s_per_save, bytes_written}}).
struct CandidateRun {
  std::vector<double> interval_s;   // per optimizer step (the slowest rank's)
  double collective_s = 0;          // time inside collectives, summed over ranks (barrier waits included)
  double exposed_comm_s = 0;        // optimizer-step time after backward ended, summed over ranks
  std::string bottleneck_stage;     // sim/metrics.h FindBottleneck
  std::string bottleneck_evidence;
  CandidateCheckpointRun checkpoint;  // from the checkpoint window (SimulateCandidates joins it in)
};

// The job: simulates `point` and returns its CandidateRun as JSON.
sim::IsolatedJob MakeCandidateJob(const sim::PreparedPoint& point);
Result<CandidateRun> ParseCandidateRun(const Result<std::string>& output);

// A run as stored in a plan's point file (scenarios/point_store.h), and back.
nlohmann::json CandidateRunJson(const CandidateRun& run);
Result<CandidateRun> CandidateRunFromJson(const nlohmann::json& j);

// Micro-batches per epoch of one rank for the simulation prepared by PrepareCandidate.
int64_t MicroBatchesPerEpoch(const sim::PreparedPoint& point);

}  // namespace simreplay::plan
