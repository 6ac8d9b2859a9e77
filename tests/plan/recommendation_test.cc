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
  EXPECT_NE(text.find("7-day slot: b x 1 node"), std::string::npos) << text;
  EXPECT_NE(text.find("beyond 2 nodes"), std::string::npos) << text;
}

TEST(Recommendation, NothingFitsAndProvisionalSayso) {
  PlanSpec spec;
  spec.reservation.days = {7};
  std::vector<CandidateRow> rows = {Row("a", 1, 100, 20, 25, 1000)};
  nlohmann::json rec = Recommend(spec, rows, true);
  EXPECT_TRUE(rec["slots"][0]["candidate"].is_null());
  const std::string text = rec["text"];
  EXPECT_NE(text.find("no candidate fits"), std::string::npos);
  EXPECT_NE(text.find("7-day slot first"), std::string::npos);
  EXPECT_NE(text.find("provisional"), std::string::npos);
}

}  // namespace
}  // namespace simreplay::plan
