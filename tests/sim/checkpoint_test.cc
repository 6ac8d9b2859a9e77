// Checkpoint saves as simulated storage writes (sim/checkpoint.h). Loading is free unless a test reads
// from shared storage, so every expectation is bandwidth arithmetic derived in the comment beside it.
#include <gtest/gtest.h>

#include "models/cluster_topology.h"
#include "tests/sim/free_loading_run.h"

namespace simreplay::sim {
namespace {

using scenarios::CheckpointMode;
using scenarios::CheckpointTarget;
using scenarios::CheckpointWriters;

// `nodes` x 1 GPU, inline loading, `steps` steps of `step_s`, no gradients to exchange; local disks
// of 1 GB/s; a checkpoint of `bytes` every `every` steps.
SimInput CheckpointedRun(const replay::SampleCostTable* costs, int nodes, double step_s, int steps, int every, double bytes) {
  SimInput in = FreeLoadingRun(costs, nodes, 1, step_s, steps);
  in.scenario.collective.algorithm = scenarios::CollectiveAlgorithm::kAnalytic;
  in.model.collective.gradient_bytes = 0;
  in.model.storage.bandwidth_bytes_per_s = 1e9;
  in.scenario.checkpoint.every_steps = every;
  in.scenario.checkpoint.bytes = bytes;
  return in;
}

double StallPerSave(const nlohmann::json& r) { return r["metrics"]["checkpoint"]["stall_per_save_s"].get<double>(); }

TEST(Checkpoint, SyncStallIsBytesOverBandwidthWhenUncontended) {
  // 1 node, 10 steps of 0.1 s, 1 GB every 5 steps to a 1 GB/s disk: 2 saves of 1 s each, the run
  // 1 s + 2 x 1 s.
  auto costs = FreeCosts(16);
  auto r = Simulate(CheckpointedRun(&costs, 1, 0.1, 10, 5, 1e9));
  const auto& c = r["metrics"]["checkpoint"];
  EXPECT_EQ(c["saves"].get<int64_t>(), 2);
  EXPECT_NEAR(StallPerSave(r), 1.0, 0.02 * 1.0);
  EXPECT_NEAR(c["write_s_per_save"].get<double>(), 1.0, 0.02);
  EXPECT_DOUBLE_EQ(c["bytes_written"].get<double>(), 2e9);
  EXPECT_NEAR(r["makespan_s"].get<double>(), 3.0, 0.02 * 3.0);
}

TEST(Checkpoint, NoSectionChangesNothing) {
  auto costs = FreeCosts(16);
  SimInput in = CheckpointedRun(&costs, 1, 0.1, 10, 5, 1e9);
  in.scenario.checkpoint = {};
  auto r = Simulate(in);
  EXPECT_FALSE(r["metrics"].contains("checkpoint"));
  EXPECT_EQ(r["checkpoint_saves"].get<int64_t>(), 0);
  EXPECT_NEAR(r["makespan_s"].get<double>(), 1.0, 1e-9);
}

TEST(Checkpoint, AsyncStallsOnlyForTheSnapshot) {
  // The same saves with a 10 GB/s snapshot: each stalls 0.1 s, and the 1 s write runs under the next
  // 5 steps x 2 s of training. The last save's write lands after training ends (not a stall).
  auto costs = FreeCosts(16);
  SimInput in = CheckpointedRun(&costs, 1, 2.0, 10, 5, 1e9);
  auto sync = Simulate(in);
  in.scenario.checkpoint.mode = CheckpointMode::kAsync;
  in.scenario.checkpoint.snapshot_bytes_per_s = 1e10;
  auto async = Simulate(in);
  EXPECT_NEAR(StallPerSave(sync), 1.0, 0.02);
  EXPECT_NEAR(StallPerSave(async), 0.1, 0.002);
  EXPECT_LT(StallPerSave(async), StallPerSave(sync) / 5);
  EXPECT_NEAR(async["metrics"]["checkpoint"]["write_s_per_save"].get<double>(), 1.0, 0.02);
  EXPECT_NEAR(async["makespan_s"].get<double>(), 20 + 2 * 0.1, 0.01);
}

TEST(Checkpoint, AsyncSaveWaitsForThePreviousWrite) {
  // Saves after every 0.5 s step, 1 GB at 1 GB/s, 10 GB/s snapshot: the second save waits for the
  // first write (started at 0.6 s, done at 1.6 s; second save due at 1.1 s: 0.5 s wait) then 0.1 s
  // of snapshot. Saves 2..4 stall 0.6 s each, the first 0.1 s: mean (0.1 + 3 x 0.6) / 4 = 0.475 s.
  auto costs = FreeCosts(16);
  SimInput in = CheckpointedRun(&costs, 1, 0.5, 4, 1, 1e9);
  in.scenario.checkpoint.mode = CheckpointMode::kAsync;
  in.scenario.checkpoint.snapshot_bytes_per_s = 1e10;
  auto r = Simulate(in);
  EXPECT_NEAR(StallPerSave(r), 0.475, 0.01);
}

TEST(Checkpoint, ReplicatedRank0VersusShardedAllRanks) {
  // 2 nodes, local disks of 1 GB/s, 1 GB of state. DDP, rank 0 writes all of it: 1 s per save.
  // FSDP, every rank writes its half to its own node's disk, both in parallel: 0.5 s. Ratio 2.
  auto costs = FreeCosts(16);
  SimInput ddp = CheckpointedRun(&costs, 2, 0.1, 2, 1, 1e9);
  SimInput fsdp = ddp;
  fsdp.scenario.collective.sharding = scenarios::Sharding::kFull;
  fsdp.scenario.checkpoint.writers = CheckpointWriters::kAllRanks;
  auto r_ddp = Simulate(ddp);
  auto r_fsdp = Simulate(fsdp);
  EXPECT_NEAR(StallPerSave(r_ddp), 1.0, 0.02);
  EXPECT_NEAR(StallPerSave(r_fsdp), 0.5, 0.01);
  EXPECT_NEAR(StallPerSave(r_ddp) / StallPerSave(r_fsdp), 2.0, 0.04);
  EXPECT_DOUBLE_EQ(r_fsdp["checkpoint_bytes_written"].get<double>(), 2e9);  // 2 saves x 2 halves
  // On a shared store of 1 GB/s (NICs 12.5 GB/s) the store is the limit either way: 1 s both.
  for (SimInput* in : {&ddp, &fsdp}) {
    in->scenario.storage.kind = scenarios::StorageKind::kShared;
    in->scenario.storage.aggregate_bytes_per_s = 1e9;
    in->scenario.storage.latency_s = 0;
    in->scenario.checkpoint.target = CheckpointTarget::kShared;
  }
  EXPECT_NEAR(StallPerSave(Simulate(ddp)), 1.0, 0.02);
  EXPECT_NEAR(StallPerSave(Simulate(fsdp)), 1.0, 0.02);
}

TEST(Checkpoint, AWriteHalvesTheSharedStoresReadRate) {
  // 1 node reading 1 MB samples inline from a 100 MB/s store, no step time: 10 ms per sample. After
  // 100 steps (1 s) an async save of 50 MB (instant snapshot) shares the store with the reads: each
  // gets 50 MB/s, so the write takes 1 s, during which 50 samples are read instead of 100; the other
  // 50 samples of the second hundred take 0.5 s. The second save, after step 200, writes after the
  // training ended. Without saves: 2 s; with them: 2.5 s.
  auto costs = FreeCosts(400, 1'000'000);
  SimInput in = CheckpointedRun(&costs, 1, 0.0, 200, 100, 5e7);
  in.scenario.storage.kind = scenarios::StorageKind::kShared;
  in.scenario.storage.aggregate_bytes_per_s = 1e8;
  in.scenario.storage.latency_s = 0;
  in.scenario.checkpoint.target = CheckpointTarget::kShared;
  in.scenario.checkpoint.mode = CheckpointMode::kAsync;
  in.scenario.checkpoint.snapshot_bytes_per_s = 1e15;
  auto with = Simulate(in);
  in.scenario.checkpoint = {};
  auto without = Simulate(in);
  EXPECT_NEAR(without["makespan_s"].get<double>(), 2.0, 0.005);
  EXPECT_NEAR(with["makespan_s"].get<double>() - without["makespan_s"].get<double>(), 0.5, 0.01);
  // The first write at half rate (1 s), the second alone after training (0.5 s).
  EXPECT_NEAR(with["metrics"]["checkpoint"]["write_s_per_save"].get<double>(), 0.75, 0.01);
}

TEST(Checkpoint, SharedWritesCountInTheLinkStatistics) {
  // 2 nodes, FSDP, every rank writes its 0.5 GB half to the shared store after steps 2 and 4: 2 GB in
  // all, each byte crossing its node's NIC (up) once, the store's link to its top switch (a fabric
  // link, models/cluster_topology.cc) once and the storage link once. No reads (samples of 0 bytes),
  // so without saves these classes carry nothing. Local saves never leave the node: no link bytes.
  auto costs = FreeCosts(16);
  SimInput in = CheckpointedRun(&costs, 2, 0.1, 4, 2, 1e9);
  in.scenario.collective.sharding = scenarios::Sharding::kFull;
  in.scenario.checkpoint.writers = CheckpointWriters::kAllRanks;
  in.scenario.storage.kind = scenarios::StorageKind::kShared;
  in.scenario.storage.aggregate_bytes_per_s = 1e9;
  in.scenario.storage.latency_s = 0;
  in.scenario.checkpoint.target = CheckpointTarget::kShared;
  constexpr size_t kNic = static_cast<size_t>(models::LinkClass::kNic);
  constexpr size_t kFabric = static_cast<size_t>(models::LinkClass::kFabric);
  constexpr size_t kStorage = static_cast<size_t>(models::LinkClass::kStorage);
  auto shared = Simulate(in);
  EXPECT_DOUBLE_EQ(shared["checkpoint_bytes_written"].get<double>(), 2e9);
  EXPECT_DOUBLE_EQ(shared["link_bytes"][kNic].get<double>(), 2e9);
  EXPECT_DOUBLE_EQ(shared["link_bytes"][kStorage].get<double>(), 2e9);
  EXPECT_DOUBLE_EQ(shared["link_bytes"][kFabric].get<double>(), 2e9);
  in.scenario.checkpoint = {};
  auto none = Simulate(in);
  EXPECT_DOUBLE_EQ(none["link_bytes"][kNic].get<double>(), 0);
  EXPECT_DOUBLE_EQ(none["link_bytes"][kStorage].get<double>(), 0);
  EXPECT_DOUBLE_EQ(none["link_bytes"][kFabric].get<double>(), 0);
  in = CheckpointedRun(&costs, 2, 0.1, 4, 2, 1e9);
  in.scenario.collective.sharding = scenarios::Sharding::kFull;
  in.scenario.checkpoint.writers = CheckpointWriters::kAllRanks;
  auto local = Simulate(in);
  EXPECT_DOUBLE_EQ(local["checkpoint_bytes_written"].get<double>(), 2e9);
  EXPECT_DOUBLE_EQ(local["link_bytes"][kNic].get<double>(), 0);
}

TEST(Checkpoint, Deterministic) {
  auto costs = FreeCosts(64, 1'000'000);
  SimInput in = CheckpointedRun(&costs, 2, 0.01, 20, 3, 2e8);
  in.scenario.loader.num_workers = 2;
  in.scenario.storage.kind = scenarios::StorageKind::kShared;
  in.scenario.storage.aggregate_bytes_per_s = 1e8;
  in.scenario.checkpoint.target = CheckpointTarget::kShared;
  in.scenario.checkpoint.writers = CheckpointWriters::kPerNode;
  in.scenario.checkpoint.mode = CheckpointMode::kAsync;
  in.scenario.checkpoint.snapshot_bytes_per_s = 1e9;
  auto a = Simulate(in, nullptr, {}, /*encode=*/true);
  auto b = Simulate(in, nullptr, {}, /*encode=*/true);
  EXPECT_GT(a["checkpoint_saves"].get<int64_t>(), 0);
  EXPECT_EQ(a["encoded"].get<std::string>(), b["encoded"].get<std::string>());
  EXPECT_EQ(a["metrics"].dump(), b["metrics"].dump());
}

}  // namespace
}  // namespace simreplay::sim
