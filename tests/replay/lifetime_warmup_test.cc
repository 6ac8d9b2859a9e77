#include "replay/lifetime_warmup.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "replay/sample_costs.h"
#include "replay/trace_writer.h"

namespace simreplay::replay {
namespace {

// Two workers, each loading 40 same-sized images per epoch over two epochs (four lifetimes without
// persistent workers). Steady samples cost 1 ms of CPU; a lifetime's first 5 cost 3 ms, except worker
// 1's second lifetime, whose first 5 cost nothing extra.
std::vector<SampleRecord> Samples() {
  std::vector<SampleRecord> out;
  int64_t index = 0;
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    for (int64_t worker = 0; worker < 2; ++worker) {
      for (int64_t o = 0; o < 40; ++o) {
        SampleRecord s;
        s.epoch = epoch;
        s.worker = worker;
        s.index = index++;
        s.batch = (o / 4) * 2 + worker;
        s.t_start_ns = epoch * 1'000'000'000 + o * 1'000'000;
        s.format = "jpeg";
        s.width = 10;
        s.height = 10;
        s.frames = 1;
        const bool warm = o < 5 && !(epoch == 1 && worker == 1);
        s.cpu_ns = warm ? 3'000'000 : 1'000'000;
        s.decode_ns = s.cpu_ns / 2;
        s.augment_ns = s.cpu_ns / 2;
        s.read_ns = 100'000;
        out.push_back(s);
      }
    }
  }
  return out;
}

TEST(LifetimeWarmup, EachLifetimesExcessOverItsWindow) {
  const auto samples = Samples();
  TraceSamples t;
  for (const auto& s : samples) t.samples.push_back(&s);
  const LifetimeWarmup w = MeasureLifetimeWarmup({t}, 10);
  ASSERT_TRUE(w.measured);
  ASSERT_EQ(w.lifetimes.size(), 4u);
  EXPECT_DOUBLE_EQ(w.window_samples, 40);
  // Steady: 1 ms per sample; three lifetimes paid 5 x 2 ms extra, one none.
  EXPECT_NEAR(w.lifetimes[0].excess_cpu_s, 0.010, 1e-12);
  EXPECT_NEAR(w.lifetimes[0].window_cpu_s, 0.020, 1e-12);
  EXPECT_NEAR(w.lifetimes[3].excess_cpu_s, 0.0, 1e-12);
  // Persistent workers: one lifetime per worker, the second epoch's expensive samples fall past it.
  t.persistent_workers = true;
  const LifetimeWarmup p = MeasureLifetimeWarmup({t}, 10);
  ASSERT_EQ(p.lifetimes.size(), 2u);
  EXPECT_NEAR(p.lifetimes[0].excess_cpu_s, 0.010, 1e-12);
}

TEST(LifetimeWarmup, TooFewSamplesPastTheWindowIsNotMeasured) {
  const auto samples = Samples();
  TraceSamples t;
  for (const auto& s : samples) t.samples.push_back(&s);
  EXPECT_FALSE(MeasureLifetimeWarmup({t}, 36).measured);  // 4 x 4 samples past it: fewer than 20
}

TEST(SampleCosts, ReplayTakesEachLifetimesWarmupOutOfItsWindow) {
  std::string path = ::testing::TempDir() + "/warmup_replay.jsonl";
  TraceHeader header;
  header.manifest = {{"loader", {{"num_workers", 2}, {"persistent_workers", false}}}};
  auto writer = TraceWriter::Create(path, header);
  ASSERT_TRUE(writer.ok());
  for (const auto& s : Samples()) ASSERT_TRUE((*writer)->Write(s).ok());
  ASSERT_TRUE((*writer)->Close().ok());

  auto as_recorded = LoadSampleCosts({path});
  auto without = LoadSampleCosts({path}, RecordedWarmup{10, {}});
  ASSERT_TRUE(as_recorded.ok() && without.ok());
  ASSERT_EQ(as_recorded->samples.size(), without->samples.size());
  double recorded = 0, removed = 0;
  for (size_t i = 0; i < without->samples.size(); ++i) {
    const auto& a = as_recorded->samples[i];
    const auto& b = without->samples[i];
    recorded += a.decode_s + a.augment_s;
    removed += b.decode_s + b.augment_s;
    EXPECT_DOUBLE_EQ(a.read_s, b.read_s);  // reads are I/O: untouched
    // Every window sample of a lifetime that paid 10 ms over 20 ms keeps half its cost; the rest stay.
    EXPECT_TRUE(b.decode_s == a.decode_s || std::abs(b.decode_s - a.decode_s / 2) < 1e-15) << i;
  }
  // Three lifetimes' excess, 10 ms each, is gone, and only that.
  EXPECT_NEAR(recorded - removed, 0.030, 1e-9);

  // Priced with a calibration's steady cost (1.5 ms per sample here, 15 us per unit): 5 ms off each of
  // the three lifetimes that paid 20 ms over their window, 5 ms added to the one that paid 10 ms.
  auto priced = LoadSampleCosts({path}, RecordedWarmup{10, {{"jpeg", 1.5e-3 / 100}}});
  ASSERT_TRUE(priced.ok());
  double total = 0;
  for (const auto& c : priced->samples) total += c.decode_s + c.augment_s;
  EXPECT_NEAR(recorded - total, 3 * 0.005 - 0.005, 1e-9);
}

}  // namespace
}  // namespace simreplay::replay
