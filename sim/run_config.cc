#include "sim/run_config.h"

#include <algorithm>
#include <cmath>

namespace simreplay::sim {

RunConfig RunConfig::Resolve(const SimInput& in) {
  const auto& s = in.scenario;
  const auto& model = in.model;
  RunConfig c;
  c.nodes = s.cluster.nodes;
  // hardware.gpus is the per-node count; the scenario loader keeps cluster.gpus_per_node equal to it.
  c.gpus_per_node = s.hardware.gpus;
  c.ranks = c.nodes * c.gpus_per_node;
  c.cpu_cores = in.cpu_cores;
  c.storage_mode = model.storage.mode == "model" ? StorageMode::kModel : StorageMode::kRecorded;
  c.fidelity = s.replay_fidelity == "batch" ? ReplayFidelity::kBatch : ReplayFidelity::kSample;
  c.shuffled_order = s.replay_order == "shuffled";
  c.step_distribution = model.gpu.distribution == "normal"      ? StepDistribution::kNormal
                        : model.gpu.distribution == "lognormal" ? StepDistribution::kLognormal
                                                                : StepDistribution::kConstant;
  c.algorithm = s.collective.algorithm;
  c.collective_fidelity = s.collective.fidelity;
  c.sharding = s.collective.sharding;
  c.gradient_bytes = s.collective.gradient_bytes >= 0 ? s.collective.gradient_bytes : model.collective.gradient_bytes;
  c.overlap = s.collective.overlap;
  // DDP fills buckets of bucket_bytes in reverse parameter order; the last one holds the remainder.
  if (s.collective.bucket_bytes > 0 && c.gradient_bytes > s.collective.bucket_bytes) {
    double left = c.gradient_bytes;
    while (left > 1e-9 * c.gradient_bytes) {
      const double b = std::min(left, s.collective.bucket_bytes);
      c.bucket_bytes.push_back(b);
      left -= b;
    }
  } else {
    c.bucket_bytes.push_back(c.gradient_bytes);
  }
  c.shared_storage = s.storage.kind == scenarios::StorageKind::kShared;
  c.shared_storage_latency_s = s.storage.latency_s;
  if (!in.pipeline_only) c.checkpoint = s.checkpoint;
  c.nodes_share_cores = s.cluster.nodes_share_cores && c.nodes > 1;
  c.rank_step_scale.assign(static_cast<size_t>(c.ranks), 1.0);
  c.node_cpu_scale.assign(static_cast<size_t>(c.nodes), 1.0);
  for (const auto& straggler : s.cluster.stragglers) {
    if (straggler.node < 0 || straggler.node >= c.nodes) continue;  // rejected by the scenario loader
    for (int g = 0; g < c.gpus_per_node; ++g) {
      if (straggler.gpu < 0 || straggler.gpu == g)
        c.rank_step_scale[static_cast<size_t>(straggler.node * c.gpus_per_node + g)] = straggler.gpu_step_scale;
    }
    c.node_cpu_scale[static_cast<size_t>(straggler.node)] = straggler.cpu_speed_scale;
  }
  auto& k = c.cluster;
  k.nodes = c.nodes;
  k.gpus_per_node = c.gpus_per_node;
  k.shape = s.cluster.topology == scenarios::Topology::kFatTree ? models::TopologyShape::kFatTree
                                                                : models::TopologyShape::kStar;
  k.nodes_per_switch = s.cluster.fat_tree_nodes_per_switch;
  k.oversubscription = s.cluster.fat_tree_oversubscription;
  k.nic_bytes_per_s = s.cluster.nic_bytes_per_s * s.cluster.nics_per_node;
  k.nic_latency_s = s.cluster.nic_latency_s;
  k.intra_node_bytes_per_s = s.cluster.intra_node_bytes_per_s;
  k.intra_node_latency_s = s.cluster.intra_node_latency_s;
  k.pcie_bytes_per_s = model.pcie.h2d_pinned_bytes_per_s;
  k.pcie_latency_s = model.pcie.latency_s;
  k.shared_storage = c.shared_storage;
  k.storage_bytes_per_s = s.storage.aggregate_bytes_per_s;
  return c;
}

}  // namespace simreplay::sim
