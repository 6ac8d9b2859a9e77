// Closed-form checks of multi-node simulation: collectives on an idle network, link sharing,
// stragglers, a shared-storage cap, bucketed overlap, and determinism at 1024 ranks. Loading is free
// (zero-cost samples, no workers) unless a test says otherwise, so only the term under test remains.
// Network defaults (scenario.h): NIC 12.5e9 B/s with 5 us latency, intra-node 300e9 B/s with 2 us.
// A GPU-to-GPU route across nodes is NVLink up + NIC up + NIC down + NVLink down: 2+5+5+2 = 14 us;
// inside a node NVLink up + NVLink down: 4 us.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "models/collective_model.h"
#include "tests/sim/free_loading_run.h"

namespace simreplay::sim {
namespace {

constexpr double kTol = 1e-6;
constexpr double kNic = 12.5e9, kIntra = 300e9;
constexpr double kCrossLatency = 14e-6, kIntraLatency = 4e-6;

// `nodes` x `gpus` ranks, no loading cost, `steps` optimizer steps of `step_s` each, ring all-reduce.
SimInput Cluster(const replay::SampleCostTable* costs, int nodes, int gpus, double step_s, int steps) {
  SimInput in = FreeLoadingRun(costs, nodes, gpus, step_s, steps);
  in.scenario.collective.algorithm = scenarios::CollectiveAlgorithm::kRing;
  return in;
}

TEST(Cluster, RingAllReduceOnIdleStarMatchesClosedForm) {
  // 4 nodes x 1 GPU, S = 1 GB, one step of 0 s: the all-reduce alone.
  // 2(N-1)/N x S/B + 2(N-1) x latency = 1.5 x 1e9 / 12.5e9 + 6 x 14 us = 0.12 + 84e-6 = 0.120084 s.
  auto costs = FreeCosts(64);
  SimInput in = Cluster(&costs, 4, 1, 0.0, 1);
  in.scenario.collective.gradient_bytes = 1e9;
  const double expected = models::RingAllReduceS(4, 1e9, kNic, kCrossLatency);
  EXPECT_NEAR(expected, 0.120084, 1e-12);
  auto r = Simulate(in);
  for (double c : r["rank_collective_s"]) EXPECT_NEAR(c, expected, kTol);
  EXPECT_NEAR(r["makespan_s"].get<double>(), expected, kTol);
  // The same ring message by message (6 steps of 14 us + 0.25 GB / 12.5 GB/s) gives the same time.
  in.scenario.collective.fidelity = scenarios::CollectiveFidelity::kPerMessage;
  EXPECT_NEAR(Simulate(in)["makespan_s"].get<double>(), expected, kTol);
  // Every NIC direction carried 1.5 GB: link bytes = 4 NICs x 2 directions x 1.5 GB.
  EXPECT_NEAR(r["link_bytes"][2].get<double>(), 4 * 2 * 1.5e9, 1e3);
}

TEST(Cluster, RingCrossesNodeBoundariesOncePerNode) {
  // 2 nodes x 4 GPUs, flat ring 0..7: 6 edges over NVLink, 2 over the NICs; each NIC direction carries
  // one flow of 2(8-1)/8 x S, so the NIC sets the time; the step latency is the slowest edge's (14 us).
  auto costs = FreeCosts(64);
  SimInput in = Cluster(&costs, 2, 4, 0.0, 1);
  in.scenario.collective.gradient_bytes = 1e9;
  const double expected = models::RingAllReduceS(8, 1e9, kNic, kCrossLatency);  // 0.14 + 14 x 14 us
  EXPECT_NEAR(Simulate(in)["makespan_s"].get<double>(), expected, kTol);
}

TEST(Cluster, HierarchicalAllReduceTwoFlowsShareEachNic) {
  // 2 nodes x 2 GPUs, S = 1 GB. Intra-node reduce-scatter: (2-1)/2 x S / 300e9 + 1 x 4 us; then two
  // inter-node rings (local ranks 0 and 1) each all-reduce S/2 = 0.5 GB, and both cross the same NIC:
  // each flow gets 12.5e9 / 2, so 2(2-1)/2 x 0.5e9 / 6.25e9 = 0.08 s (as one ring of S at full rate)
  // + 2 x 14 us; then the intra-node all-gather like the reduce-scatter.
  // Total: 2 x (1/600 + 4e-6) + 0.08 + 28e-6 = 0.0833693 s.
  auto costs = FreeCosts(64);
  SimInput in = Cluster(&costs, 2, 2, 0.0, 1);
  in.scenario.collective.algorithm = scenarios::CollectiveAlgorithm::kHierarchical;
  in.scenario.collective.gradient_bytes = 1e9;
  const double expected = models::HierarchicalAllReduceS(2, 2, 1e9, kIntra, kIntraLatency, kNic, kCrossLatency);
  EXPECT_NEAR(expected, 2 * (1.0 / 600 + 4e-6) + 0.08 + 28e-6, 1e-12);
  EXPECT_NEAR(Simulate(in)["makespan_s"].get<double>(), expected, kTol);
}

TEST(Cluster, DoubleBinaryTreeOnFourNodes) {
  // 4 nodes x 1 GPU. Tree 0 (by lowest set bit): 1 -> 2, 3 -> 2, 2 -> 0; tree 1 is its mirror:
  // 2 -> 1, 0 -> 1, 1 -> 3. Each tree edge carries S/2 up (reduce) and S/2 down (broadcast), all at
  // once. Ranks 1 and 2 are inner nodes with 4 flows on each NIC direction, and every flow touches one
  // of those links, so every flow runs at B/4: (S/2) / (B/4) = 2 S / B = 0.16 s for S = 1 GB. Depth 2:
  // latency 2 x 2 x 14 us. Total 0.160056 s (a ring takes 0.120084 s: the tree pays for its depth in
  // bandwidth at this size).
  auto costs = FreeCosts(64);
  SimInput in = Cluster(&costs, 4, 1, 0.0, 1);
  in.scenario.collective.algorithm = scenarios::CollectiveAlgorithm::kTree;
  in.scenario.collective.gradient_bytes = 1e9;
  const double expected = models::TreeAllReduceS(4, 2, 1e9, kNic, kCrossLatency);
  EXPECT_NEAR(expected, 0.160056, 1e-12);
  EXPECT_NEAR(Simulate(in)["makespan_s"].get<double>(), expected, kTol);
}

TEST(Cluster, DoubleBinaryTreePerMessageAgreesWithAggregated) {
  // The same 4-node tree message by message: each tree's S/2 = 500 MB in 60 chunks of 8.33 MB, every
  // chunk its own flow (reduce: children to parent; broadcast: parent to children, both trees at once).
  // In steady state every link carries the same bytes as in the aggregated form, so the time is the
  // aggregated 0.160056 s plus the pipeline's fill and drain (a few chunk times: one chunk at B/4 is
  // 8.33e6 / 3.125e9 = 2.7 ms) and per-chunk latencies: measured 0.162215 s, 1.3% above (docs/modelling.md).
  auto costs = FreeCosts(64);
  SimInput in = Cluster(&costs, 4, 1, 0.0, 1);
  in.scenario.collective.algorithm = scenarios::CollectiveAlgorithm::kTree;
  in.scenario.collective.gradient_bytes = 1e9;
  const double aggregated = Simulate(in)["makespan_s"].get<double>();
  in.scenario.collective.fidelity = scenarios::CollectiveFidelity::kPerMessage;
  auto r = Simulate(in);
  const double per_message = r["makespan_s"].get<double>();
  std::printf("tree: aggregated %.6f s, per-message %.6f s, difference %+.3f%%\n", aggregated, per_message,
              100 * (aggregated - per_message) / per_message);
  EXPECT_GE(per_message, aggregated - kTol);
  EXPECT_NEAR(per_message, aggregated, 0.05 * aggregated);
  // Link bytes: 6 tree edges x 2 directions x S/2, each crossing 2 NIC links.
  EXPECT_NEAR(r["link_bytes"][2].get<double>(), 6 * 2 * 0.5e9 * 2, 1e4);
}

TEST(Cluster, FatTreeRoutesCrossTheSpine) {
  // 4 nodes, 2 per leaf switch, oversubscription 2: one spine. Ring 0-1-2-3: edges 1->2 and 3->0 go
  // leaf -> spine -> leaf: NVLink 2 + NIC 5 + leaf-spine 5 + spine-leaf 5 + NIC 5 + NVLink 2 = 24 us,
  // one flow per link direction. 1.5 x 1e9 / 12.5e9 + 6 x 24 us = 0.120144 s.
  auto costs = FreeCosts(64);
  SimInput in = Cluster(&costs, 4, 1, 0.0, 1);
  in.scenario.cluster.topology = scenarios::Topology::kFatTree;
  in.scenario.cluster.fat_tree_nodes_per_switch = 2;
  in.scenario.cluster.fat_tree_oversubscription = 2;
  in.scenario.collective.gradient_bytes = 1e9;
  EXPECT_NEAR(Simulate(in)["makespan_s"].get<double>(), models::RingAllReduceS(4, 1e9, kNic, 24e-6), kTol);
}

TEST(Cluster, StragglerSetsEveryonesPace) {
  // 2 nodes x 1 GPU, 0.1 s steps, node 1's GPU 1.5x slower, no gradient bytes (a barrier per step).
  // Each of 3 steps ends when node 1 finishes: 3 x 0.15 s; rank 0 waits 0.05 s per step.
  auto costs = FreeCosts(64);
  SimInput in = Cluster(&costs, 2, 1, 0.1, 3);
  in.scenario.collective.algorithm = scenarios::CollectiveAlgorithm::kAnalytic;
  in.model.collective.gradient_bytes = 0;
  in.scenario.cluster.stragglers = {{1, -1, 1.5, 1.0}};
  nlohmann::json metrics;
  auto r = Simulate(in, &metrics);
  EXPECT_NEAR(r["makespan_s"].get<double>(), 3 * 0.15, kTol);
  EXPECT_NEAR(r["rank_collective_s"][0].get<double>(), 3 * 0.05, kTol);
  EXPECT_NEAR(r["rank_collective_s"][1].get<double>(), 0.0, kTol);
  // GPU busy (0.3 + 0.45) / (2 x 0.45) = 83% < 90%; rank 1 computes 1.5x as long: the verdict.
  EXPECT_EQ(metrics["bottleneck"]["stage"], "straggler") << metrics["bottleneck"]["evidence"];
}

TEST(Cluster, OneSlowGpuOfANodeSetsItsPeersPace) {
  // 1 node x 2 GPUs, 0.1 s steps, GPU 1 alone 1.5x slower: rank 0 waits 0.05 s per step for it.
  auto costs = FreeCosts(64);
  SimInput in = Cluster(&costs, 1, 2, 0.1, 3);
  in.scenario.collective.algorithm = scenarios::CollectiveAlgorithm::kAnalytic;
  in.model.collective.gradient_bytes = 0;
  in.scenario.cluster.stragglers = {{0, 1, 1.5, 1.0}};
  auto r = Simulate(in);
  EXPECT_NEAR(r["makespan_s"].get<double>(), 3 * 0.15, kTol);
  EXPECT_NEAR(r["rank_collective_s"][0].get<double>(), 3 * 0.05, kTol);
  EXPECT_NEAR(r["rank_collective_s"][1].get<double>(), 0.0, kTol);
}

TEST(Cluster, CollectiveHostCpuWorkSharesTheNodesCores) {
  using Fidelity = scenarios::CollectiveFidelity;
  // 1 node x 2 GPUs, one all-reduce of S = 1e8 B. Each rank's CPU work is c x its bus bytes (1 x S);
  // the two ranks share the node's cores, so it takes c S x 2 / cores, alongside the transfer:
  // analytic 2(n-1)/n x S / 1e9 B/s = 0.1 s; the ring over NVLink-class links (300 GB/s, 4 us) 0.33 ms.
  // E.g. c = 1.5e-9 s/B on one core: 0.3 s; on two 0.15 s; c = 0.5e-9 on two: 0.05 s < the transfer.
  auto costs = FreeCosts(64);
  for (auto [cores, per_byte] : {std::pair{1, 1.5e-9}, std::pair{2, 1.5e-9}, std::pair{2, 0.5e-9}}) {
    for (auto [algorithm, fidelity] : {std::pair{scenarios::CollectiveAlgorithm::kAnalytic, Fidelity::kAggregated},
                                       std::pair{scenarios::CollectiveAlgorithm::kRing, Fidelity::kAggregated},
                                       std::pair{scenarios::CollectiveAlgorithm::kRing, Fidelity::kPerMessage}}) {
      SimInput in = Cluster(&costs, 1, 2, 0.0, 1);
      in.cpu_cores = cores;
      in.scenario.collective.algorithm = algorithm;
      in.scenario.collective.fidelity = fidelity;
      in.scenario.collective.gradient_bytes = 1e8;
      in.model.collective.alpha_s = 0;
      in.model.collective.bus_bytes_per_s = 1e9;
      in.model.collective.cpu_s_per_bus_byte = per_byte;
      const bool ring = algorithm == scenarios::CollectiveAlgorithm::kRing;
      const double transfer_s = ring ? models::RingAllReduceS(2, 1e8, kIntra, kIntraLatency) : 0.1;
      const double want = std::max(transfer_s, per_byte * 1e8 * 2 / cores);
      SCOPED_TRACE(testing::Message() << cores << " cores, " << per_byte << " s/B, ring " << ring << ", per message "
                                      << (fidelity == Fidelity::kPerMessage));
      auto r = Simulate(in);
      for (double c : r["rank_collective_s"]) EXPECT_NEAR(c, want, kTol);
      EXPECT_NEAR(r["cpu_busy_core_s"].get<double>(), 2 * per_byte * 1e8, kTol);
    }
  }
}

TEST(Cluster, StepHostCpuWorkWaitsForTheCores) {
  // 1 node x 2 GPUs on one core, 3 steps of 0.1 s accelerator + 0.05 s of the loop thread's CPU: the
  // two ranks' CPU parts share the core (0.1 s each), so a step takes 0.2 s; with 2 cores 0.15 s.
  // The CPU part counts as step (busy) time, as the measured emulated step counts it.
  auto costs = FreeCosts(64);
  for (auto [cores, step_s] : {std::pair{1, 0.2}, std::pair{2, 0.15}}) {
    SimInput in = Cluster(&costs, 1, 2, 0.1, 3);
    in.cpu_cores = cores;
    in.scenario.collective.algorithm = scenarios::CollectiveAlgorithm::kAnalytic;
    in.model.collective.gradient_bytes = 0;
    in.model.gpu.step_host_cpu_s = 0.05;
    nlohmann::json metrics;
    auto r = Simulate(in, &metrics);
    EXPECT_NEAR(r["makespan_s"].get<double>(), 3 * step_s, kTol) << cores << " cores";
    for (double busy : r["rank_gpu_busy_s"]) EXPECT_NEAR(busy, 3 * step_s, kTol);
  }
}

TEST(Cluster, TheFirstStepAfterALaterEpochsForkPaysItsHostCpu) {
  // 1 rank, 4 samples of batch 1 (4 steps an epoch), 10 steps of 0.1 s accelerator + 0.01 s of loop
  // CPU: 1.1 s. With 0.05 s more in the first step after each fork of the non-persistent worker, the
  // forks of epochs 1 and 2 add 0.1 s (the first epoch's belongs to the run's warm-up, which the model
  // leaves out); persistent workers are forked once, and with 0 workers nothing is forked.
  auto costs = FreeCosts(4);
  for (auto [workers, persistent, makespan_s] :
       {std::tuple{1, false, 1.2}, std::tuple{1, true, 1.1}, std::tuple{0, false, 1.1}}) {
    SimInput in = Cluster(&costs, 1, 1, 0.1, 10);
    in.scenario.loader.num_workers = workers;
    in.scenario.loader.persistent_workers = persistent;
    in.model.cpu.worker_shutdown_s = 0;
    in.model.cpu.worker_resume_s = 0;
    in.model.gpu.step_host_cpu_s = 0.01;
    in.model.gpu.step_host_cpu_after_fork_s = 0.05;
    SCOPED_TRACE(fmt::format("{} workers, persistent {}", workers, persistent));
    EXPECT_NEAR(Simulate(in)["makespan_s"].get<double>(), makespan_s, kTol);
  }
}

TEST(Cluster, NodesSharingOneHostsCoresCompeteForThem) {
  // 2 nodes x 1 GPU, 3 steps of 0.1 s accelerator + 0.05 s of the loop thread's CPU, 1 core per node:
  // on their own cores a step takes 0.15 s; with cluster.nodes_share_cores the two loops share one
  // core (0.1 s for both CPU parts), so 0.2 s, as on one node with 2 GPUs (the test above). The
  // collective's host CPU (c x S per rank, c = 1e-9 s/B, S = 5e7 B over a 1 GB/s ring) shares it too:
  // 0.05 s per rank alone, 0.1 s on the shared core, against a 0.05 s transfer.
  auto costs = FreeCosts(64);
  for (bool shared : {false, true}) {
    SimInput in = Cluster(&costs, 2, 1, 0.1, 3);
    in.cpu_cores = 1;
    in.scenario.cluster.nodes_share_cores = shared;
    in.model.gpu.step_host_cpu_s = 0.05;
    in.scenario.collective.gradient_bytes = 0;
    nlohmann::json metrics;
    auto r = Simulate(in, &metrics);
    SCOPED_TRACE(shared ? "shared cores" : "own cores");
    // (+ the empty all-reduce's ring latency, 3 x 42 us)
    EXPECT_NEAR(r["makespan_s"].get<double>(), 3 * (shared ? 0.2 : 0.15), 2e-4);
    // Utilisation over the cores the run had: one set when shared, one per node otherwise.
    EXPECT_NEAR(metrics["cpu_utilization"].get<double>(), 0.3 / r["makespan_s"].get<double>() / (shared ? 1 : 2),
                1e-6);

    SimInput comm = Cluster(&costs, 2, 1, 0.0, 1);
    comm.cpu_cores = 1;
    comm.scenario.cluster.nodes_share_cores = shared;
    comm.scenario.cluster.nic_bytes_per_s = 1e9;
    comm.scenario.cluster.nic_latency_s = 1e-6;
    comm.scenario.collective.gradient_bytes = 5e7;
    comm.model.collective.cpu_s_per_bus_byte = 1e-9;
    auto c = Simulate(comm);
    for (double t : c["rank_collective_s"]) EXPECT_NEAR(t, shared ? 0.1 : 0.05, 1e-4);
  }
}

TEST(Cluster, SharedStorageCapsAllNodesTogether) {
  // 4 nodes x 1 GPU read 10 samples of 1 MB each (inline, batch 1) from shared storage capped at
  // 100 MB/s in aggregate: the 4 concurrent reads get 25 MB/s each, 40 ms per sample, plus the 5 us
  // NIC latency on the way in: 10 x (0.04 + 5e-6) = 0.40005 s, whatever the NICs (12.5 GB/s) could do.
  auto costs = FreeCosts(40, 1'000'000);
  SimInput in = Cluster(&costs, 4, 1, 0.0, 10);
  in.scenario.collective.algorithm = scenarios::CollectiveAlgorithm::kAnalytic;
  in.model.collective.gradient_bytes = 0;
  in.scenario.storage.kind = scenarios::StorageKind::kShared;
  in.scenario.storage.aggregate_bytes_per_s = 1e8;
  in.scenario.storage.latency_s = 0;
  nlohmann::json metrics;
  auto r = Simulate(in, &metrics);
  EXPECT_NEAR(r["makespan_s"].get<double>(), 10 * (0.04 + 5e-6), kTol);
  for (int64_t bytes : r["node_storage_read_bytes"]) EXPECT_EQ(bytes, 10'000'000);
  EXPECT_EQ(metrics["bottleneck"]["stage"], "shared_storage") << metrics["bottleneck"]["evidence"];
  // Shared storage reads travel through each node's NIC: 40 MB into the 4 NICs' down direction.
  EXPECT_NEAR(r["link_bytes"][2].get<double>(), 40e6, 1);
}

TEST(Cluster, AStoreWithoutClientCacheSendsEveryReadThroughTheNic) {
  // The same 4 nodes with a page cache that would hold everything (hit ratio 1): a network file
  // system's client cache serves every read locally (here the samples' recorded read time, 0); an
  // object store read over HTTP (client_cache false) has none, so every read crosses the 100 MB/s
  // store: 0.40005 s.
  auto costs = FreeCosts(40, 1'000'000);
  for (bool client_cache : {true, false}) {
    SimInput in = Cluster(&costs, 4, 1, 0.0, 10);
    in.scenario.collective.algorithm = scenarios::CollectiveAlgorithm::kAnalytic;
    in.model.collective.gradient_bytes = 0;
    in.model.storage.page_cache_hit_ratio = 1;
    in.model.storage.page_cache_bytes_per_s = 4e9;
    in.scenario.storage.kind = scenarios::StorageKind::kShared;
    in.scenario.storage.aggregate_bytes_per_s = 1e8;
    in.scenario.storage.latency_s = 0;
    in.scenario.storage.client_cache = client_cache;
    auto r = Simulate(in);
    SCOPED_TRACE(client_cache ? "client cache" : "no client cache");
    EXPECT_NEAR(r["makespan_s"].get<double>(), client_cache ? 0 : 10 * (0.04 + 5e-6), kTol);
    EXPECT_NEAR(r["link_bytes"][2].get<double>(), client_cache ? 0 : 40e6, 1);
  }
}

TEST(Cluster, BucketedOverlapHidesCommunicationUnderBackward) {
  // 2 nodes x 1 GPU, 1 s step, S = 1 GB. Without overlap the all-reduce follows the step:
  // exposed = 2(2-1)/2 x 1e9 / 12.5e9 + 2 x 14 us = 0.080028 s.
  // With overlap 0.5 and 4 buckets of 250 MB: buckets are ready at 0.625, 0.75, 0.875 and 1.0 s; each
  // takes 0.02 + 28 us < 0.125 s, so only the last is exposed: 0.020028 s.
  auto costs = FreeCosts(64);
  SimInput in = Cluster(&costs, 2, 1, 1.0, 1);
  in.scenario.collective.gradient_bytes = 1e9;
  auto serial = Simulate(in);
  EXPECT_NEAR(serial["makespan_s"].get<double>(), 1.0 + 0.080028, kTol);
  EXPECT_NEAR(serial["exposed_comm_s"].get<double>(), 2 * 0.080028, kTol);
  in.scenario.collective.bucket_bytes = 250e6;
  in.scenario.collective.overlap = 0.5;
  auto overlapped = Simulate(in);
  EXPECT_NEAR(overlapped["makespan_s"].get<double>(), 1.0 + 0.020028, kTol);
  EXPECT_NEAR(overlapped["exposed_comm_s"].get<double>(), 2 * 0.020028, kTol);
}

TEST(Cluster, GradientAccumulationCommunicatesOnTheLastMicroBatch) {
  // grad_accum 4: 4 micro-batches of 1 s, one all-reduce (0.080028 s) at the end of the step.
  auto costs = FreeCosts(64);
  SimInput in = Cluster(&costs, 2, 1, 1.0, 1);
  in.scenario.collective.gradient_bytes = 1e9;
  in.scenario.train.grad_accum = 4;
  EXPECT_NEAR(Simulate(in)["makespan_s"].get<double>(), 4.0 + 0.080028, kTol);
}

TEST(Cluster, FullShardingGathersThenScatters) {
  // sharding full, 2 nodes x 1 GPU, S = 1 GB, 1 s step, no overlap: all-gather before forward
  // ((2-1)/2 x S / B + 14 us = 0.040014 s), the step, then (backward has no time of its own) the
  // all-gather before backward and the reduce-scatter, 0.040014 s each: 3 x (n-1)/n x S on the wire.
  auto costs = FreeCosts(64);
  SimInput in = Cluster(&costs, 2, 1, 1.0, 1);
  in.scenario.collective.gradient_bytes = 1e9;
  in.scenario.collective.sharding = scenarios::Sharding::kFull;
  const double half = models::RingHalfS(2, 1e9, kNic, kCrossLatency);
  EXPECT_NEAR(half, 0.040014, 1e-12);
  auto r = Simulate(in);
  EXPECT_NEAR(r["makespan_s"].get<double>(), 1.0 + 3 * half, kTol);
  EXPECT_NEAR(r["exposed_comm_s"].get<double>(), 2 * 3 * half, kTol);
  // Every NIC direction carried 3 x (2-1)/2 x S: 2 NICs x 2 directions x 1.5 GB.
  EXPECT_NEAR(r["link_bytes"][2].get<double>(), 2 * 2 * 1.5e9, 1e3);
}

TEST(Cluster, FullShardingPrefetchHidesAllGathersUnderBackward) {
  // sharding full, 2 nodes x 1 GPU, S = 1 GB, 1 s step, overlap 0.5 (0.5 s forward, 0.5 s backward),
  // 4 units of 250 MB (0.125 s of backward each). An all-gather or reduce-scatter of 250 MB takes
  // (2-1)/2 x 250e6 / 12.5e9 + 14 us = 0.010014 s. Timeline from 0: all-gather of S 0.040014 s;
  // forward to 0.540014 (= b); unit 0's all-gather is exposed: b + 0.010014; unit 1's (prefetched) ends
  // at b + 0.020028, long before unit 0's compute ends (b + 0.135014); each reduce-scatter starts when
  // its unit's compute ends and each prefetch finishes under the next compute, so only the last
  // reduce-scatter is exposed: compute ends at b + 0.010014 + 4 x 0.125, plus 0.010014.
  // Makespan = 1.0 + 0.040014 + 0.010014 + 0.010014 = 1.060042 s.
  auto costs = FreeCosts(64);
  SimInput in = Cluster(&costs, 2, 1, 1.0, 1);
  in.scenario.collective.gradient_bytes = 1e9;
  in.scenario.collective.sharding = scenarios::Sharding::kFull;
  in.scenario.collective.bucket_bytes = 250e6;
  in.scenario.collective.overlap = 0.5;
  const double unit = models::RingHalfS(2, 250e6, kNic, kCrossLatency);
  EXPECT_NEAR(unit, 0.010014, 1e-12);
  const double full = models::RingHalfS(2, 1e9, kNic, kCrossLatency);
  auto r = Simulate(in);
  EXPECT_NEAR(r["makespan_s"].get<double>(), 1.0 + full + 2 * unit, kTol);
  EXPECT_NEAR(r["exposed_comm_s"].get<double>(), 2 * (full + 2 * unit), kTol);
  // All units still cross the wire: 1 + 2 x 4 x 0.25 = 3 all-gather/reduce-scatter passes of S.
  EXPECT_NEAR(r["link_bytes"][2].get<double>(), 2 * 2 * 1.5e9, 1e3);
}

TEST(Cluster, FlatRingPacedByNvlinkMatchesClosedFormAndPerMessage) {
  // 2 nodes x 4 GPUs with intra-node links slower than the NIC (1 GB/s against 12.5 GB/s): the six
  // NVLink ring edges now set the time. The aggregated form simulates one of them for all six (each runs
  // alone on its links: docs/performance.md) and the two NIC edges each. Every edge's slowest link is
  // 1 GB/s; step latency = the cross edge's 14 us:
  // 2(8-1)/8 x 1e8 / 1e9 + 14 x 14 us = 0.175 + 0.000196 = 0.175196 s.
  auto costs = FreeCosts(64);
  SimInput in = Cluster(&costs, 2, 4, 0.0, 1);
  in.scenario.cluster.intra_node_bytes_per_s = 1e9;
  in.scenario.collective.gradient_bytes = 1e8;
  const double expected = models::RingAllReduceS(8, 1e8, 1e9, kCrossLatency);
  EXPECT_NEAR(expected, 0.175196, 1e-12);
  auto r = Simulate(in);
  EXPECT_NEAR(r["makespan_s"].get<double>(), expected, kTol);
  // Link bytes count every edge: 8 edges x 2 NVLink links x 1.75e8 B; 2 cross edges x 2 NIC links.
  EXPECT_NEAR(r["link_bytes"][1].get<double>(), 8 * 2 * 1.75e8, 1e3);
  EXPECT_NEAR(r["link_bytes"][2].get<double>(), 2 * 2 * 1.75e8, 1e3);
  // Message by message (14 steps, each edge waiting for its predecessor's chunk): the same time.
  in.scenario.collective.fidelity = scenarios::CollectiveFidelity::kPerMessage;
  auto m = Simulate(in);
  EXPECT_NEAR(m["makespan_s"].get<double>(), expected, kTol);
  EXPECT_NEAR(m["link_bytes"][1].get<double>(), 8 * 2 * 1.75e8, 1e3);
}

TEST(Cluster, EveryStepAnEpochIsNamed) {
  // 8 ranks share 4 samples: each rank's padded share is 1 sample for batch 4, so every step is a
  // whole epoch (a DataLoader restart); the verdict names it rather than "balanced".
  auto costs = FreeCosts(4);
  SimInput in = Cluster(&costs, 8, 1, 0.0, 3);
  in.scenario.loader.batch_size = 4;
  in.scenario.loader.num_workers = 1;
  in.scenario.collective.algorithm = scenarios::CollectiveAlgorithm::kAnalytic;
  nlohmann::json metrics;
  Simulate(in, &metrics);
  EXPECT_EQ(metrics["bottleneck"]["stage"], "epoch_every_step") << metrics["bottleneck"]["evidence"];
}

TEST(Cluster, AggregatedRingAgreesWithPerMessageUnderContention) {
  // 4 nodes x 2 GPUs, 20 steps, a 200 MB ring all-reduce per step over 10 Gbit/s NICs while every
  // rank's worker reads 1 MB samples from shared storage through the same NICs. The aggregated ring
  // (one flow per edge per step) and the per-message ring (14 chunks per edge per step, each waiting
  // for its predecessor) see the same contention; their run times must agree within 2% (measured:
  // see docs/modelling.md, "Aggregated collectives").
  replay::SampleCostTable costs;
  costs.formats = {"synthetic"};
  for (int i = 0; i < 1024; ++i) costs.samples.push_back({0, 0.002, 0, 1'000'000, 100'000, 0, false});
  costs.distinct_indices = 1024;
  costs.measured.mean_collate_per_sample_s = 0;
  SimInput in = Cluster(&costs, 4, 2, 0.05, 20);
  in.scenario.loader.num_workers = 1;
  in.scenario.loader.batch_size = 8;
  in.scenario.cluster.nic_bytes_per_s = 1.25e9;
  in.scenario.collective.gradient_bytes = 2e8;
  in.scenario.storage.kind = scenarios::StorageKind::kShared;
  in.scenario.storage.aggregate_bytes_per_s = 4e9;
  in.scenario.storage.latency_s = 1e-4;
  const double aggregated = Simulate(in)["makespan_s"].get<double>();
  in.scenario.collective.fidelity = scenarios::CollectiveFidelity::kPerMessage;
  const double per_message = Simulate(in)["makespan_s"].get<double>();
  std::printf("aggregated %.6f s, per-message %.6f s, difference %+.3f%%\n", aggregated, per_message,
              100 * (aggregated - per_message) / per_message);
  EXPECT_NEAR(aggregated, per_message, 0.02 * per_message);
}

TEST(Cluster, AggregatedRingAgreesWithPerMessageWhenCommunicationBound) {
  // The same cluster with a 2 GB all-reduce per step (2 x 7/8 x 2e9 / 1.25e9 = 2.8 s per step against
  // 0.05 s of compute): the collective dominates while storage reads still cross the NICs.
  replay::SampleCostTable costs;
  costs.formats = {"synthetic"};
  for (int i = 0; i < 1024; ++i) costs.samples.push_back({0, 0.002, 0, 1'000'000, 100'000, 0, false});
  costs.distinct_indices = 1024;
  costs.measured.mean_collate_per_sample_s = 0;
  SimInput in = Cluster(&costs, 4, 2, 0.05, 5);
  in.scenario.loader.num_workers = 1;
  in.scenario.loader.batch_size = 8;
  in.scenario.cluster.nic_bytes_per_s = 1.25e9;
  in.scenario.collective.gradient_bytes = 2e9;
  in.scenario.storage.kind = scenarios::StorageKind::kShared;
  in.scenario.storage.aggregate_bytes_per_s = 4e9;
  in.scenario.storage.latency_s = 1e-4;
  const double aggregated = Simulate(in)["collective_s"].get<double>();
  in.scenario.collective.fidelity = scenarios::CollectiveFidelity::kPerMessage;
  const double per_message = Simulate(in)["collective_s"].get<double>();
  std::printf("collective time: aggregated %.6f s, per-message %.6f s, difference %+.3f%%\n", aggregated, per_message,
              100 * (aggregated - per_message) / per_message);
  EXPECT_NEAR(aggregated, per_message, 0.05 * per_message);
}

// Every number of `a` and `b` (objects, arrays, scalars) within `rel` of each other; names the first
// that is not.
::testing::AssertionResult AllNear(const nlohmann::json& a, const nlohmann::json& b, double rel,
                                   const std::string& path = "") {
  if (a.is_number() && b.is_number()) {
    const double x = a.get<double>(), y = b.get<double>();
    if (std::abs(x - y) <= rel * std::max({std::abs(x), std::abs(y), 1e-9})) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << path << ": " << x << " vs " << y;
  }
  if (a.type() != b.type() || a.size() != b.size()) return ::testing::AssertionFailure() << path << ": shapes differ";
  if (a.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (!b.contains(it.key())) return ::testing::AssertionFailure() << path << "." << it.key() << " missing";
      auto r = AllNear(it.value(), b[it.key()], rel, path + "." + it.key());
      if (!r) return r;
    }
  } else if (a.is_array()) {
    for (size_t i = 0; i < a.size(); ++i) {
      auto r = AllNear(a[i], b[i], rel, path + "[" + std::to_string(i) + "]");
      if (!r) return r;
    }
  } else if (a != b) {
    return ::testing::AssertionFailure() << path << ": " << a.dump() << " vs " << b.dump();
  }
  return ::testing::AssertionSuccess();
}

TEST(Cluster, ExactShortcutsMatchTheFullReference) {
  // The shortcuts that make large clusters affordable (isomorphic flow components simulated once; one
  // barrier per step for all gradient buckets) against the full simulation (SimOptions::full_reference):
  // 8 nodes x 4 GPUs with varied loading, lognormal GPU steps, 25 MB buckets overlapped with backward,
  // for each collective algorithm on a fat-tree of leaves of 2 nodes. Every statistic and metric agrees
  // to 1e-9 (summation order aside, they are the same computation).
  const replay::SampleCostTable costs = VariedCosts();
  for (auto algorithm : {scenarios::CollectiveAlgorithm::kHierarchical, scenarios::CollectiveAlgorithm::kRing,
                         scenarios::CollectiveAlgorithm::kTree, scenarios::CollectiveAlgorithm::kAnalytic}) {
    SimInput in = BucketedCluster(&costs, 8, 4, 0.02, 12, 0.2);
    in.scenario.cluster.fat_tree_nodes_per_switch = 2;
    in.scenario.collective.algorithm = algorithm;
    nlohmann::json shortcut_metrics, full_metrics;
    auto shortcut = Simulate(in, &shortcut_metrics);
    auto full = Simulate(in, &full_metrics, SimOptions{.full_reference = true});
    const int a = static_cast<int>(algorithm);
    EXPECT_GT(full["collective_s"].get<double>(), 0) << a;
    EXPECT_TRUE(AllNear(shortcut, full, 1e-9)) << "algorithm " << a;
  }
}

TEST(Cluster, DeterministicAt1024Ranks) {
  // 128 nodes x 8 GPUs, ring, 3 steps with real (varied) loading: two runs give identical statistics.
  // Every rank simulated (rank folding off; tests/sim/rank_folding_test.cc checks folded runs).
  replay::SampleCostTable costs;
  costs.formats = {"synthetic"};
  for (int i = 0; i < 4096; ++i)
    costs.samples.push_back({0.0002, 0.001 + 0.0005 * (i % 7), 0.0003, 1000, 5000, 0, false});
  costs.distinct_indices = 4096;
  costs.measured.mean_collate_per_sample_s = 1e-5;
  SimInput in = Cluster(&costs, 128, 8, 0.01, 3);
  in.scenario.loader.num_workers = 1;
  in.scenario.loader.batch_size = 4;
  in.scenario.replay_fidelity = "batch";
  in.scenario.collective.gradient_bytes = 1e8;
  in.scenario.train.dataset_samples = 1 << 20;
  in.scenario.rank_folding = false;
  nlohmann::json m1, m2;
  auto a = Simulate(in, &m1);
  auto b = Simulate(in, &m2);
  EXPECT_EQ(a["rank_collective_s"].size(), 1024u);
  EXPECT_EQ(a.dump(), b.dump());
  EXPECT_EQ(m1.dump(), m2.dump());
}

}  // namespace
}  // namespace simreplay::sim
