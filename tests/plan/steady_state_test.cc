// The steady-state detector and the extrapolation on series whose answer is known in closed form.
#include "plan/steady_state.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

namespace simreplay::plan {
namespace {

TEST(SteadyState, ConstantAfterStartupExtrapolatesExactly) {
  // Step 0 takes 2 s (start-up), the next 9 steps decay from 1.5 s towards 1 s, then 1 s forever.
  std::vector<double> x = {2.0};
  for (int k = 1; k < 10; ++k) x.push_back(1.0 + 0.5 / k);
  for (int k = 10; k < 400; ++k) x.push_back(1.0);
  const EpochGeometry no_epochs{1'000'000, 1};  // one long epoch: no boundary inside the job
  SteadyState st = DetectSteadyState(x, no_epochs, 0.005);
  ASSERT_TRUE(st.steady) << st.detail;
  EXPECT_FALSE(st.periodic);
  EXPECT_DOUBLE_EQ(st.step_s, 1.0);
  // Windows of max(8, 400/16 = 25) steps; window 1 (steps 25-49) is already flat, so the steady part
  // starts at step 25: warm-up = sum of the first 25 intervals.
  EXPECT_EQ(st.warmup_steps, 25);
  const double warmup = std::accumulate(x.begin(), x.begin() + 25, 0.0);
  EXPECT_DOUBLE_EQ(st.warmup_end_s, warmup);
  // 100000 steps = warm-up + 99975 x 1 s.
  EXPECT_NEAR(ExtrapolateS(st, x, no_epochs, 100000), warmup + 99975.0, 1e-6);
  // A job no longer than the simulation is the simulation itself.
  EXPECT_DOUBLE_EQ(ExtrapolateS(st, x, no_epochs, 300), std::accumulate(x.begin(), x.begin() + 300, 0.0));
}

TEST(SteadyState, DriftingSeriesIsNotSteady) {
  // A 10% rise over the run (e.g. a cache that keeps filling): halves differ by ~5% > 0.5%.
  std::vector<double> x;
  for (int k = 0; k < 320; ++k) x.push_back(1.0 + 0.1 * k / 320.0);
  SteadyState st = DetectSteadyState(x, {1'000'000, 1}, 0.005);
  EXPECT_FALSE(st.steady);
  EXPECT_GT(st.drift, 0.005);
  EXPECT_NE(st.detail.find("NOT steady"), std::string::npos);
}

TEST(SteadyState, ShortEpochsUseWholeEpochWindows) {
  // 10 steps per epoch: the first step of every epoch stalls 0.5 s (pipeline refill). 40 epochs
  // simulated. Periodic windows see the same rate: (9 x 1 + 1.5) / 10 = 1.05 s per step.
  std::vector<double> x;
  for (int e = 0; e < 40; ++e) {
    for (int s = 0; s < 10; ++s) x.push_back(s == 0 ? (e == 0 ? 3.0 : 1.5) : 1.0);
  }
  const EpochGeometry epochs{10, 1};
  SteadyState st = DetectSteadyState(x, epochs, 0.005);
  ASSERT_TRUE(st.steady) << st.detail;
  EXPECT_TRUE(st.periodic);
  EXPECT_NEAR(st.step_s, 1.05, 1e-12);
  // 1000 steps = 100 epochs: 3 + 9 (first epoch) + 99 x 10.5 = 1051.5 s, exactly what the periodic
  // rate gives from the warm-up on.
  EXPECT_NEAR(ExtrapolateS(st, x, epochs, 1000), 1051.5, 1e-9);
}

TEST(SteadyState, LongEpochBoundariesAreAddedOneByOne) {
  // 100 steps per epoch, 3 epochs simulated (< 6: not periodic): boundary steps (100, 200) take
  // 1.8 s instead of 1 s; the extra 0.8 s is measured from them.
  std::vector<double> x;
  for (int k = 0; k < 300; ++k) x.push_back(k == 0 ? 4.0 : (k % 100 == 0 ? 1.8 : 1.0));
  const EpochGeometry epochs{100, 1};
  SteadyState st = DetectSteadyState(x, epochs, 0.005);
  ASSERT_TRUE(st.steady) << st.detail;
  EXPECT_FALSE(st.periodic);
  EXPECT_TRUE(st.boundary_measured);
  EXPECT_NEAR(st.boundary_extra_s, 0.8, 1e-12);
  EXPECT_DOUBLE_EQ(st.step_s, 1.0);
  // 1000 steps: 4 + 999 x 1 + 9 boundaries (steps 100, ..., 900) x 0.8 = 1010.2 s.
  EXPECT_NEAR(ExtrapolateS(st, x, epochs, 1000), 1010.2, 1e-9);
}

TEST(SteadyState, BoundaryStepsFollowGradientAccumulation) {
  // 10 micro-batches per epoch, 4 per optimizer step: epoch e starts in step floor(10 e / 4).
  const EpochGeometry epochs{10, 4};
  EXPECT_DOUBLE_EQ(epochs.StepsPerEpoch(), 2.5);
  EXPECT_EQ(epochs.BoundaryStep(1), 2);
  EXPECT_EQ(epochs.BoundaryStep(2), 5);
  EXPECT_EQ(epochs.BoundaryStep(3), 7);
}

}  // namespace
}  // namespace simreplay::plan
