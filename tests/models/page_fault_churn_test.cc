// The page-fault churn fit (models/page_fault_churn.h): each expectation worked out by hand.
#include "models/page_fault_churn.h"

#include <gtest/gtest.h>

namespace simreplay::models {
namespace {

TEST(FitPageFaultChurn, RecoversTheCostOfAFaultAndItsShare) {
  // cpu = 2 ms + faults x 15 us, faults 0, 100, 200, 300 in turn (mean 150), +-10 us of noise that
  // does not correlate with them: slope 15 us, share 15e-6 x 150 / (2e-3 + 2.25e-3) = 0.5294.
  std::vector<FaultSample> s;
  for (int i = 0; i < 200; ++i) {
    const double faults = 100.0 * (i % 4);
    const double noise = (i / 4) % 2 == 0 ? 1e-5 : -1e-5;
    s.push_back({2e-3 + faults * 15e-6 + noise, faults});
  }
  const PageFaultFit f = FitPageFaultChurn(s);
  ASSERT_TRUE(f.measured) << f.note;
  EXPECT_NEAR(f.fault_cost_s, 15e-6, 1e-9);
  EXPECT_NEAR(f.no_fault_cpu_s, 2e-3, 1e-7);
  EXPECT_NEAR(f.faults_per_sample, 150, 1e-9);
  EXPECT_NEAR(f.cpu_share, 2.25 / 4.25, 1e-4);
  EXPECT_GT(f.r2, 0.99);
  EXPECT_NE(f.note.find("150 page faults per sample at 15.0 us each"), std::string::npos) << f.note;
}

TEST(FitPageFaultChurn, TooFewSamplesConstantFaultsOrNoRelationMeasureNothing) {
  EXPECT_FALSE(FitPageFaultChurn({}).measured);
  std::vector<FaultSample> few(kMinFaultSamples - 1, {1e-3, 10});
  for (size_t i = 0; i < few.size(); ++i) few[i].faults = static_cast<double>(i);
  PageFaultFit f = FitPageFaultChurn(few);
  EXPECT_FALSE(f.measured);
  EXPECT_NE(f.note.find("at least 50"), std::string::npos) << f.note;
  std::vector<FaultSample> constant(100, {1e-3, 40});
  for (size_t i = 0; i < constant.size(); ++i) constant[i].cpu_s += 1e-6 * static_cast<double>(i);
  f = FitPageFaultChurn(constant);
  EXPECT_FALSE(f.measured);
  EXPECT_NE(f.note.find("do not vary"), std::string::npos) << f.note;
  // Faults alternate 0/100, the CPU alternates in pairs: no covariance, slope 0, nothing measured.
  std::vector<FaultSample> unrelated;
  for (int i = 0; i < 100; ++i) unrelated.push_back({i % 4 < 2 ? 1.1e-3 : 0.9e-3, 100.0 * (i % 2)});
  f = FitPageFaultChurn(unrelated);
  EXPECT_FALSE(f.measured);
  EXPECT_EQ(f.cpu_share, 0);
  EXPECT_NE(f.note.find("beyond noise"), std::string::npos) << f.note;
}

TEST(FitPageFaultChurn, TheShareIsCappedBelowOne) {
  // Nearly all of the CPU in faults (intercept ~0): the share stays at most 0.95 so that taking it
  // off never leaves a sample with no cost.
  std::vector<FaultSample> s;
  for (int i = 0; i < 100; ++i) s.push_back({(1 + i % 5) * 1e-3, (1 + i % 5) * 100.0});
  const PageFaultFit f = FitPageFaultChurn(s);
  ASSERT_TRUE(f.measured) << f.note;
  EXPECT_DOUBLE_EQ(f.cpu_share, 0.95);
}

}  // namespace
}  // namespace simreplay::models
