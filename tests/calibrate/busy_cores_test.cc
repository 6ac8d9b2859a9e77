#include "calibrate/busy_cores.h"

#include <gtest/gtest.h>

namespace simreplay::calibrate {
namespace {

TEST(BusyCores, OverlapOfHandPlacedSamples) {
  // 2 cores. A [0, 10), B [5, 15), C [20, 30): A overlaps B for half its time, B overlaps A for half,
  // C runs alone.
  std::vector<BusyCoreSample> s = {{0, 10, 1, 0, "x"}, {5, 10, 1, 0, "x"}, {20, 10, 1, 0, "x"}};
  auto o = SampleOverlaps(s, 2);
  ASSERT_EQ(o.size(), 3u);
  EXPECT_NEAR(o[0], 0.5, 1e-12);
  EXPECT_NEAR(o[1], 0.5, 1e-12);
  EXPECT_NEAR(o[2], 0.0, 1e-12);
  // 4 cores: the same overlap is a third of the other cores.
  EXPECT_NEAR(SampleOverlaps(s, 4)[0], 0.5 / 3, 1e-12);
}

TEST(BusyCores, RecoversAKnownSlowdown) {
  // Pairs of samples, alternately alone and side by side on 2 cores; CPU = (1 ms + 2 ns/pixel) x
  // (1 + 0.15 x overlap). The additive fit a + b x pixels + c x overlap approximates the multiplicative
  // truth (c stands for 0.15 x the mean base): 0.15 within 1e-4.
  std::vector<BusyCoreSample> s;
  double t = 0;
  for (int i = 0; i < 200; ++i) {
    double pixels = 1000.0 * (1 + i % 7);
    double base = 0.001 + 2e-9 * pixels;
    if (i % 2 == 0) {
      s.push_back({t, 0.01, base, pixels, "jpeg"});
      t += 0.02;
    } else {
      s.push_back({t, 0.01, base * 1.15, pixels, "jpeg"});
      s.push_back({t, 0.01, base * 1.15, pixels, "jpeg"});
      t += 0.02;
    }
  }
  auto e = EstimateBusyCoreSlowdown(s, 2);
  EXPECT_TRUE(e.measured) << e.note;
  EXPECT_NEAR(e.slowdown, 0.15, 1e-4);
}

TEST(BusyCores, NotMeasuredWithoutOverlapVariation) {
  std::vector<BusyCoreSample> s;
  for (int i = 0; i < 100; ++i) s.push_back({i * 0.02, 0.01, 0.001, 1000, "jpeg"});
  auto e = EstimateBusyCoreSlowdown(s, 2);
  EXPECT_FALSE(e.measured);
  EXPECT_EQ(e.slowdown, 0.0);
  EXPECT_FALSE(EstimateBusyCoreSlowdown(s, 1).measured);
}

// Warm-up windows coincide with overlap (every worker starts at an epoch's start) and cost extra CPU
// of their own (the allocator): left out of the fit, they still count in the others' overlap.
TEST(BusyCores, WarmupWindowsAreLeftOutOfTheFit) {
  // Steady samples: 1 ms + 2 ns/pixel whatever the overlap (+-5% of deterministic noise), half of them
  // side by side with another steady one. Warm-up samples: 3x that, always side by side (two processes
  // starting together).
  std::vector<BusyCoreSample> s;
  double t = 0;
  auto cost = [](int i, double pixels) { return (0.001 + 2e-9 * pixels) * (1 + 0.01 * ((i * 37) % 11 - 5)); };
  for (int i = 0; i < 200; ++i) {
    const double pixels = 1000.0 * (1 + i % 7);
    s.push_back({t, 0.01, cost(i, pixels), pixels, "jpeg"});
    if (i % 2 == 1) s.push_back({t, 0.01, cost(i + 1, pixels), pixels, "jpeg"});
    t += 0.02;
  }
  for (int i = 0; i < 30; ++i) {
    const double pixels = 1000.0 * (1 + i % 7);
    s.push_back({t, 0.01, 3 * cost(i, pixels), pixels, "jpeg", true});
    s.push_back({t, 0.01, 3 * cost(i + 3, pixels), pixels, "jpeg", true});
    t += 0.02;
  }
  auto e = EstimateBusyCoreSlowdown(s, 2);
  EXPECT_FALSE(e.measured) << e.note;  // steady cost does not depend on overlap
  EXPECT_EQ(e.slowdown, 0.0);
  EXPECT_EQ(e.samples, 300);
  EXPECT_NE(e.note.find("60 samples of warm-up windows left out"), std::string::npos) << e.note;
  // Counted as steady, the warm-up excess reads as a slowdown.
  for (auto& sample : s) sample.warmup = false;
  auto confounded = EstimateBusyCoreSlowdown(s, 2);
  EXPECT_TRUE(confounded.measured) << confounded.note;
  EXPECT_GT(confounded.slowdown, 0.3);
}

}  // namespace
}  // namespace simreplay::calibrate
