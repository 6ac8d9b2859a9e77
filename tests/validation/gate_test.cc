// The one gate implementation (validation/gate): median and max of |errors| against a limit.
#include "validation/gate.h"

#include <gtest/gtest.h>

namespace simreplay::validation {
namespace {

TEST(Gate, MedianAndMaxOfAbsoluteErrors) {
  const std::vector<double> errors = {-4, 2, 12};
  const GateCheck median = JudgeLimit("m", GateStatistic::kMedian, errors, 10);
  EXPECT_DOUBLE_EQ(median.value, 4);
  EXPECT_TRUE(median.pass);
  EXPECT_EQ(median.n, 3u);
  const GateCheck worst = JudgeLimit("w", GateStatistic::kMax, errors, 10);
  EXPECT_DOUBLE_EQ(worst.value, 12);
  EXPECT_FALSE(worst.pass);
  // At the limit passes; a negative error counts by its size.
  EXPECT_TRUE(JudgeLimit("edge", GateStatistic::kMax, {-10}, 10).pass);
  EXPECT_FALSE(JudgeLimit("neg", GateStatistic::kMax, {-10.5}, 10).pass);
}

TEST(Gate, NothingMeasuredNeverPasses) {
  const GateCheck empty = JudgeLimit("e", GateStatistic::kMedian, {}, 10);
  EXPECT_FALSE(empty.pass);
  EXPECT_TRUE(empty.ToJson()["value"].is_null());
  EXPECT_EQ(empty.ToJson()["statistic"], "median");
}

TEST(Gate, StatisticNames) {
  GateStatistic s;
  EXPECT_TRUE(ParseGateStatistic("max", &s));
  EXPECT_EQ(s, GateStatistic::kMax);
  EXPECT_FALSE(ParseGateStatistic("mean", &s));
}

}  // namespace
}  // namespace simreplay::validation
