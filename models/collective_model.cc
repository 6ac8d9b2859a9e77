#include "models/collective_model.h"

namespace simreplay::models {

double AllReduceBusFraction(int n) { return n > 1 ? 2.0 * (n - 1) / n : 0.0; }

double HalfCollectiveBusFraction(int n) { return n > 1 ? (n - 1.0) / n : 0.0; }

double RingAllReduceS(int n, double bytes, double bytes_per_s, double step_latency_s) {
  if (n <= 1) return 0;
  return AllReduceBusFraction(n) * bytes / bytes_per_s + 2.0 * (n - 1) * step_latency_s;
}

double RingHalfS(int n, double bytes, double bytes_per_s, double step_latency_s) {
  if (n <= 1) return 0;
  return HalfCollectiveBusFraction(n) * bytes / bytes_per_s + (n - 1.0) * step_latency_s;
}

double HierarchicalAllReduceS(int nodes, int gpus, double bytes, double intra_bytes_per_s, double intra_step_latency_s,
                              double nic_bytes_per_s, double inter_step_latency_s) {
  // The gpus inter-node rings each carry bytes / gpus and share the NIC: together 2(n-1)/n x S on it.
  return 2 * RingHalfS(gpus, bytes, intra_bytes_per_s, intra_step_latency_s) +
         RingAllReduceS(nodes, bytes, nic_bytes_per_s, inter_step_latency_s);
}

double TreeAllReduceS(int busiest_link_flows, int depth, double bytes, double bytes_per_s, double step_latency_s) {
  return busiest_link_flows * (bytes / 2) / bytes_per_s + 2.0 * depth * step_latency_s;
}

}  // namespace simreplay::models
