// Collective operations behind one interface. Every rank calls Run with the same operations in the
// same order; Run returns when the operation is complete for that rank. Algorithms:
//   analytic      - a barrier, then the model's alpha-beta time (no network traffic)
//   ring          - flat ring over all ranks in topology order
//   tree          - NCCL's double binary tree (pipelined: reduce and broadcast of both half-size trees
//                   at once); reduce-scatter and all-gather fall back to the ring, as in NCCL
//   hierarchical  - intra-node ring reduce-scatter, one inter-node ring per local rank, intra-node
//                   all-gather
// The network algorithms issue real SimGrid communications between GPU hosts, so they contend with
// each other and with storage traffic for links. Aggregated form (default): one flow per ring edge (or
// tree edge) per phase carrying the algorithm's total bytes, plus the latency of the steps folded
// into it, all issued by the last rank to arrive while the others wait at one barrier; flows that run
// alone on intra-node links (a flat ring's NVLink edges) are simulated once for all identical ones,
// and without shared storage so are isomorphic components of NIC-crossing flows: both exact
// (docs/performance.md, "Large clusters"). Per-message form: every ring step as its own message; the
// tree as NCCL's pipeline of chunks (at most 8 MiB), reduce and broadcast of both trees at once.
// docs/modelling.md states the difference measured between the two.
// Host CPU work (models::CollectiveParams::cpu_s_per_bus_byte > 0: gloo's reductions and the kernel's
// TCP work) runs on each rank's node cores from the moment every rank is ready, alongside the
// transfer, competing with the loaders for those cores; a rank leaves when both are done.
#pragma once

#include <memory>

#include "models/cluster_topology.h"
#include "models/model_params.h"
#include "sim/node_state.h"
#include "sim/platform.h"
#include "sim/run_config.h"

namespace simreplay::sim {

enum class CollectiveOp { kAllReduce, kReduceScatter, kAllGather };

class Collectives {
 public:
  virtual ~Collectives() = default;
  // `bytes`: the full buffer (S), not the per-rank shard.
  virtual void Run(int rank, CollectiveOp op, double bytes) = 0;
  // True when Run is a barrier followed by work one actor does for all ranks while they wait (the
  // aggregated and analytic forms without host CPU work). Then RunForAll(op, bytes), called by one
  // actor once every rank is ready, takes exactly the time Run takes after its barrier, so a caller
  // may coordinate several collectives with one barrier per rank (sim/simulation.cc, DDP buckets).
  virtual bool RunsForAll() const = 0;
  virtual void RunForAll(CollectiveOp op, double bytes) = 0;
};

// REQUIRES: the platform is built from `topology`; `nodes` holds one state per node; everything
// outlives the returned object; every rank calls Run from an actor on its node's CPU host. The
// network algorithms add the bytes of their flows to `link_load` per link class. `fold_isomorphic`:
// simulate one of each set of isomorphic flow components (exact; false for the full reference).
std::unique_ptr<Collectives> MakeCollectives(const RunConfig& config, const models::ClusterTopology& topology,
                                             const Platform& platform, const models::ModelParams& model,
                                             const std::vector<NodeState*>& nodes,
                                             std::array<LinkClassLoad, 5>* link_load, bool fold_isomorphic = true);

}  // namespace simreplay::sim
