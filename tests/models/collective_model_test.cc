// The one home of the ring and hierarchical all-reduce closed forms (models/collective_model.h).
#include "models/collective_model.h"

#include <gtest/gtest.h>

#include "models/model_params.h"

namespace simreplay::models {
namespace {

TEST(CollectiveModel, BusFractionsAreNcclTestsBusbwOverAlgbw) {
  // nccl-tests doc/PERFORMANCE.md: all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n.
  EXPECT_DOUBLE_EQ(AllReduceBusFraction(8), 1.75);
  EXPECT_DOUBLE_EQ(HalfCollectiveBusFraction(8), 0.875);
  EXPECT_DOUBLE_EQ(AllReduceBusFraction(2), 1.0);
  EXPECT_EQ(AllReduceBusFraction(1), 0.0);  // one rank moves nothing
  EXPECT_EQ(HalfCollectiveBusFraction(1), 0.0);
}

TEST(CollectiveModel, RingAndHierarchicalForms) {
  // Ring over 4 ranks, 1 GB at 100 GB/s, 20 us per step: 1.5 x 0.01 s + 6 x 20 us.
  EXPECT_NEAR(RingAllReduceS(4, 1e9, 100e9, 20e-6), 0.015 + 120e-6, 1e-15);
  EXPECT_NEAR(RingHalfS(4, 1e9, 100e9, 20e-6), 0.0075 + 60e-6, 1e-15);
  // Hierarchical, 2 nodes x 8 GPUs: 2 x (7/8 x 1 GB / 300 GB/s + 7 x 2 us) + (1 x 1 GB / 50 GB/s + 2 x 5 us).
  EXPECT_NEAR(HierarchicalAllReduceS(2, 8, 1e9, 300e9, 2e-6, 50e9, 5e-6),
              2 * (0.875e9 / 300e9 + 7 * 2e-6) + 0.02 + 10e-6, 1e-14);
}

TEST(CollectiveModel, TheModelFilesPerStepEstimateIsTheRingForm) {
  // ModelParams::CollectiveTimeS calls RingAllReduceS: the same number, not a copy of the formula.
  ModelParams m;
  m.collective.gradient_bytes = 3e8;
  m.collective.bus_bytes_per_s = 12.5e9;
  m.collective.alpha_s = 14e-6;
  for (int n : {2, 3, 8, 64}) {
    EXPECT_DOUBLE_EQ(m.CollectiveTimeS(n), RingAllReduceS(n, 3e8, 12.5e9, 14e-6)) << n;
  }
}

}  // namespace
}  // namespace simreplay::models
