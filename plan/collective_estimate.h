// Communication time of one optimizer step across the candidate's GPUs, as alpha-beta closed forms
// (docs/planning.md, "Communication"). Used while the simulator models one node: the planner simulates
// one node (all nodes are alike) and adds this per-step time at the optimizer-step synchronisation.
#pragma once

#include "models/accelerator_catalogue.h"
#include "plan/plan_spec.h"

namespace simreplay::plan {

struct CollectiveEstimate {
  double total_s = 0;    // all collectives of one optimizer step
  double exposed_s = 0;  // what the step waits for: total - overlap x step compute (not below 0)
  double intra_s = 0;    // the intra-node part of total_s
  double inter_s = 0;    // the inter-node part of total_s
};

// Hierarchical all-reduce of S gradient bytes over N nodes x G GPUs (reduce-scatter and all-gather
// inside each node at the GPU link's one-direction bandwidth B_g, ring all-reduce of the node's data
// between nodes over the node's NICs B_n):
//   t = 2 (G-1)/G x S / B_g + 2 (G-1) a_g + 2 (N-1)/N x S / B_n + 2 (N-1) a_n.
// FSDP (ZeRO-3) moves 1.5 x the bytes of DDP per step (reduce-scatter of gradients plus all-gather of
// parameters for forward and again for backward: 3 x (n-1)/n x S instead of 2 x (n-1)/n x S), with the
// same latency count per collective times 3/2.
CollectiveEstimate EstimateCollective(double gradient_bytes, bool fsdp, int nodes, int gpus_per_node,
                                      const models::Accelerator& gpu, const NetworkSpec& network,
                                      double step_compute_s);

}  // namespace simreplay::plan
