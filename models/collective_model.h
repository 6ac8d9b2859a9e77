// Closed forms of collective times on an idle network (no other traffic), in the alpha-beta form of
// NCCL's documentation (nccl-tests doc/PERFORMANCE.md): a ring all-reduce of S bytes over n ranks moves
// 2(n-1)/n x S through every rank's link in 2(n-1) steps. The simulator runs the same algorithms as
// SimGrid flows (sim/collectives.cc) so they contend with other traffic; these forms are what the
// flows reduce to when nothing else runs, and what the tests check them against. The project's one
// home of these formulas: the simulator's analytic collectives, the model file's per-step estimate,
// the network calibration and the planner's closed form all call them.
#pragma once

namespace simreplay::models {

// The share of S each rank's link carries (nccl-tests' busbw / algbw): all-reduce 2(n-1)/n;
// reduce-scatter and all-gather (n-1)/n. 0 for one rank (nothing moves).
double AllReduceBusFraction(int n);
double HalfCollectiveBusFraction(int n);

// Ring all-reduce: 2(n-1)/n x S / B + 2(n-1) x step latency.
double RingAllReduceS(int n, double bytes, double bytes_per_s, double step_latency_s);
// Ring reduce-scatter or all-gather: (n-1)/n x S / B + (n-1) x step latency.
double RingHalfS(int n, double bytes, double bytes_per_s, double step_latency_s);
// Hierarchical all-reduce on `nodes` x `gpus` ranks: intra-node ring reduce-scatter, `gpus` concurrent
// inter-node ring all-reduces of S / gpus each sharing the node's NIC, intra-node ring all-gather.
double HierarchicalAllReduceS(int nodes, int gpus, double bytes, double intra_bytes_per_s, double intra_step_latency_s,
                              double nic_bytes_per_s, double inter_step_latency_s);
// Double binary tree all-reduce, pipelined (reduce and broadcast of both half-size trees at once): the
// busiest rank's link carries `busiest_link_flows` flows of S/2; latency 2 x depth steps.
double TreeAllReduceS(int busiest_link_flows, int depth, double bytes, double bytes_per_s, double step_latency_s);

}  // namespace simreplay::models
