#include "plan/collective_estimate.h"

#include <algorithm>

namespace simreplay::plan {

CollectiveEstimate EstimateCollective(double gradient_bytes, bool fsdp, int nodes, int gpus_per_node,
                                      const models::Accelerator& gpu, const NetworkSpec& network,
                                      double step_compute_s) {
  CollectiveEstimate c;
  const double g = gpus_per_node, n = nodes;
  const double factor = fsdp ? 1.5 : 1.0;
  const double link_bytes_per_s = gpu.intra_node_bytes_per_s / 2;  // datasheets state both directions
  if (gpus_per_node > 1) {
    c.intra_s = factor * (2 * (g - 1) / g * gradient_bytes / link_bytes_per_s + 2 * (g - 1) * network.intra_latency_s);
  }
  if (nodes > 1) {
    c.inter_s = factor * (2 * (n - 1) / n * gradient_bytes / network.nic_bytes_per_s + 2 * (n - 1) * network.latency_s);
  }
  c.total_s = c.intra_s + c.inter_s;
  c.exposed_s = std::max(0.0, c.total_s - network.overlap * step_compute_s);
  return c;
}

}  // namespace simreplay::plan
