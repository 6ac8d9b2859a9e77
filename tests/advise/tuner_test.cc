// The tuner on the bundled quickstart (2 cores, 2 workers, batch 8, emulated 20 ms step).
#include "advise/tuner.h"

#include <gtest/gtest.h>

#include "advise/tune_outputs.h"
#include "tests/advise/advise_test_util.h"

namespace simreplay::advise {
namespace {

using testing::Quickstart;

TEST(Tuner, NeverPicksAConfigurationThatBreaksALimitAndSaysWhatBoundIt) {
  sim::CostCache cache;
  TuneOptions o;
  o.jobs = 2;
  o.budget = 30;
  auto r = Tune(Quickstart({{"train", {{"steps", 20}}}}), o, &cache);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Two cores, two workers per core at most: 6 or more workers are rejected for cores, unsimulated.
  EXPECT_LE(r->best.knobs.num_workers, 4);
  EXPECT_TRUE(r->best.feasible);
  bool cores_named = false;
  for (const auto& x : r->rejections) {
    if (x.axis == "num_workers" && x.value == "6") cores_named = x.reason.rfind("cores:", 0) == 0;
  }
  EXPECT_TRUE(cores_named);
  EXPECT_GE(r->best.objective, r->current.objective);
  // Nothing under 5% is ever recommended: either the current configuration stays or the gain is >= 5%.
  EXPECT_TRUE(r->best.knobs == r->current.knobs || r->gain >= kMinRecommendedGain) << r->gain;
  EXPECT_LE(r->configurations, o.budget);
  EXPECT_EQ(r->simulations, 2 * r->configurations + r->profile.simulations);
  // The best simulated feasible configuration is the answer unless it buys under 1% over the current one.
  // (Among those within 1% of the best, the fewest changes win: a runner-up may be up to 1% above.)
  const double ceiling =
      r->best.knobs == r->current.knobs ? r->best.objective * (1 + kMinRecommendedGain) : r->best.objective * (1 + kMoveThreshold);
  for (const auto& e : r->runners_up) {
    EXPECT_TRUE(e.feasible);
    EXPECT_LE(e.objective, ceiling);
  }
}

TEST(Tuner, SameResultWhateverTheParallelism) {
  sim::CostCache cache;
  TuneOptions one, two;
  one.jobs = 1;
  two.jobs = 2;
  one.budget = two.budget = 12;
  auto s = Quickstart({{"train", {{"steps", 10}}}});
  auto a = Tune(s, one, &cache);
  auto b = Tune(s, two, &cache);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(TuneJson("s", *a, one).dump(), TuneJson("s", *b, one).dump());
}

TEST(Tuner, ImpossibleMemoryLimitIsABadInput) {
  sim::CostCache cache;
  TuneOptions o;
  o.memory_bytes = 1e6;  // 1 MB: less than any main process
  auto r = Tune(Quickstart(), o, &cache);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("impossible constraints"), std::string::npos);
}

TEST(Tuner, CostObjectiveNeedsPrices) {
  sim::CostCache cache;
  TuneOptions o;
  o.objective = TuneObjective::kCost;
  auto r = Tune(Quickstart(), o, &cache);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
}

TEST(TuneOutputs, ExperimentSpecIsSingleFactorPerCase) {
  TuneResult r;
  r.current.knobs = {2, 2, false, false, "files", 2};
  r.best.knobs = {2, 4, true, false, "files", 2};
  ExperimentRequest q;
  q.command = {"python3", "train.py", "--workers", "{num_workers}"};
  q.batch_size = 8;
  const auto spec = ExperimentSpec("s.json", r, q);
  EXPECT_EQ(spec["mode"], "suite");  // two factors changed: one case each
  ASSERT_EQ(spec["cases"].size(), 3u);
  for (size_t i = 1; i < spec["cases"].size(); ++i) EXPECT_EQ(spec["cases"][i]["set"].size(), 1u);
  EXPECT_EQ(spec["base"]["num_workers"], 2);
  EXPECT_EQ(spec["run"]["command"][3], "{num_workers}");
  r.best.knobs.pin_memory = false;
  EXPECT_EQ(ExperimentSpec("s.json", r, q)["mode"], "ab");
}

TEST(TuneOutputs, SplitCommandHonoursQuotes) {
  auto argv = SplitCommand("python3 'my train.py' --flag \"a b\"  x");
  ASSERT_TRUE(argv.ok());
  EXPECT_EQ(*argv, (std::vector<std::string>{"python3", "my train.py", "--flag", "a b", "x"}));
  EXPECT_FALSE(SplitCommand("python3 'unclosed").ok());
  EXPECT_FALSE(SplitCommand("   ").ok());
}

}  // namespace
}  // namespace simreplay::advise
