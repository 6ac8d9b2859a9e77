#include "sim/raw_stats_codec.h"

#include <cmath>
#include <cstring>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace simreplay::sim {
namespace {

TEST(RawStatsCodec, RoundTripsEveryFieldExactly) {
  SimRawStats s;
  s.makespan_s = 0.1 + 0.2;  // not representable in short decimal: must come back bit for bit
  s.samples_consumed = 123;
  s.micro_batches = 7;
  s.wait_s = {1.0 / 3, 2e-9};
  s.step_s = {0.02, 0.020000000000000004};
  s.queue_wait_s = {5};
  s.read_s.Add(1e-3);
  s.decode_s.Add(2e-3);
  s.decode_s.Add(3e-3);
  for (size_t i = 0; i <= LatencySummary::kExactLimit; ++i) s.augment_s.Add(4e-3);  // the sketch form
  s.time_to_first_batch_s = 0.5;
  s.epoch_boundary_stall_s = 0.25;
  s.gpu_busy_s = 1.5;
  s.h2d_s = 0.125;
  s.collective_s = 0.0625;
  s.cpu_busy_core_s = 3.75;
  s.worker_busy_s = 2.5;
  s.worker_count = 2;
  s.main_busy_s = 0.75;
  s.pin_busy_s = 0.375;
  s.storage_busy_s = 0.875;
  s.storage_read_bytes = 1 << 20;
  s.peak_host_memory_bytes = 1e9;
  s.worker_starts = 4;
  s.timeline_truncated = true;
  s.checkpoint = CheckpointStats{3, 1.0 / 7, 0.1 + 0.7, 3e9};
  s.simulated_nodes = 8;
  s.rank_folding_wait_spread = 1.0 / 3;
  auto d = DecodeRawStats(EncodeRawStats(s));
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->makespan_s, s.makespan_s);
  EXPECT_EQ(d->simulated_nodes, s.simulated_nodes);
  EXPECT_EQ(d->rank_folding_wait_spread, s.rank_folding_wait_spread);
  EXPECT_EQ(d->samples_consumed, s.samples_consumed);
  EXPECT_EQ(d->micro_batches, s.micro_batches);
  EXPECT_EQ(d->wait_s, s.wait_s);
  EXPECT_EQ(d->step_s, s.step_s);
  EXPECT_EQ(d->queue_wait_s, s.queue_wait_s);
  EXPECT_EQ(d->read_s.ToJson(), s.read_s.ToJson());
  EXPECT_EQ(d->decode_s.ToJson(), s.decode_s.ToJson());
  EXPECT_EQ(d->augment_s.ToJson(), s.augment_s.ToJson());
  EXPECT_EQ(d->time_to_first_batch_s, s.time_to_first_batch_s);
  EXPECT_EQ(d->epoch_boundary_stall_s, s.epoch_boundary_stall_s);
  EXPECT_EQ(d->gpu_busy_s, s.gpu_busy_s);
  EXPECT_EQ(d->h2d_s, s.h2d_s);
  EXPECT_EQ(d->collective_s, s.collective_s);
  EXPECT_EQ(d->cpu_busy_core_s, s.cpu_busy_core_s);
  EXPECT_EQ(d->worker_busy_s, s.worker_busy_s);
  EXPECT_EQ(d->worker_count, s.worker_count);
  EXPECT_EQ(d->main_busy_s, s.main_busy_s);
  EXPECT_EQ(d->pin_busy_s, s.pin_busy_s);
  EXPECT_EQ(d->storage_busy_s, s.storage_busy_s);
  EXPECT_EQ(d->storage_read_bytes, s.storage_read_bytes);
  EXPECT_EQ(d->peak_host_memory_bytes, s.peak_host_memory_bytes);
  EXPECT_EQ(d->checkpoint.saves, s.checkpoint.saves);
  EXPECT_EQ(d->checkpoint.stall_s, s.checkpoint.stall_s);
  EXPECT_EQ(d->checkpoint.write_s, s.checkpoint.write_s);
  EXPECT_EQ(d->checkpoint.bytes_written, s.checkpoint.bytes_written);
  EXPECT_EQ(d->worker_starts, s.worker_starts);
  EXPECT_EQ(d->timeline_truncated, s.timeline_truncated);
}

TEST(RawStatsCodec, NonFiniteValuesComeBackAsNaN) {
  SimRawStats s;
  s.makespan_s = INFINITY;
  auto d = DecodeRawStats(EncodeRawStats(s));
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(std::isnan(d->makespan_s));
}

TEST(RawStatsCodec, RejectsForeignBytes) {
  EXPECT_FALSE(DecodeRawStats("{\"makespan_s\": 1}").ok());
  EXPECT_FALSE(DecodeRawStats("not json").ok());
  EXPECT_FALSE(DecodeRawStats("").ok());
  // valid MessagePack of another document, and a document cut short
  std::string other;
  nlohmann::json::to_msgpack(nlohmann::json{{"makespan_s", 1}}, other);
  EXPECT_FALSE(DecodeRawStats(other).ok());
  SimRawStats s;
  s.wait_s = {1, 2, 3};
  const std::string whole = EncodeRawStats(s);
  EXPECT_FALSE(DecodeRawStats(whole.substr(0, whole.size() / 2)).ok());
}

// The per-step arrays travel as binary doubles: every bit comes back, whatever the value.
TEST(RawStatsCodec, DoublesComeBackBitForBit) {
  SimRawStats s;
  s.step_s = {0.1, 1.0 / 3, -0.0, 5e-324, 1.7976931348623157e308, 0.25, 123456789.123456789};
  auto d = DecodeRawStats(EncodeRawStats(s));
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->step_s.size(), s.step_s.size());
  for (size_t i = 0; i < s.step_s.size(); ++i) {
    EXPECT_EQ(std::memcmp(&d->step_s[i], &s.step_s[i], sizeof(double)), 0) << i;
  }
}

}  // namespace
}  // namespace simreplay::sim
