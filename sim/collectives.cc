#include "sim/collectives.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <simgrid/s4u.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/check.h"
#include "models/collective_model.h"

namespace simreplay::sim {

namespace {

namespace sg4 = simgrid::s4u;
using scenarios::CollectiveAlgorithm;
using scenarios::CollectiveFidelity;

// A rank's host CPU work for one collective: cpu_s_per_bus_byte x the bytes it sends.
class HostCpuWork {
 public:
  HostCpuWork(const RunConfig& config, const std::vector<NodeState*>& nodes, double cpu_s_per_bus_byte)
      : ranks_(config.ranks), gpus_per_node_(config.gpus_per_node), nodes_(nodes), per_byte_(cpu_s_per_bus_byte) {}

  bool enabled() const { return per_byte_ > 0 && ranks_ > 1; }

  // Starts the work on the calling rank's node; empty when there is none.
  CpuWork Start(int rank, CollectiveOp op, double bytes) const {
    if (!enabled() || bytes <= 0) return {};
    const double bus_fraction = op == CollectiveOp::kAllReduce ? models::AllReduceBusFraction(ranks_)
                                                               : models::HalfCollectiveBusFraction(ranks_);
    return nodes_[static_cast<size_t>(rank / gpus_per_node_)]->ExecuteAsync(per_byte_ * bus_fraction * bytes);
  }

 private:
  int ranks_, gpus_per_node_;
  std::vector<NodeState*> nodes_;
  double per_byte_;
};

class AnalyticCollectives : public Collectives {
 public:
  AnalyticCollectives(int ranks, const models::ModelParams& model, double gradient_bytes, HostCpuWork cpu)
      : ranks_(ranks),
        model_(model),
        gradient_bytes_(gradient_bytes),
        cpu_(std::move(cpu)),
        barrier_(sg4::Barrier::create(static_cast<unsigned>(ranks))) {}

  void Run(int rank, CollectiveOp op, double bytes) override {
    barrier_->wait();
    CpuWork work = cpu_.Start(rank, op, bytes);
    sg4::this_actor::sleep_for(TimeS(op, bytes));
    work.Wait();
  }

  bool RunsForAll() const override { return !cpu_.enabled(); }
  void RunForAll(CollectiveOp op, double bytes) override { sg4::this_actor::sleep_for(TimeS(op, bytes)); }

 private:
  // The model's alpha-beta ring estimate (models::ModelParams::CollectiveTimeS) for `bytes`; a measured
  // time per step is shared out in proportion to the bytes.
  double TimeS(CollectiveOp op, double bytes) const {
    const auto& c = model_.collective;
    double full_s;
    if (c.time_per_step_s > 0) {
      full_s = gradient_bytes_ > 0 ? c.time_per_step_s * bytes / gradient_bytes_ : c.time_per_step_s;
    } else {
      if (bytes <= 0) return 0;
      full_s = models::RingAllReduceS(ranks_, bytes, c.bus_bytes_per_s, c.alpha_s);
    }
    return op == CollectiveOp::kAllReduce ? full_s : full_s / 2;
  }

  int ranks_;
  const models::ModelParams& model_;
  double gradient_bytes_;
  HostCpuWork cpu_;
  sg4::BarrierPtr barrier_;
};

// One ring of a phase: members in ring order, `steps` messages of `fraction_per_step` x S each.
struct Ring {
  std::vector<int> members;
  int steps = 0;
  double fraction_per_step = 0;
  double step_latency_s = 0;                // the slowest edge's route latency
  std::vector<LinkClassCounts> edge_links;  // by position: links crossed from member i to i + 1
};

// One aggregated flow: a ring edge's (or tree edge's) bytes for the whole phase.
struct Flow {
  int from = 0, to = 0;
  double fraction = 0;  // of S
  LinkClassCounts links{};
  int copies = 1;  // identical flows this one stands for (see Deduplicate)
};

// One phase: a set of rings (or tree flows) that run at once; the next phase starts when all are done.
struct Phase {
  std::vector<Ring> rings;
  std::vector<int> ring_of, position;  // by rank: index into rings (-1: none) and place in it
  bool tree = false;
  std::vector<Flow> flows;     // aggregated form: what is simulated
  double extra_latency_s = 0;  // aggregated form: the latency of the steps folded into the flows
};

class FlowCollectives : public Collectives {
 public:
  FlowCollectives(const RunConfig& config, const models::ClusterTopology& topology, const Platform& platform,
                  HostCpuWork cpu, std::array<LinkClassLoad, 5>* link_load, bool fold_isomorphic)
      : config_(config),
        fold_isomorphic_(fold_isomorphic),
        topology_(topology),
        platform_(platform),
        cpu_(std::move(cpu)),
        link_load_(link_load),
        barrier_(sg4::Barrier::create(static_cast<unsigned>(config.ranks))),
        ready_(sg4::Barrier::create(static_cast<unsigned>(config.ranks))) {
    for (int r = 0; r < config.ranks; ++r) received_.push_back(sg4::Semaphore::create(0));
    for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kReduceScatter, CollectiveOp::kAllGather}) {
      plans_[static_cast<size_t>(op)] = Plan(op);
    }
    if (config.collective_fidelity == CollectiveFidelity::kPerMessage &&
        config.algorithm == CollectiveAlgorithm::kTree && config.ranks > 1) {
      StartTreeActors();
    }
  }

  bool RunsForAll() const override {
    return config_.collective_fidelity == CollectiveFidelity::kAggregated && !cpu_.enabled();
  }

  void RunForAll(CollectiveOp op, double bytes) override {
    for (const Phase& phase : plans_[static_cast<size_t>(op)]) RunPhaseFlows(phase, bytes);
  }

  void Run(int rank, CollectiveOp op, double bytes) override {
    const auto& plan = plans_[static_cast<size_t>(op)];
    if (config_.collective_fidelity == CollectiveFidelity::kAggregated) {
      if (!cpu_.enabled()) {
        // The last rank to arrive (every buffer is ready) runs every phase's flows for all; the others
        // wait at the barrier, which it joins when the last phase is done. One blocking call per rank.
        if (++arrived_ == config_.ranks) {
          arrived_ = 0;
          RunForAll(op, bytes);
        }
        barrier_->wait();
        return;
      }
      // With host CPU work every rank starts its own once all are ready; rank 0 runs the flows.
      ready_->wait();
      CpuWork work = cpu_.Start(rank, op, bytes);
      if (rank == 0)
        for (const Phase& phase : plan) RunPhaseFlows(phase, bytes);
      barrier_->wait();
      work.Wait();
      return;
    }
    barrier_->wait();  // every rank has its buffer ready
    CpuWork work = cpu_.Start(rank, op, bytes);
    for (const Phase& phase : plan) {
      if (phase.flows.empty()) continue;  // e.g. one GPU per node
      if (!phase.tree) {
        RunRingMessages(rank, phase, bytes);
      } else {
        RunTreeMessages(rank, bytes);
      }
    }
    work.Wait();
  }

 private:
  sg4::Host* Gpu(int rank) const { return platform_.GpuOfRank(rank, config_.gpus_per_node); }

  Ring MakeRing(std::vector<int> members, int steps, double fraction_per_step) const {
    Ring ring{std::move(members), steps, fraction_per_step, 0, {}};
    const size_t n = ring.members.size();
    for (size_t i = 0; i < n && n > 1; ++i) {
      const auto route =
          topology_.Route(topology_.GpuVertex(ring.members[i]), topology_.GpuVertex(ring.members[(i + 1) % n]));
      ring.step_latency_s = std::max(ring.step_latency_s, topology_.RouteLatencyS(route));
      ring.edge_links.push_back(CountLinkClasses(topology_, route));
    }
    return ring;
  }

  // A ring phase over `groups`: all-reduce (2(n-1) steps) or reduce-scatter / all-gather (n-1 steps)
  // of `share` x S split into n chunks.
  Phase RingPhase(const std::vector<std::vector<int>>& groups, CollectiveOp op, double share) const {
    Phase phase;
    for (const auto& members : groups) {
      const int n = static_cast<int>(members.size());
      if (n <= 1) continue;
      const int steps = op == CollectiveOp::kAllReduce ? 2 * (n - 1) : n - 1;
      phase.rings.push_back(MakeRing(members, steps, share / n));
    }
    phase.ring_of.assign(static_cast<size_t>(config_.ranks), -1);
    phase.position.assign(static_cast<size_t>(config_.ranks), 0);
    for (size_t i = 0; i < phase.rings.size(); ++i) {
      const Ring& ring = phase.rings[i];
      const auto& members = ring.members;
      for (size_t p = 0; p < members.size(); ++p) {
        phase.ring_of[static_cast<size_t>(members[p])] = static_cast<int>(i);
        phase.position[static_cast<size_t>(members[p])] = static_cast<int>(p);
        phase.flows.push_back(Flow{members[p], members[(p + 1) % members.size()], ring.steps * ring.fraction_per_step,
                                   ring.edge_links[p], 1});
      }
      phase.extra_latency_s = std::max(phase.extra_latency_s, (ring.steps - 1) * ring.step_latency_s);
    }
    Deduplicate(&phase);
    return phase;
  }

  // Flows that run alone on their links (every link of the route is an intra-node link no other flow
  // of the phase crosses: NVLink edges of a flat ring, intra-node rings) take latency + bytes / rate
  // whatever the others do, because only collectives use those links and one phase runs at a time. Such
  // flows with the same bytes, route latency and slowest link finish at the same instant: one of them
  // is simulated for all (`copies`), which is exact. Flows crossing a NIC compete with each other and,
  // with shared storage, with storage traffic; without it see FoldIsomorphicComponents.
  void Deduplicate(Phase* phase) const {
    std::map<std::pair<int, bool>, int> uses;
    std::vector<std::vector<models::Hop>> routes;
    for (const Flow& f : phase->flows) {
      routes.push_back(topology_.Route(topology_.GpuVertex(f.from), topology_.GpuVertex(f.to)));
      for (const models::Hop& h : routes.back()) ++uses[{h.link, h.up}];
    }
    std::vector<Flow> kept;
    std::vector<std::vector<models::Hop>> kept_routes;
    std::map<std::tuple<double, double, double>, size_t> representative;
    for (size_t i = 0; i < phase->flows.size(); ++i) {
      const auto& route = routes[i];
      const bool alone = std::all_of(route.begin(), route.end(), [&](const models::Hop& h) {
        return topology_.links()[static_cast<size_t>(h.link)].link_class == models::LinkClass::kIntraNode &&
               uses[{h.link, h.up}] == 1;
      });
      const Flow& f = phase->flows[i];
      if (alone) {
        const auto key = std::make_tuple(f.fraction, topology_.RouteLatencyS(route), topology_.RouteBytesPerS(route));
        auto [it, inserted] = representative.emplace(key, kept.size());
        if (!inserted) {
          ++kept[it->second].copies;
          continue;
        }
      }
      kept.push_back(f);
      kept_routes.push_back(route);
    }
    phase->flows = std::move(kept);
    if (!config_.shared_storage && fold_isomorphic_) FoldIsomorphicComponents(phase, kept_routes);
  }

  // Without shared storage nothing but the collectives' flows crosses any network link, and one phase
  // runs at a time. The phase's flows then fall into components (flows joined by a link direction
  // they share) that cannot affect each other. Two components that are the same sharing system up to
  // the names of their links (the same number of flows, flow k of each with the same bytes and the
  // same sequence of link classes, capacities and latencies, and links shared in the same pattern)
  // get the same max-min shares and finish at the same instants, so one is simulated for all of them
  // (its flows' `copies` count the rest): exact, like the rule above. A hierarchical all-reduce's
  // inter-node phase (one flow per local rank and node) folds from gpus x N flows to a few
  // components' worth (docs/performance.md, "Large clusters").
  void FoldIsomorphicComponents(Phase* phase, const std::vector<std::vector<models::Hop>>& routes) const {
    const size_t n = phase->flows.size();
    std::vector<size_t> parent(n);
    for (size_t i = 0; i < n; ++i) parent[i] = i;
    auto find = [&parent](size_t i) {
      while (parent[i] != i) i = parent[i] = parent[parent[i]];
      return i;
    };
    std::map<std::pair<int, bool>, size_t> first_user;
    for (size_t i = 0; i < n; ++i) {
      for (const models::Hop& h : routes[i]) {
        auto [it, inserted] = first_user.emplace(std::make_pair(h.link, h.up), i);
        if (!inserted) parent[find(i)] = find(it->second);
      }
    }
    std::map<size_t, std::vector<size_t>> members;  // by root, flows in phase order
    for (size_t i = 0; i < n; ++i) members[find(i)].push_back(i);
    std::map<std::vector<double>, size_t> representative;  // signature -> root of the simulated component
    std::vector<bool> simulated(n, false);
    for (const auto& [root, flows] : members) {
      std::vector<double> signature = {static_cast<double>(flows.size())};
      std::map<std::pair<int, bool>, int> local_id;  // link direction -> order of first use here
      for (size_t i : flows) {
        signature.push_back(phase->flows[i].fraction);
        signature.push_back(static_cast<double>(routes[i].size()));
        for (const models::Hop& h : routes[i]) {
          const auto& link = topology_.links()[static_cast<size_t>(h.link)];
          auto [it, inserted] =
              local_id.emplace(std::make_pair(h.link, h.up), static_cast<int>(local_id.size()));
          signature.insert(signature.end(), {static_cast<double>(it->second),
                                             static_cast<double>(link.link_class), link.bytes_per_s, link.latency_s});
        }
      }
      auto [it, inserted] = representative.emplace(std::move(signature), root);
      if (inserted) {
        for (size_t i : flows) simulated[i] = true;
        continue;
      }
      const auto& twin = members.at(it->second);
      for (size_t k = 0; k < flows.size(); ++k) phase->flows[twin[k]].copies += phase->flows[flows[k]].copies;
    }
    std::vector<Flow> kept;
    for (size_t i = 0; i < n; ++i) {
      if (simulated[i]) kept.push_back(phase->flows[i]);
    }
    phase->flows = std::move(kept);
  }

  Phase TreePhase() const {
    const std::vector<int> order = topology_.RingOrder();
    const int n = config_.ranks;
    Phase phase;
    phase.tree = true;
    int depth = 0;
    double hop_latency_s = 0;
    for (const models::BinaryTree& tree : models::DoubleBinaryTree(n)) {
      depth = std::max(depth, tree.depth);
      for (int p = 0; p < n; ++p) {
        const int parent = tree.parent[static_cast<size_t>(p)];
        if (parent < 0) continue;
        const int child_rank = order[static_cast<size_t>(p)], parent_rank = order[static_cast<size_t>(parent)];
        // Each tree carries half the buffer: reduce towards the root, broadcast back.
        const auto up = topology_.Route(topology_.GpuVertex(child_rank), topology_.GpuVertex(parent_rank));
        const auto down = topology_.Route(topology_.GpuVertex(parent_rank), topology_.GpuVertex(child_rank));
        phase.flows.push_back({child_rank, parent_rank, 0.5, CountLinkClasses(topology_, up), 1});
        phase.flows.push_back({parent_rank, child_rank, 0.5, CountLinkClasses(topology_, down), 1});
        hop_latency_s = std::max(hop_latency_s, topology_.RouteLatencyS(up));
      }
    }
    // The flows pay one hop latency; the pipeline's fill and drain pay the rest of 2 x depth hops.
    phase.extra_latency_s = std::max(0, 2 * depth - 1) * hop_latency_s;
    Deduplicate(&phase);
    return phase;
  }

  std::vector<Phase> Plan(CollectiveOp op) const {
    const int nodes = config_.nodes, gpus = config_.gpus_per_node;
    if (config_.algorithm == CollectiveAlgorithm::kTree && op == CollectiveOp::kAllReduce && config_.ranks > 1) {
      return {TreePhase()};
    }
    if (config_.algorithm != CollectiveAlgorithm::kHierarchical) {
      return {RingPhase({topology_.RingOrder()}, op, 1.0)};
    }
    std::vector<std::vector<int>> intra(static_cast<size_t>(nodes)), inter(static_cast<size_t>(gpus));
    for (int r = 0; r < config_.ranks; ++r) {
      intra[static_cast<size_t>(r / gpus)].push_back(r);
      inter[static_cast<size_t>(r % gpus)].push_back(r);
    }
    // Each inter-node ring carries one local rank's shard: S / gpus.
    const double shard = 1.0 / gpus;
    switch (op) {
      case CollectiveOp::kAllReduce:
        return {RingPhase(intra, CollectiveOp::kReduceScatter, 1.0), RingPhase(inter, op, shard),
                RingPhase(intra, CollectiveOp::kAllGather, 1.0)};
      case CollectiveOp::kReduceScatter:
        return {RingPhase(intra, op, 1.0), RingPhase(inter, op, shard)};
      case CollectiveOp::kAllGather:
        return {RingPhase(inter, op, shard), RingPhase(intra, op, 1.0)};
    }
    return {};
  }

  static const Ring* RingOf(int rank, const Phase& phase, size_t* position) {
    const int i = phase.ring_of[static_cast<size_t>(rank)];
    if (i < 0) return nullptr;
    *position = static_cast<size_t>(phase.position[static_cast<size_t>(rank)]);
    return &phase.rings[static_cast<size_t>(i)];
  }

  // Aggregated: one flow per ring edge carrying every step's bytes (or the tree's flows), then the
  // latency of the steps folded into it. Run by one actor for all ranks while they wait.
  void RunPhaseFlows(const Phase& phase, double bytes) {
    if (phase.flows.empty()) return;
    std::vector<sg4::CommPtr> sends;
    sends.reserve(phase.flows.size());
    for (const Flow& f : phase.flows) {
      sends.push_back(sg4::Comm::sendto_async(Gpu(f.from), Gpu(f.to), static_cast<uint64_t>(f.fraction * bytes)));
      AddLinkBytes(f.links, f.copies * f.fraction * bytes, link_load_);
    }
    sg4::Comm::wait_all(sends);
    if (phase.extra_latency_s > 0) sg4::this_actor::sleep_for(phase.extra_latency_s);
  }

  // Per message: step k sends one chunk to the successor and waits for the predecessor's chunk of
  // step k before step k + 1 (a ring's data dependency), as NCCL's ring does chunk by chunk.
  void RunRingMessages(int rank, const Phase& phase, double bytes) {
    size_t pos = 0;
    const Ring* ring = RingOf(rank, phase, &pos);
    if (ring != nullptr) {
      const int next = ring->members[(pos + 1) % ring->members.size()];
      const auto chunk = static_cast<uint64_t>(ring->fraction_per_step * bytes);
      for (int step = 0; step < ring->steps; ++step) {
        sg4::Comm::sendto(Gpu(rank), Gpu(next), chunk);
        AddLinkBytes(ring->edge_links[pos], static_cast<double>(chunk), link_load_);
        received_[static_cast<size_t>(next)]->release();
        received_[static_cast<size_t>(rank)]->acquire();
      }
    }
    barrier_->wait();
  }

  // Per message, double binary tree (NCCL's pipelined tree): each tree carries S/2 in chunks of at
  // most kTreeChunkBytes. Per rank and tree, a reduce actor waits for chunk c from every child, then
  // sends it to its parent (the root hands it to its own broadcast actor); a broadcast actor waits for
  // chunk c from its parent, then sends it to every child at once. Both trees and both directions run
  // concurrently; each chunk is its own SimGrid flow, paying its route latency. A rank's collective
  // ends when both its broadcast actors have passed on the last chunk.
  static constexpr double kTreeChunkBytes = 8.0 * 1024 * 1024;

  struct TreeRank {
    int parent = -1;
    std::vector<int> children;
    LinkClassCounts up_links{};               // to the parent
    std::vector<LinkClassCounts> down_links;  // to each child
    sg4::SemaphorePtr start_reduce, start_broadcast;
    sg4::SemaphorePtr chunk_up;    // released when a chunk from this rank reached its parent
    sg4::SemaphorePtr chunk_down;  // released when a chunk reached this rank from above (or was reduced at the root)
  };

  void StartTreeActors() {
    const std::vector<int> order = topology_.RingOrder();
    const int n = config_.ranks;
    auto trees = models::DoubleBinaryTree(n);
    for (size_t t = 0; t < trees.size(); ++t) {
      std::vector<TreeRank> ranks(static_cast<size_t>(n));
      for (int p = 0; p < n; ++p) {
        TreeRank& tr = ranks[static_cast<size_t>(order[static_cast<size_t>(p)])];
        const int parent_pos = trees[t].parent[static_cast<size_t>(p)];
        const int self = order[static_cast<size_t>(p)];
        if (parent_pos >= 0) {
          tr.parent = order[static_cast<size_t>(parent_pos)];
          tr.up_links =
              CountLinkClasses(topology_, topology_.Route(topology_.GpuVertex(self), topology_.GpuVertex(tr.parent)));
        }
        for (int c : trees[t].children[static_cast<size_t>(p)]) {
          const int child = order[static_cast<size_t>(c)];
          tr.children.push_back(child);
          tr.down_links.push_back(
              CountLinkClasses(topology_, topology_.Route(topology_.GpuVertex(self), topology_.GpuVertex(child))));
        }
        tr.start_reduce = sg4::Semaphore::create(0);
        tr.start_broadcast = sg4::Semaphore::create(0);
        tr.chunk_up = sg4::Semaphore::create(0);
        tr.chunk_down = sg4::Semaphore::create(0);
      }
      tree_ranks_.push_back(std::move(ranks));
    }
    tree_done_.clear();
    for (int r = 0; r < n; ++r) tree_done_.push_back(sg4::Semaphore::create(0));
    for (size_t t = 0; t < tree_ranks_.size(); ++t) {
      for (int r = 0; r < n; ++r) {
        const std::string name = "tree" + std::to_string(t) + "-r" + std::to_string(r);
        sg4::Actor::create(name + "-reduce", Gpu(r), [this, t, r] { TreeReduce(t, r); })->daemonize();
        sg4::Actor::create(name + "-bcast", Gpu(r), [this, t, r] { TreeBroadcast(t, r); })->daemonize();
      }
    }
  }

  int TreeChunks() const { return std::max(1, static_cast<int>(std::ceil(tree_bytes_ / 2 / kTreeChunkBytes))); }

  void TreeReduce(size_t t, int r) {
    TreeRank& self = tree_ranks_[t][static_cast<size_t>(r)];
    while (true) {
      self.start_reduce->acquire();
      const int chunks = TreeChunks();
      const double chunk = tree_bytes_ / 2 / chunks;
      for (int c = 0; c < chunks; ++c) {
        for (int child : self.children) tree_ranks_[t][static_cast<size_t>(child)].chunk_up->acquire();
        if (self.parent < 0) {
          self.chunk_down->release();  // the root's reduced chunk goes straight to its broadcast
          continue;
        }
        sg4::Comm::sendto(Gpu(r), Gpu(self.parent), static_cast<uint64_t>(chunk));
        AddLinkBytes(self.up_links, static_cast<double>(static_cast<uint64_t>(chunk)), link_load_);
        self.chunk_up->release();
      }
    }
  }

  void TreeBroadcast(size_t t, int r) {
    TreeRank& self = tree_ranks_[t][static_cast<size_t>(r)];
    while (true) {
      self.start_broadcast->acquire();
      const int chunks = TreeChunks();
      const double chunk = tree_bytes_ / 2 / chunks;
      for (int c = 0; c < chunks; ++c) {
        self.chunk_down->acquire();
        std::vector<sg4::CommPtr> sends;
        for (size_t i = 0; i < self.children.size(); ++i) {
          const int child = self.children[i];
          sends.push_back(sg4::Comm::sendto_async(Gpu(r), Gpu(child), static_cast<uint64_t>(chunk)));
          AddLinkBytes(self.down_links[i], static_cast<double>(static_cast<uint64_t>(chunk)), link_load_);
        }
        sg4::Comm::wait_all(sends);
        for (int child : self.children) tree_ranks_[t][static_cast<size_t>(child)].chunk_down->release();
      }
      tree_done_[static_cast<size_t>(r)]->release();
    }
  }

  // Every rank has its buffer ready (the barrier before the phases), then its reduce and broadcast
  // actors of both trees run; the rank waits for both broadcasts, then for every rank.
  void RunTreeMessages(int rank, double bytes) {
    tree_bytes_ = bytes;
    for (auto& ranks : tree_ranks_) {
      ranks[static_cast<size_t>(rank)].start_reduce->release();
      ranks[static_cast<size_t>(rank)].start_broadcast->release();
    }
    for (size_t t = 0; t < tree_ranks_.size(); ++t) tree_done_[static_cast<size_t>(rank)]->acquire();
    barrier_->wait();
  }

  std::vector<std::vector<TreeRank>> tree_ranks_;  // by tree, then rank
  std::vector<sg4::SemaphorePtr> tree_done_;       // by rank: one release per tree when its broadcast is done
  double tree_bytes_ = 0;                          // S of the tree all-reduce in flight

  const RunConfig& config_;
  const bool fold_isomorphic_;  // FoldIsomorphicComponents where it applies
  const models::ClusterTopology& topology_;
  const Platform& platform_;
  HostCpuWork cpu_;
  std::array<LinkClassLoad, 5>* link_load_;
  sg4::BarrierPtr barrier_;
  sg4::BarrierPtr ready_;  // aggregated form with host CPU work: every rank has its buffer ready
  std::vector<sg4::SemaphorePtr> received_;
  std::array<std::vector<Phase>, 3> plans_;
  int arrived_ = 0;  // ranks inside the current collective (aggregated) or tree phase
};

}  // namespace

std::unique_ptr<Collectives> MakeCollectives(const RunConfig& config, const models::ClusterTopology& topology,
                                             const Platform& platform, const models::ModelParams& model,
                                             const std::vector<NodeState*>& nodes,
                                             std::array<LinkClassLoad, 5>* link_load, bool fold_isomorphic) {
  HostCpuWork cpu(config, nodes, model.collective.cpu_s_per_bus_byte);
  if (config.algorithm == CollectiveAlgorithm::kAnalytic) {
    return std::make_unique<AnalyticCollectives>(config.ranks, model, config.gradient_bytes, std::move(cpu));
  }
  return std::make_unique<FlowCollectives>(config, topology, platform, std::move(cpu), link_load, fold_isomorphic);
}

}  // namespace simreplay::sim
