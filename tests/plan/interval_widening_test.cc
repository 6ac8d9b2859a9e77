// Plan intervals widen from a typed list of extrapolations (plan/interval_widening.h), never from the
// words of a warning; and the simulator hands the planner a typed CandidateRun.
#include "plan/interval_widening.h"

#include <gtest/gtest.h>

#include "plan/candidate_sim.h"

namespace simreplay::plan {
namespace {

models::ErrorBand Band() {
  models::ErrorBand b;
  b.error_low = -0.2;
  b.error_high = 0.1;
  return b;
}

TEST(IntervalWidening, TheBandAloneWithoutExtrapolations) {
  const IntervalMultipliers m = WidenBand(Band(), {});
  EXPECT_DOUBLE_EQ(m.low, 0.8);
  EXPECT_DOUBLE_EQ(m.high, 1.1);
}

TEST(IntervalWidening, EachKindAddsItsWidening) {
  // 1 + 0.1 + 0.05 (parameter) + 0.25 (step assumed) + 0.05 (not steady) + 0.05 (beyond 4 nodes) = 1.5;
  // 1 - 0.2 - 0.02 - 0.20 - 0.05 - 0 = 0.53.
  const IntervalMultipliers m = WidenBand(Band(), {{ExtrapolationKind::kScenarioParameter, "num_workers"},
                                                   {ExtrapolationKind::kStepTimeAssumed, "step_time_s[h100-sxm]"},
                                                   {ExtrapolationKind::kNotSteady, "steady_step_s"},
                                                   {ExtrapolationKind::kBeyondValidatedNodes, "8 nodes > 4"}});
  EXPECT_NEAR(m.high, 1.5, 1e-12);
  EXPECT_NEAR(m.low, 0.53, 1e-12);
}

TEST(IntervalWidening, ScenarioParametersCountAtMostFiveAndTheLowEndStaysAboveATenth) {
  std::vector<Extrapolation> many(8, {ExtrapolationKind::kScenarioParameter, "p"});
  const IntervalMultipliers m = WidenBand(Band(), many);
  EXPECT_NEAR(m.high, 1.1 + 5 * 0.05, 1e-12);
  EXPECT_NEAR(m.low, 0.8 - 5 * 0.02, 1e-12);
  models::ErrorBand wide = Band();
  wide.error_low = -0.85;
  EXPECT_DOUBLE_EQ(WidenBand(wide, {{ExtrapolationKind::kStepTimeAssumed, "s"}}).low, 0.1);
}

TEST(CandidateRunRecord, RoundTripsAndRefusesTheOldUntypedKind) {
  CandidateRun run;
  run.interval_s = {0.5, 0.25, 0.125};
  run.collective_s = 1.5;
  run.exposed_comm_s = 0.75;
  run.bottleneck_stage = "collective";
  run.bottleneck_evidence = "ranks wait 40% of the step in collectives";
  auto back = CandidateRunFromJson(CandidateRunJson(run));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->interval_s, run.interval_s);
  EXPECT_EQ(back->collective_s, 1.5);
  EXPECT_EQ(back->exposed_comm_s, 0.75);
  EXPECT_EQ(back->bottleneck_stage, "collective");
  EXPECT_EQ(back->bottleneck_evidence, run.bottleneck_evidence);
  // A point file of the first format (metrics looked up by key) is refused, not half-read.
  nlohmann::json old = {{"kind", "simreplay.plan-candidate/1"}, {"interval_s", {0.5}}, {"metrics", nlohmann::json::object()}};
  EXPECT_FALSE(CandidateRunFromJson(old).ok());
  nlohmann::json negative = CandidateRunJson(run);
  negative["metrics"]["collective_s"] = -1;
  EXPECT_FALSE(CandidateRunFromJson(negative).ok());
}

}  // namespace
}  // namespace simreplay::plan
