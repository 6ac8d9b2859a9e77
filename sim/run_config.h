// The simulator's resolved, typed view of a SimInput: every mode string is an enum and every default
// is applied once here, so that actors never compare strings or re-derive settings in their loops.
#pragma once

#include <vector>

#include "models/cluster_topology.h"
#include "scenarios/scenario.h"
#include "sim/sim_types.h"

namespace simreplay::sim {

enum class StorageMode { kRecorded, kModel };
enum class ReplayFidelity { kSample, kBatch };
enum class StepDistribution { kConstant, kNormal, kLognormal };

struct RunConfig {
  int nodes = 1;
  int gpus_per_node = 1;
  int ranks = 1;
  int cpu_cores = 8;
  StorageMode storage_mode = StorageMode::kRecorded;
  ReplayFidelity fidelity = ReplayFidelity::kSample;
  bool shuffled_order = false;
  StepDistribution step_distribution = StepDistribution::kConstant;
  scenarios::CollectiveAlgorithm algorithm = scenarios::CollectiveAlgorithm::kAnalytic;
  scenarios::CollectiveFidelity collective_fidelity = scenarios::CollectiveFidelity::kAggregated;
  scenarios::Sharding sharding = scenarios::Sharding::kNone;
  double gradient_bytes = 0;         // per optimizer step
  std::vector<double> bucket_bytes;  // DDP buckets in launch order (sum = gradient_bytes); one when unbucketed
  double overlap = 0;                // backward fraction of the GPU step
  bool shared_storage = false;
  double shared_storage_latency_s = 0;
  bool nodes_share_cores = false;  // every node's CPU work on node 0's cores (cluster.nodes_share_cores)
  std::vector<double> rank_step_scale;  // per rank: GPU step time factor (stragglers)
  std::vector<double> node_cpu_scale;   // per node: core speed factor (stragglers)
  models::ClusterSpec cluster;          // the topology to build
  // Checkpoint saves (every_steps 0: none; never in the pipeline-only companion run, which has no
  // training step to stall).
  scenarios::CheckpointConfig checkpoint;

  static RunConfig Resolve(const SimInput& input);
};

}  // namespace simreplay::sim
