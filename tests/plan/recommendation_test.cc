// The recommendation: cheapest candidate that fits each slot at the pessimistic end, the fastest, the knee.
#include "plan/recommendation.h"

#include <gtest/gtest.h>

#include "plan/planner.h"

namespace simreplay::plan {
namespace {

CandidateRow Row(const std::string& gpu, int nodes, double throughput, double days, double high_days, double cost) {
  CandidateRow r;
  r.gpu = gpu;
  r.nodes = nodes;
  r.gpus_per_node = 8;
  r.gpus = nodes * 8;
  r.sharding = "ddp";
  r.simulated = true;
  r.memory.fits = true;
  r.throughput_samples_per_s = throughput;
  r.budget.training_s = days * 86400;
  r.budget_low.training_s = days * 86400 * 0.9;
  r.budget_high.training_s = high_days * 86400;
  r.cost = cost;
  r.bottleneck = "collective";
  for (double slot : {7.0, 30.0}) r.fits_slot.push_back(high_days <= slot);
  return r;
}

TEST(Recommendation, CheapestThatFitsFastestAndKnee) {
  PlanSpec spec;
  spec.reservation.days = {7, 30};
  spec.reservation.knee_fraction = 0.5;
  std::vector<CandidateRow> rows = {
      Row("a", 1, 100, 20, 25, 1000),    // fits 30 only; cheapest overall
      Row("a", 2, 190, 10.5, 13, 1100),  // 1 -> 2 nodes: 90 / 8 GPUs / (100 / 8) = 0.9 of linear
      Row("a", 4, 250, 8, 9.5, 1500),    // 2 -> 4 nodes: 60 / 16 GPUs / (100 / 8) = 0.3 of linear: the knee
      Row("b", 1, 300, 6, 6.9, 2000),    // fits 7 (pessimistic end 6.9) and is the only one that does
      Row("b", 2, 590, 3, 3.5, 2050),    // fits 7 too, and cheaper per day but dearer
  };
  nlohmann::json rec = Recommend(spec, rows, false);
  ASSERT_EQ(rec["slots"].size(), 2u);
  EXPECT_EQ(rec["slots"][0]["candidate"]["gpu"], "b");  // 7 days: b x 1 (2000) beats b x 2 (2050)
  EXPECT_EQ(rec["slots"][0]["candidate"]["nodes"], 1);
  EXPECT_EQ(rec["slots"][0]["fitting"], 2);
  EXPECT_EQ(rec["slots"][1]["candidate"]["gpu"], "a");  // 30 days: a x 1 at 1000
  EXPECT_EQ(rec["fastest"]["gpu"], "b");
  EXPECT_EQ(rec["fastest"]["nodes"], 2);
  ASSERT_EQ(rec["knees"].size(), 1u);
  EXPECT_EQ(rec["knees"][0]["gpu"], "a");
  EXPECT_EQ(rec["knees"][0]["nodes"], 2);
  EXPECT_EQ(rec["knees"][0]["next_nodes"], 4);
  // The shared definition (against the 1-node per-GPU rate), not the 2-node one's 0.316.
  EXPECT_NEAR(rec["knees"][0]["marginal_fraction_of_linear"].get<double>(), 0.3, 1e-12);
  EXPECT_FALSE(rec["provisional"].get<bool>());
  const std::string text = rec["text"];
  // The decision first, as a table: one row per slot with the pick, its GPUs, days, cost and the faster
  // alternative that also fits (7 days: b x 2 nodes, 3.0 days).
  EXPECT_EQ(text.find("Decision: "), 0u) << text;
  EXPECT_NE(text.find("slot     pick"), std::string::npos) << text;
  EXPECT_NE(text.find("7 days   b x 1 node (ddp)  8     6.0 (5.4-6.9)"), std::string::npos) << text;
  EXPECT_NE(text.find("b x 2 nodes (ddp): 3.0 days, cost 2050"), std::string::npos) << text;
  EXPECT_NE(text.find("Knee (a ddp): going from 2 to 4 nodes buys 30% of linear"), std::string::npos) << text;
  EXPECT_EQ(rec["slots"][0]["faster_alternative"]["nodes"], 2);
  EXPECT_TRUE(rec["slots"][1]["faster_alternative"]["gpu"] == "b");  // 30 days: b x 2 nodes is faster than a x 1
}

// Issue 44 item 6: a knee said "-3.86e-05 s data loading and host". A growth under 1 ms or 1% of the
// step is noise: zero in the JSON, not named in the sentence.
TEST(Recommendation, AStepGrowthThatIsNoiseIsRoundedToZeroAndNotNamed) {
  PlanSpec spec;
  spec.reservation.days = {30};
  spec.reservation.knee_fraction = 0.5;
  std::vector<CandidateRow> rows = {Row("a", 1, 64, 20, 25, 1000), Row("a", 2, 80, 16, 19, 1600)};
  rows[0].samples_per_step = 64;    // step 1.0 s, all compute
  rows[1].samples_per_step = 128;   // step 1.6 s
  rows[0].compute_s_per_step = 1.0;
  rows[1].compute_s_per_step = 1.0 - 3.86e-05;  // data and host grow by 3.86e-05 s: noise
  rows[1].collective.exposed_s = 0.6;
  nlohmann::json rec = Recommend(spec, rows, false);
  ASSERT_EQ(rec["knees"].size(), 1u);
  EXPECT_EQ(rec["knees"][0]["step_growth_s"]["data_and_host"].get<double>(), 0.0);
  const std::string knee = rec["knees"][0]["text"];
  EXPECT_EQ(knee.find("data loading and host"), std::string::npos) << knee;
  EXPECT_EQ(knee.find("e-05"), std::string::npos) << knee;
  EXPECT_NE(knee.find("(+0.6 s exposed communication)"), std::string::npos) << knee;
}

TEST(Recommendation, KneeAndCandidatesNameWhatTheSimulatedStepSpendsNotTheUtilisationSignal) {
  PlanSpec spec;
  spec.reservation.days = {30};
  spec.reservation.knee_fraction = 0.5;
  // 64 samples per step; 1 s of compute per step. 1 node: 64 samples/s -> step 1.0 s, 0 s exposed.
  // 2 nodes: 128 samples per step at 80/s -> step 1.6 s, of which 0.55 s exposed communication.
  std::vector<CandidateRow> rows = {Row("a", 1, 64, 20, 25, 1000), Row("a", 2, 80, 16, 19, 1600)};
  rows[0].samples_per_step = 64;
  rows[1].samples_per_step = 128;
  for (auto& r : rows) r.compute_s_per_step = 1.0;
  rows[1].collective.exposed_s = 0.55;
  nlohmann::json rec = Recommend(spec, rows, false);
  ASSERT_EQ(rec["knees"].size(), 1u);
  EXPECT_EQ(rec["knees"][0]["limiting_at_next_nodes"], "network");
  EXPECT_NEAR(rec["knees"][0]["step_growth_s"]["exposed_communication"].get<double>(), 0.55, 1e-9);
  EXPECT_NEAR(rec["knees"][0]["step_growth_s"]["data_and_host"].get<double>(), 0.05, 1e-9);
  const std::string text = rec["text"];
  EXPECT_EQ(text.find("utilisation signal"), std::string::npos) << text;
  EXPECT_NE(text.find("limiting part is the network"), std::string::npos) << text;
  // The 1-node candidate spends its whole step computing: nothing could buy 5%, nothing is named.
  ASSERT_EQ(rec["candidates"].size(), 2u);
  EXPECT_EQ(rec["candidates"][0]["limiting"], "none");
  EXPECT_EQ(rec["candidates"][1]["limiting"], "network");
  EXPECT_NEAR(rec["candidates"][1]["at_most_gain"].get<double>(), 1.6 / 1.05 - 1, 1e-9);
}

TEST(Recommendation, APartUnderFivePercentIsNeverNamed) {
  CandidateRow r = Row("a", 2, 100, 1, 1, 1);
  r.samples_per_step = 100;  // step 1 s
  r.compute_s_per_step = 0.96;
  r.collective.exposed_s = 0.03;  // removing it buys 3.1%; the data part 0.01 s buys 1%
  const StepAttribution a = AttributeStep(r);
  EXPECT_EQ(a.limiting, "none");
  EXPECT_LT(a.at_most_gain, 0.05);
  r.collective.exposed_s = 0.0;
  r.compute_s_per_step = 0.9;  // 0.1 s of data loading and host: removing it buys 11%
  EXPECT_EQ(AttributeStep(r).limiting, "data_pipeline");
}

TEST(Recommendation, NothingFitsAndProvisionalSayso) {
  PlanSpec spec;
  spec.reservation.days = {7};
  std::vector<CandidateRow> rows = {Row("a", 1, 100, 20, 25, 1000)};
  nlohmann::json rec = Recommend(spec, rows, true);
  EXPECT_TRUE(rec["slots"][0]["candidate"].is_null());
  const std::string text = rec["text"];
  EXPECT_NE(text.find("none fits"), std::string::npos) << text;
  EXPECT_NE(text.find("7-day slot first"), std::string::npos);
  EXPECT_NE(text.find("provisional"), std::string::npos);
}

}  // namespace
}  // namespace simreplay::plan
