// Closed-form checks of the validation statistics.
#include "validation/statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace simreplay::validation {
namespace {

TEST(Statistics, MeanAndSampleStdDev) {
  EXPECT_DOUBLE_EQ(Mean({1, 2, 3, 4}), 2.5);
  // sum of squares about 2.5 = 5; / (n - 1) = 5/3
  EXPECT_DOUBLE_EQ(StdDev({1, 2, 3, 4}), std::sqrt(5.0 / 3.0));
  EXPECT_DOUBLE_EQ(StdDev({7}), 0);
}

TEST(Statistics, BootstrapOfConstantSampleIsThatConstant) {
  Interval ci = BootstrapInterval({3, 3, 3, 3, 3}, Statistic::kMedian, {});
  EXPECT_DOUBLE_EQ(ci.low, 3);
  EXPECT_DOUBLE_EQ(ci.high, 3);
}

TEST(Statistics, BootstrapOfOneValueIsThatValue) {
  Interval ci = BootstrapInterval({7.5}, Statistic::kMean, {});
  EXPECT_DOUBLE_EQ(ci.low, 7.5);
  EXPECT_DOUBLE_EQ(ci.high, 7.5);
}

TEST(Statistics, BootstrapOfTwoPointsCoversTheResamplingDistribution) {
  // Resampling {0, 1} twice: the mean is 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4, so the 2.5% and
  // 97.5% quantiles of 2000 replicates are 0 and 1 (each end holds ~500 replicates).
  Interval ci = BootstrapInterval({0, 1}, Statistic::kMean, {2000, 7, 0.95});
  EXPECT_DOUBLE_EQ(ci.low, 0);
  EXPECT_DOUBLE_EQ(ci.high, 1);
  // An 40% interval (30%..70% quantiles) lies wholly in the 0.5 atom.
  Interval narrow = BootstrapInterval({0, 1}, Statistic::kMean, {2000, 7, 0.40});
  EXPECT_DOUBLE_EQ(narrow.low, 0.5);
  EXPECT_DOUBLE_EQ(narrow.high, 0.5);
}

TEST(Statistics, BootstrapIsDeterministicGivenSeed) {
  std::vector<double> v = {120, 180, 150, 430, 160};
  Interval a = BootstrapInterval(v, Statistic::kMedian, {2000, 1, 0.95});
  Interval b = BootstrapInterval(v, Statistic::kMedian, {2000, 1, 0.95});
  EXPECT_EQ(a.low, b.low);
  EXPECT_EQ(a.high, b.high);
  // The median of a resample is one of the values: so are the interval ends (odd n).
  EXPECT_TRUE(std::count(v.begin(), v.end(), a.low) == 1);
  EXPECT_TRUE(std::count(v.begin(), v.end(), a.high) == 1);
  EXPECT_LE(a.low, Median(v));
  EXPECT_GE(a.high, Median(v));
}

TEST(Statistics, PairedRatioOfExactDoublingIsOneHundredPercent) {
  double point = 0;
  Interval ci = PairedRatioInterval({100, 200, 50}, {200, 400, 100}, {}, &point);
  EXPECT_DOUBLE_EQ(point, 1.0);
  EXPECT_DOUBLE_EQ(ci.low, 1.0);
  EXPECT_DOUBLE_EQ(ci.high, 1.0);
}

TEST(Statistics, KendallTauB) {
  EXPECT_DOUBLE_EQ(KendallTauB({1, 2, 3}, {10, 20, 30}), 1);
  EXPECT_DOUBLE_EQ(KendallTauB({1, 2, 3}, {30, 20, 10}), -1);
  // One discordant pair of six: (5 - 1) / 6.
  EXPECT_DOUBLE_EQ(KendallTauB({1, 2, 3, 4}, {1, 3, 2, 4}), 4.0 / 6.0);
  // A tie in x: n0 = 3, n1 = 1, n2 = 0, concordant 2 -> 2 / sqrt(2 * 3).
  EXPECT_DOUBLE_EQ(KendallTauB({1, 1, 2}, {1, 2, 3}), 2.0 / std::sqrt(6.0));
  EXPECT_DOUBLE_EQ(KendallTauB({1, 1}, {1, 2}), 0);
  EXPECT_DOUBLE_EQ(KendallTauB({1}, {1}), 0);
}

TEST(Statistics, ArgMaxTakesFirstOnTies) { EXPECT_EQ(ArgMax({1, 5, 5, 2}), 1u); }

}  // namespace
}  // namespace simreplay::validation
