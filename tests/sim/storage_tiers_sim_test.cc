// Closed-form checks of storage.tiers in the simulator: a cold first epoch that falls through to the
// slowest tier, warm later epochs, and a tier's stream limit. Runs forked (one SimGrid engine each).
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "models/shard_stream.h"
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

// A tar shard of n members of `bytes` each: its members (header and whole blocks each), then two zero
// blocks, in whole 10240-byte records (models/shard_stream.h).
double ShardFileBytes(int n, double bytes) {
  const double members = n * models::TarMemberBytes(bytes) + 2 * models::kTarBlockBytes;
  return std::ceil(members / models::kTarRecordBytes) * models::kTarRecordBytes;
}

// One worker, batches of 4, streaming tar members of 16 KiB (16 KiB - 512 of data and a 512-byte header)
// from an object store at 64 KiB/s with no first byte and no CPU, in shards of `shard_samples`.
SimInput SixteenKiBMembersAt64KiBPerS(replay::SampleCostTable* costs, int shard_samples) {
  for (auto& c : costs->samples) c.read_bytes = 16384 - 512;
  SimInput in = Bare(costs, 1, 4, 1);
  in.scenario.storage.tiers = {Tier(models::TierKind::kObjectStore, 0, 65536)};
  in.scenario.storage.tiers[0].shard_samples = shard_samples;
  return in;
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
  // connection: per-sample GETs 8 x 110 ms; streamed, each shard 100 ms and its file (4 tar members and
  // the archive's end, 4.01 MB) at 100 MB/s: 2 x 140.1 ms, about 35 ms a sample.
  auto costs = Reads(8);
  SimInput in = Bare(&costs, 1, 4, 1);
  in.scenario.storage.tiers = {Tier(models::TierKind::kObjectStore, 0.1, 1e8)};
  EXPECT_NEAR(Makespan(in), 8 * 0.110, 1e-5);
  in.scenario.storage.tiers[0].shard_samples = 4;
  EXPECT_NEAR(Makespan(in), 2 * (0.1 + ShardFileBytes(4, 1e6) / 1e8), 1e-5);
  EXPECT_NEAR(ShardFileBytes(4, 1e6), 4014080, 1e-6);
}

TEST(StorageTiersSim, AStreamReceivesWhileItsReaderDecodes) {
  // 1 worker, 8 samples of 1 MiB, 100 ms first byte, 100 MiB/s per connection (about 10 ms a sample).
  // Decode 20 ms: per-sample GETs 8 x (110 + 20) ms; one shard of 8 streams on while the worker
  // decodes, so after the first sample (there with the read that holds its last byte, its tar member
  // being 1 MiB + 512: 17 reads of 64 KiB, 10.6 ms) it never waits: 110.6 + 8 x 20 ms (reading and
  // decoding in turn would take 100 + 8 x 30 = 340 ms).
  const double mib = 1024.0 * 1024.0;
  const double rate = 100 * mib;
  auto costs = Reads(8);
  for (auto& c : costs.samples) {
    c.decode_s = 0.020;
    c.read_bytes = static_cast<int64_t>(mib);
  }
  SimInput in = Bare(&costs, 1, 4, 1);
  in.scenario.storage.tiers = {Tier(models::TierKind::kObjectStore, 0.1, rate)};
  EXPECT_NEAR(Makespan(in), 8 * 0.130, 1e-5);
  in.scenario.storage.tiers[0].shard_samples = 8;
  EXPECT_NEAR(Makespan(in), 0.1 + 17 * models::kStreamReadBytes / rate + 8 * 0.020, 1e-5);
  // Decode 5 ms: the stream is the bound: the last sample arrives with the shard's file, 100 ms + its
  // 8.4 MB at the rate, then 5 ms.
  for (auto& c : costs.samples) c.decode_s = 0.005;
  const double shard8_s = ShardFileBytes(8, mib) / rate;
  EXPECT_NEAR(Makespan(in), 0.1 + shard8_s + 0.005, 1e-5);
  // Shards of 4: the second shard's request leaves when the worker asks for its fifth sample (the
  // fourth arrived with the first file, 100 ms + 40 ms, and took 5 ms), its first byte 100 ms later.
  in.scenario.storage.tiers[0].shard_samples = 4;
  const double shard4_s = ShardFileBytes(4, mib) / rate;
  EXPECT_NEAR(Makespan(in), 2 * (0.1 + shard4_s + 0.005), 1e-5);
  EXPECT_NEAR(shard4_s, 0.040039, 1e-6);
}

TEST(StorageTiersSim, AStreamedReadWaitsForAStreamSlotOnlyWhileItWaitsOnTheTier) {
  // 2 workers, batch 1, 2 shards of one sample each, 100 ms first byte, transfer negligible: both
  // requests at once end at 100 ms; with max_streams 1 the second waits for the first: 200 ms.
  auto costs = Reads(2);
  SimInput in = Bare(&costs, 2, 1, 1);
  in.scenario.storage.tiers = {Tier(models::TierKind::kObjectStore, 0.1, 1e15)};
  in.scenario.storage.tiers[0].shard_samples = 1;
  EXPECT_NEAR(Makespan(in), 0.1, 1e-5);
  in.scenario.storage.tiers[0].max_streams = 1;
  EXPECT_NEAR(Makespan(in), 0.2, 1e-5);
}

TEST(StorageTiersSim, StreamedRunsAreByteIdentical) {
  // Four workers streaming three uneven shards under a stream limit and a request-rate limit: the
  // same inputs give the same raw statistics, byte for byte.
  auto costs = Reads(40);
  for (size_t i = 0; i < costs.samples.size(); ++i) costs.samples[i].decode_s = 0.001 * static_cast<double>(i % 7);
  SimInput in = Bare(&costs, 4, 2, 2);
  in.scenario.storage.tiers = {Tier(models::TierKind::kObjectStore, 0.02, 5e6, 2)};
  in.scenario.storage.tiers[0].shard_samples = 16;
  in.scenario.storage.tiers[0].requests_per_s = 20;
  auto run = [&in]() -> Result<std::string> {
    auto stats = RunSimulation(in);
    if (!stats.ok()) return stats.status();
    return RawStatsToJson(*stats).dump();
  };
  auto results = RunIsolated({run, run}, 1);
  ASSERT_TRUE(results[0].ok()) << results[0].status().message();
  ASSERT_TRUE(results[1].ok()) << results[1].status().message();
  EXPECT_EQ(*results[0], *results[1]);
}

TEST(StorageTiersSim, AStreamIsReadInWholeReads) {
  // 8 samples in one shard whose tar members are 16 KiB each (16 KiB - 512 of data and a 512-byte
  // header), 64 KiB/s, no first byte, no CPU: the reader's 64 KiB reads hold 4 members each, so samples
  // come 4 at a time, at 1 s and 2 s (a read is whole or the shard's end).
  auto costs = Reads(8);
  SimInput in = SixteenKiBMembersAt64KiBPerS(&costs, 8);
  EXPECT_NEAR(Makespan(in), 2.0, 1e-5);
  // Shards of 2: each read ends at its shard's end, the file of 2 members and the archive's end in
  // whole 10240-byte records (40960 bytes): 0.625 s per shard.
  in.scenario.storage.tiers[0].shard_samples = 2;
  EXPECT_NEAR(ShardFileBytes(2, 16384 - 512), 40960, 1e-9);
  EXPECT_NEAR(Makespan(in), 4 * 40960.0 / 65536, 1e-5);
}

TEST(StorageTiersSim, KnownShardLengthsDecideWhenAStreamBoundReaderIsDone) {
  // 1 worker, 2 shards of 4 samples whose tar members are 16 KiB, stream-bound at 64 KiB/s (no CPU, no
  // first byte). Estimated, each file is 70 KiB and its last member ends with a whole 64 KiB read: 1 s
  // a shard. Known to be 1.5 and 2.5 times the estimate, the members sit that much further along, and
  // the read holding each shard's last member runs into the file's end: 4 estimated files' time.
  auto costs = Reads(8);
  SimInput in = SixteenKiBMembersAt64KiBPerS(&costs, 4);
  EXPECT_NEAR(Makespan(in), 2.0, 1e-5);
  const double file = ShardFileBytes(4, 16384 - 512);
  EXPECT_NEAR(file, 71680, 1e-9);
  in.scenario.storage.tiers[0].shard_bytes = {1.5 * file, 2.5 * file};
  EXPECT_NEAR(Makespan(in), 4 * file / 65536, 1e-5);
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

TEST(RemoteStorage, ReaderShardSizes) {
  // 160 samples in shards of 64 (64, 64, 32): 2 workers read {64, 32} and {64}; 4 workers {64}, {64},
  // {32}, {}; inline (worker 0 of 1) all three.
  EXPECT_EQ(ReaderShardSizes(160, 64, 1, 0, 2, 0), (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(ReaderShardSizes(160, 64, 1, 0, 2, 1), (std::vector<int64_t>{64}));
  EXPECT_EQ(ReaderShardSizes(160, 64, 1, 0, 4, 2), (std::vector<int64_t>{32}));
  EXPECT_TRUE(ReaderShardSizes(160, 64, 1, 0, 4, 3).empty());
  EXPECT_EQ(ReaderShardSizes(160, 64, 1, 0, 1, 0), (std::vector<int64_t>{64, 64, 32}));
  // Two ranks of 2 workers, 5 shards of 10: rank 1's worker 0 is reader 2.
  EXPECT_EQ(ReaderShardSizes(50, 10, 2, 1, 2, 0), (std::vector<int64_t>{10}));
  EXPECT_TRUE(ReaderShardSizes(50, 0, 2, 1, 2, 0).empty());  // not streamed
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
