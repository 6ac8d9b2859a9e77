#include "plan/collective_estimate.h"

#include <algorithm>

#include "models/collective_model.h"

namespace simreplay::plan {

CollectiveEstimate EstimateCollective(double gradient_bytes, bool fsdp, int nodes, int gpus_per_node,
                                      const models::Accelerator& gpu, const NetworkSpec& network,
                                      double step_compute_s) {
  CollectiveEstimate c;
  // FSDP: an all-gather for forward, one for backward and a reduce-scatter, three half collectives of
  // the same S: 1.5 all-reduces (docs/planning.md, "Sharding: one assumption for memory and traffic").
  const double factor = fsdp ? 1.5 : 1.0;
  const double link_bytes_per_s = gpu.intra_node_bytes_per_s / 2;  // datasheets state both directions
  // The hierarchical all-reduce's two parts, each from the one closed form (models/collective_model.h).
  c.intra_s = factor * 2 * models::RingHalfS(gpus_per_node, gradient_bytes, link_bytes_per_s, network.intra_latency_s);
  c.inter_s = factor * models::RingAllReduceS(nodes, gradient_bytes, network.nic_bytes_per_s, network.latency_s);
  c.total_s = c.intra_s + c.inter_s;
  c.exposed_s = std::max(0.0, c.total_s - network.overlap * step_compute_s);
  return c;
}

}  // namespace simreplay::plan
