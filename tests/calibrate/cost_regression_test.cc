#include "calibrate/cost_regression.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace simreplay::calibrate {
namespace {

// y = 1 ms + 2 ns/byte + 5 ns/pixel, over varied sizes; every 10th point is a 5x outlier.
TEST(FitHuber, RecoversKnownCoefficientsDespiteOutliers) {
  const int n = 200;
  Eigen::MatrixXd x(n, 2);
  Eigen::VectorXd y(n);
  for (int i = 0; i < n; ++i) {
    double bytes = 10'000 + 997.0 * (i * 37 % n);
    double pixels = 50'000 + 1'301.0 * (i * 53 % n);
    x(i, 0) = bytes;
    x(i, 1) = pixels;
    y[i] = 1e-3 + 2e-9 * bytes + 5e-9 * pixels;
    if (i % 10 == 0) y[i] *= 5;
  }
  auto fit = FitHuber(x, y, {"bytes", "pixels"}, "test");
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  // Huber down-weights but does not reject outliers: 10% of 5x outliers bias it by a few percent.
  EXPECT_NEAR(fit->coefficients[0], 1e-3, 0.05e-3);
  EXPECT_NEAR(fit->coefficients[1], 2e-9, 0.05 * 2e-9);
  EXPECT_NEAR(fit->coefficients[2], 5e-9, 0.05 * 5e-9);
  EXPECT_TRUE(fit->converged);
  EXPECT_FALSE(fit->low_confidence);
  ASSERT_EQ(fit->residual_ratios.quantiles.size(), ResidualQuantileProbs().size());
  EXPECT_NEAR(fit->residual_ratios.quantiles[10], 1.0, 0.05);  // median ratio
  EXPECT_EQ(fit->residual_ratios.bin_means.size(), ResidualQuantileProbs().size() - 1);
}

// The bin means carry a heavy tail's weight: the mean of the bins is the mean of the observations,
// where the quantiles alone, read linearly, put the top bin halfway to the maximum.
TEST(ResidualRatios, BinMeansKeepTheObservedMean) {
  std::vector<double> ratios;
  for (int i = 0; i < 199; ++i) ratios.push_back(0.8 + 0.002 * i);  // 0.8 .. 1.196
  ratios.push_back(190.0);                                          // one sample 190x its prediction
  double observed_mean = 0;
  for (double r : ratios) observed_mean += r / static_cast<double>(ratios.size());
  const ResidualRatios summary = SummarizeResidualRatios(ratios);
  ASSERT_EQ(summary.quantiles.size(), 21u);
  ASSERT_EQ(summary.bin_means.size(), 20u);
  EXPECT_EQ(summary.quantiles.front(), 0.8);
  EXPECT_EQ(summary.quantiles.back(), 190.0);
  double bins_mean = 0, linear_mean = 0;
  for (size_t b = 0; b < 20; ++b) {
    EXPECT_GE(summary.bin_means[b], summary.quantiles[b]);
    EXPECT_LE(summary.bin_means[b], summary.quantiles[b + 1]);
    bins_mean += summary.bin_means[b] / 20;
    linear_mean += (summary.quantiles[b] + summary.quantiles[b + 1]) / 2 / 20;
  }
  // 200 observations in 20 rank bins of 10: the bins' mean is the observations' mean.
  EXPECT_NEAR(bins_mean, observed_mean, 1e-9);
  EXPECT_GT(linear_mean, 2.5 * observed_mean);  // what the former draw averaged
  nlohmann::json j;
  summary.AddTo(&j);
  EXPECT_EQ(j["residual_ratio_bin_means"].size(), 20u);
}

TEST(ResidualRatios, FewerObservationsThanBins) {
  const ResidualRatios summary = SummarizeResidualRatios({2.0, 1.0, 3.0});
  ASSERT_EQ(summary.bin_means.size(), 20u);
  for (size_t b = 0; b < 20; ++b) {
    EXPECT_GE(summary.bin_means[b], summary.quantiles[b]);
    EXPECT_LE(summary.bin_means[b], summary.quantiles[b + 1]);
  }
  EXPECT_TRUE(SummarizeResidualRatios({}).quantiles.empty());
}

TEST(FitHuber, ExactDataFitsExactly) {
  Eigen::MatrixXd x(30, 1);
  Eigen::VectorXd y(30);
  for (int i = 0; i < 30; ++i) {
    x(i, 0) = 1000.0 * (i + 1);
    y[i] = 50e-6 + x(i, 0) / 1e9;
  }
  auto fit = FitHuber(x, y, {"bytes"}, "test");
  ASSERT_TRUE(fit.ok());
  EXPECT_NEAR(fit->coefficients[0], 50e-6, 1e-12);
  EXPECT_NEAR(1 / fit->coefficients[1], 1e9, 1e3);
  EXPECT_NEAR(fit->r2, 1.0, 1e-12);
}

TEST(FitHuber, DropsConstantAndNegativeSlopeFeatures) {
  Eigen::MatrixXd x(40, 2);
  Eigen::VectorXd y(40);
  for (int i = 0; i < 40; ++i) {
    x(i, 0) = 7;  // constant: absorbed by the intercept
    x(i, 1) = i;  // cost decreases with it: slope would be negative
    y[i] = 0.01 - 1e-5 * i;
  }
  auto fit = FitHuber(x, y, {"frames", "bytes"}, "test");
  ASSERT_TRUE(fit.ok());
  EXPECT_FALSE(fit->used[1]);
  EXPECT_FALSE(fit->used[2]);
  EXPECT_EQ(fit->coefficients[2], 0.0);
  EXPECT_GT(fit->coefficients[0], 0.0);
}

TEST(FitHuber, OneSampleIsLowConfidenceNotAnError) {
  Eigen::MatrixXd x(1, 1);
  x(0, 0) = 100;
  Eigen::VectorXd y(1);
  y[0] = 0.02;
  auto fit = FitHuber(x, y, {"bytes"}, "test");
  ASSERT_TRUE(fit.ok());
  EXPECT_TRUE(fit->low_confidence);
  EXPECT_NEAR(fit->Predict({100}), 0.02, 1e-12);
}

TEST(FitHuber, AllZeroObservationsAreLowConfidence) {
  Eigen::MatrixXd x = Eigen::MatrixXd::Zero(25, 1);
  Eigen::VectorXd y = Eigen::VectorXd::Zero(25);
  auto fit = FitHuber(x, y, {"bytes"}, "test");
  ASSERT_TRUE(fit.ok());
  EXPECT_TRUE(fit->low_confidence);
}

TEST(FitHuber, RejectsNaNAndEmpty) {
  Eigen::MatrixXd x(3, 1);
  x << 1, 2, 3;
  Eigen::VectorXd y(3);
  y << 1, std::numeric_limits<double>::quiet_NaN(), 3;
  auto fit = FitHuber(x, y, {"bytes"}, "data");
  ASSERT_FALSE(fit.ok());
  EXPECT_NE(fit.status().message().find("data: observation 1"), std::string::npos);
  EXPECT_FALSE(FitHuber(Eigen::MatrixXd(0, 1), Eigen::VectorXd(0), {"bytes"}, "data").ok());
}

}  // namespace
}  // namespace simreplay::calibrate
