#include "common/quantile.h"

#include <gtest/gtest.h>

namespace simreplay {
namespace {

TEST(QuantileLinear, InterpolatesBetweenOrderStatistics) {
  const std::vector<double> v = {4, 1, 3, 2};  // sorted 1 2 3 4, positions 0..3
  EXPECT_DOUBLE_EQ(QuantileLinear(v, 0.0), 1);
  EXPECT_DOUBLE_EQ(QuantileLinear(v, 1.0), 4);
  EXPECT_DOUBLE_EQ(QuantileLinear(v, 0.5), 2.5);    // position 1.5
  EXPECT_DOUBLE_EQ(QuantileLinear(v, 0.95), 3.85);  // position 2.85 -> 3 + 0.85 x (4 - 3)
  EXPECT_DOUBLE_EQ(QuantileLinear(v, 2.0), 4);      // clamped
}

TEST(QuantileNearestRank, ReturnsAnObservation) {
  const std::vector<double> v = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(QuantileNearestRank(v, 0.0), 1);   // rank ceil(0) -> first
  EXPECT_DOUBLE_EQ(QuantileNearestRank(v, 0.5), 2);   // rank ceil(2) = 2
  EXPECT_DOUBLE_EQ(QuantileNearestRank(v, 0.51), 3);  // rank ceil(2.04) = 3
  EXPECT_DOUBLE_EQ(QuantileNearestRank(v, 0.99), 4);  // rank ceil(3.96) = 4
  EXPECT_DOUBLE_EQ(QuantileNearestRank(v, 1.0), 4);
}

TEST(Quantile, SingleValueIsThatValue) {
  EXPECT_DOUBLE_EQ(QuantileLinear({7}, 0.3), 7);
  EXPECT_DOUBLE_EQ(QuantileNearestRank({7}, 0.3), 7);
}

}  // namespace
}  // namespace simreplay
