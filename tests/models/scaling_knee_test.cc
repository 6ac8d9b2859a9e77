// The one scaling-knee definition that plan and what-if share (models/scaling_knee.h).
#include "models/scaling_knee.h"

#include <gtest/gtest.h>

namespace simreplay::models {
namespace {

TEST(ScalingKnee, MarginalFractionAgainstTheSmallestCluster) {
  // 8, 16, 32 GPUs at 100, 190, 250 samples/s: 12.5 samples/s per GPU at 8 GPUs. 8 -> 16 adds 90 over
  // 8 GPUs = 11.25 per GPU = 0.9 of linear; 16 -> 32 adds 60 over 16 GPUs = 3.75 = 0.3 of linear.
  // Efficiencies: 190 / 16 / 12.5 = 0.95, 250 / 32 / 12.5 = 0.625.
  const auto curve = ComputeScaling({{16, 190}, {8, 100}, {32, 250}});  // any order: sorted by GPUs
  ASSERT_EQ(curve.size(), 3u);
  EXPECT_EQ(curve[0].gpus, 8);
  EXPECT_DOUBLE_EQ(curve[0].marginal_fraction, 1);
  EXPECT_NEAR(curve[1].marginal_fraction, 0.9, 1e-12);
  EXPECT_NEAR(curve[2].marginal_fraction, 0.3, 1e-12);
  EXPECT_NEAR(curve[1].efficiency, 0.95, 1e-12);
  EXPECT_NEAR(curve[2].efficiency, 0.625, 1e-12);
  EXPECT_EQ(FindKnee(curve, 0.5), 2);
  EXPECT_EQ(FindKnee(curve, 0.95), 1);  // 0.9 < 0.95: the first step is already past it
  EXPECT_EQ(FindKnee(curve, 0.25), -1);
}

TEST(ScalingKnee, ComparesWithTheSmallestClusterNotThePreviousPoint) {
  // 8 -> 16 -> 64 GPUs at 100, 150, 240: against the previous point's per-GPU rate (150 / 16 = 9.375)
  // the last step buys 90 / 48 / 9.375 = 0.2 of linear; against the smallest cluster's (12.5) it buys
  // 90 / 48 / 12.5 = 0.15. The shared definition is the latter.
  const auto curve = ComputeScaling({{8, 100}, {16, 150}, {64, 240}});
  EXPECT_NEAR(curve[2].marginal_fraction, 0.15, 1e-12);
}

TEST(ScalingKnee, DegenerateCurves) {
  EXPECT_TRUE(ComputeScaling({}).empty());
  EXPECT_EQ(FindKnee(ComputeScaling({{8, 100}}), 0.5), -1);
  // A zero-throughput smallest cluster gives no fractions (all stay 1): no knee.
  EXPECT_EQ(FindKnee(ComputeScaling({{8, 0}, {16, 10}}), 0.5), -1);
  // Equal GPU counts (two sweep points of the same cluster size) are never a knee.
  EXPECT_EQ(FindKnee(ComputeScaling({{8, 100}, {8, 50}}), 0.5), -1);
}

}  // namespace
}  // namespace simreplay::models
