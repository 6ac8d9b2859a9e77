// Closed-form checks of storage.tiers in the simulator: a cold first epoch that falls through to the
// slowest tier, warm later epochs, and a tier's stream limit. Runs forked (one SimGrid engine each).
#include <algorithm>

#include <gtest/gtest.h>

#include "sim/isolated_run.h"
#include "sim/metrics.h"
#include "sim/remote_storage.h"
#include "sim/simulation.h"
#include "tests/sim/raw_stats_view.h"

namespace simreplay::sim {
namespace {

constexpr double kTol = 1e-6;

// n samples with no CPU cost, each recorded as a 1 ms read of 1 MB.
replay::SampleCostTable Reads(int64_t n) {
  replay::SampleCostTable table;
  table.formats = {"synthetic"};
  for (int64_t i = 0; i < n; ++i) table.samples.push_back({0.001, 0, 0, 1000000, 0, 0, false});
  table.distinct_indices = n;
  table.measured.mean_collate_per_sample_s = 0;
  return table;
}

SimInput Bare(const replay::SampleCostTable* costs, int workers, int batch, int64_t epochs) {
  SimInput in;
  in.costs = costs;
  in.cpu_cores = 4;
  in.step_time_s = 0;
  in.scenario.loader.num_workers = workers;
  in.scenario.loader.batch_size = batch;
  in.scenario.train.epochs = epochs;
  in.scenario.train.dataset_samples = static_cast<int64_t>(costs->samples.size());
  in.model.cpu.main_per_batch_s = 0;
  in.model.cpu.worker_startup_s = 0;
  in.model.cpu.worker_spawn_s = 0;
  in.model.cpu.worker_resume_s = 0;
  in.model.memory.main_base_bytes = 0;
  in.model.memory.worker_base_pss_bytes = 0;
  in.model.pcie.latency_s = 0;
  return in;
}

models::StorageTier Tier(models::TierKind kind, double latency_s, double bw, int streams = 0) {
  models::StorageTier t;
  t.kind = kind;
  t.latency_s = latency_s;
  t.bytes_per_s_per_stream = bw;
  t.max_streams = streams;
  return t;
}

double Makespan(const SimInput& input) {
  auto results = RunIsolated({[&input]() -> Result<std::string> {
                               auto stats = RunSimulation(input);
                               if (!stats.ok()) return stats.status();
                               return RawStatsToJson(*stats).dump();
                             }},
                             1);
  EXPECT_TRUE(results[0].ok()) << results[0].status().message();
  return results[0].ok() ? nlohmann::json::parse(*results[0])["makespan_s"].get<double>() : -1;
}

TEST(StorageTiersSim, ColdFirstEpochThenWarmPageCache) {
  // 1 worker, 8 samples per epoch, 2 epochs, no CPU and no step: every read is serial.
  // Epoch 0 (cold): 8 x (30 ms + 1 MB / 100 MB/s) = 8 x 40 ms = 320 ms from the object store.
  // Epoch 1 (warm): the page cache tier is as captured: 8 x the recorded 1 ms = 8 ms.
  auto costs = Reads(8);
  SimInput in = Bare(&costs, 1, 4, 2);
  in.scenario.storage.tiers = {Tier(models::TierKind::kPageCache, -1, -1),
                               Tier(models::TierKind::kObjectStore, 0.03, 1e8)};
  EXPECT_NEAR(Makespan(in), 0.320 + 0.008, kTol);
}

TEST(StorageTiersSim, StreamLimitSerialisesRequests) {
  // 4 workers, batch 1, 8 samples, one epoch from a store of 100 ms per request (bandwidth 1e15 B/s:
  // transfer negligible, 1e-9 s). Unlimited: 4 in flight, 2 rounds = 200 ms. max_streams 2: 4 rounds =
  // 400 ms.
  auto costs = Reads(8);
  SimInput in = Bare(&costs, 4, 1, 1);
  in.scenario.storage.tiers = {Tier(models::TierKind::kObjectStore, 0.1, 1e15)};
  EXPECT_NEAR(Makespan(in), 0.2, 1e-5);
  in.scenario.storage.tiers[0].max_streams = 2;
  EXPECT_NEAR(Makespan(in), 0.4, 1e-5);
}

TEST(StorageTiersSim, StreamedShardsPayTheLatencyOncePerShard) {
  // 1 worker, 8 samples of 1 MB in shards of 4 from a store of 100 ms first byte and 100 MB/s per
  // connection: each read is 100 ms / 4 + 10 ms = 35 ms (per-sample GETs: 110 ms), 8 reads = 280 ms.
  auto costs = Reads(8);
  SimInput in = Bare(&costs, 1, 4, 1);
  in.scenario.storage.tiers = {Tier(models::TierKind::kObjectStore, 0.1, 1e8)};
  EXPECT_NEAR(Makespan(in), 8 * 0.110, 1e-5);
  in.scenario.storage.tiers[0].shard_samples = 4;
  EXPECT_NEAR(Makespan(in), 8 * 0.035, 1e-5);
}

TEST(StorageTiersSim, RequestRateLimitSpacesTheStartUpBurst) {
  // 4 workers open their first requests at once; the store admits 10 requests/s: the 8 requests
  // start at 0, 0.1, ..., 0.7 s (transfer and latency negligible), so the last ends just after 0.7 s.
  auto costs = Reads(8);
  SimInput in = Bare(&costs, 4, 1, 1);
  in.scenario.storage.tiers = {Tier(models::TierKind::kObjectStore, 0, 1e15)};
  in.scenario.storage.tiers[0].requests_per_s = 10;
  EXPECT_NEAR(Makespan(in), 0.7, 1e-5);
}

TEST(StorageTiersSim, WorkersWithoutAShardDeliverNothing) {
  // 4 workers, batch 1, 8 samples in shards of 4: 2 shards, so 2 workers stream and 2 idle. Each read
  // costs 100 ms / 4 = 25 ms; 8 reads over the 2 active workers = 4 rounds = 100 ms (with all 4
  // workers streaming it would be 50 ms).
  auto costs = Reads(8);
  SimInput in = Bare(&costs, 4, 1, 1);
  in.scenario.storage.tiers = {Tier(models::TierKind::kObjectStore, 0.1, 1e15)};
  in.scenario.storage.tiers[0].shard_samples = 4;
  EXPECT_NEAR(Makespan(in), 0.1, 1e-5);
  in.scenario.storage.tiers[0].shard_samples = 2;  // 4 shards: every worker has one, 50 ms per read
  EXPECT_NEAR(Makespan(in), 0.1, 1e-5);
  in.scenario.storage.tiers[0].shard_samples = 1;  // 8 shards: 100 ms per read, 2 rounds
  EXPECT_NEAR(Makespan(in), 0.2, 1e-5);
}

TEST(StorageTiersSim, AWorkerWhoseShardsRunOutLeavesTheCycle) {
  // 2 workers, batch 1, 12 samples in shards of 4: worker 0 streams shards 0 and 2 (8 samples), worker
  // 1 shard 1 (4 samples). Reads cost 100 ms / 4 = 25 ms. Tasks alternate until worker 1 is exhausted,
  // then go to worker 0 alone: its 8 reads take 200 ms (alternating all 12 would take 150 ms).
  auto costs = Reads(12);
  SimInput in = Bare(&costs, 2, 1, 1);
  in.scenario.storage.tiers = {Tier(models::TierKind::kObjectStore, 0.1, 1e15)};
  in.scenario.storage.tiers[0].shard_samples = 4;
  EXPECT_NEAR(Makespan(in), 0.2, 1e-5);
}

TEST(RemoteStorage, TasksFollowTheWorkersShares) {
  EXPECT_EQ(StreamTaskWorkers(12, 4, 1, 0, 2, 12), (std::vector<int>{0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 0, 0}));
  EXPECT_TRUE(StreamTaskWorkers(16, 4, 1, 0, 2, 16).empty());  // 2 shards each: even, t mod 2
  EXPECT_TRUE(StreamTaskWorkers(12, 0, 1, 0, 2, 12).empty());  // not streamed
  EXPECT_TRUE(StreamTaskWorkers(12, 4, 1, 0, 1, 12).empty());  // one worker
  // The validation's 160 samples in shards of 64 (64, 64, 32) at batch 8: at 2 workers 96 and 64
  // samples, 12 and 8 batches; at 4 workers the fourth gets none and the third half as many.
  const auto two = StreamTaskWorkers(160, 64, 1, 0, 2, 20);
  ASSERT_EQ(two.size(), 20u);
  EXPECT_EQ(std::count(two.begin(), two.end(), 0), 12);
  EXPECT_EQ(std::vector<int>(two.end() - 4, two.end()), (std::vector<int>{0, 0, 0, 0}));
  const auto four = StreamTaskWorkers(160, 64, 1, 0, 4, 20);
  EXPECT_EQ(std::count(four.begin(), four.end(), 2), 4);
  EXPECT_EQ(std::count(four.begin(), four.end(), 3), 0);
  // Two ranks of 2 workers, 5 shards of 10: rank 0 readers 0, 1 get shards {0, 4} and {1}; rank 1
  // readers 2, 3 get {2} and {3}: even.
  EXPECT_EQ(StreamTaskWorkers(50, 10, 2, 0, 2, 3), (std::vector<int>{0, 1, 0}));
  EXPECT_TRUE(StreamTaskWorkers(50, 10, 2, 1, 2, 2).empty());
}

TEST(RemoteStorage, ActiveWorkersAndTheFinding) {
  EXPECT_EQ(ActiveStreamWorkers(0, 1, 0, 8), 8);  // nothing streamed
  EXPECT_EQ(ActiveStreamWorkers(3, 1, 0, 8), 3);
  EXPECT_EQ(ActiveStreamWorkers(10, 2, 1, 8), 2);  // readers 8..15 of rank 1: shards 8 and 9
  EXPECT_EQ(ActiveStreamWorkers(4, 2, 1, 8), 1);   // none for rank 1: one worker simulated, and said so
  scenarios::Scenario s;
  s.loader.num_workers = 8;
  s.storage.tiers = {Tier(models::TierKind::kObjectStore, 0.02, 1e8)};
  std::vector<std::string> warnings;
  AddStreamingWarnings(s, 1000, 2, &warnings);
  EXPECT_TRUE(warnings.empty());  // per-sample GETs: no shards
  s.storage.tiers[0].shard_samples = 100;
  AddStreamingWarnings(s, 1000, 2, &warnings);  // 10 shards for 16 readers
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("10 shards of 100 samples for 16 readers"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("6 workers get no data"), std::string::npos) << warnings[0];
  warnings.clear();
  AddStreamingWarnings(s, 1600, 2, &warnings);  // 16 shards: enough
  EXPECT_TRUE(warnings.empty());
}

}  // namespace
}  // namespace simreplay::sim
