#include "common/latency_summary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "common/quantile.h"

namespace simreplay {
namespace {

TEST(LatencySummary, ExactBelowTheLimitMatchesQuantileLinear) {
  LatencySummary s;
  std::vector<double> values;
  for (int i = 0; i < 1000; ++i) {
    values.push_back(0.001 * ((i * 7919) % 1000));
    s.Add(values.back());
  }
  ASSERT_TRUE(s.exact());
  const auto f = s.Summarize();
  EXPECT_DOUBLE_EQ(f.p50, QuantileLinear(values, 0.5));
  EXPECT_DOUBLE_EQ(f.p95, QuantileLinear(values, 0.95));
  EXPECT_DOUBLE_EQ(f.p99, QuantileLinear(values, 0.99));
  EXPECT_DOUBLE_EQ(f.max, 0.999);
  EXPECT_NEAR(f.mean, 0.4995, 1e-12);
}

TEST(LatencySummary, EmptyIsAllZero) {
  const auto f = LatencySummary().Summarize();
  EXPECT_EQ(f.mean, 0);
  EXPECT_EQ(f.p99, 0);
  EXPECT_EQ(f.max, 0);
}

// Past the limit: quantiles within the stated relative error of the exact ones; count, mean, max exact.
TEST(LatencySummary, SketchQuantilesWithinRelativeError) {
  LatencySummary s;
  std::vector<double> values;
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> latency(std::log(0.004), 0.6);
  const size_t n = LatencySummary::kExactLimit + 200000;
  values.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    values.push_back(i % 50 == 0 ? 0.0 : latency(rng));  // some zero-length reads
    s.Add(values.back());
  }
  ASSERT_FALSE(s.exact());
  EXPECT_EQ(s.count(), static_cast<int64_t>(n));
  const auto f = s.Summarize();
  std::sort(values.begin(), values.end());
  for (auto [q, got] : {std::pair{0.5, f.p50}, {0.95, f.p95}, {0.99, f.p99}}) {
    const double want = SortedQuantileLinear(values, q);
    EXPECT_LE(std::abs(got - want), LatencySummary::kRelativeError * want * 1.0001) << "q=" << q;
  }
  EXPECT_EQ(f.max, values.back());
  double sum = 0;
  for (double v : values) sum += v;
  EXPECT_NEAR(f.mean, sum / static_cast<double>(n), 1e-12);
}

TEST(LatencySummary, JsonRoundTripOfBothForms) {
  LatencySummary small, large;
  for (int i = 0; i < 10; ++i) small.Add(0.5 * i);
  for (size_t i = 0; i <= LatencySummary::kExactLimit; ++i) large.Add(1e-3 * static_cast<double>(1 + i % 1000));
  for (const LatencySummary* s : {&small, &large}) {
    auto back = LatencySummary::FromJson(nlohmann::json::parse(s->ToJson().dump()));
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->exact(), s->exact());
    EXPECT_EQ(back->ToJson().dump(), s->ToJson().dump());
  }
}

TEST(LatencySummary, CorruptJsonIsAnErrorNotACrash) {
  EXPECT_FALSE(LatencySummary::FromJson(nlohmann::json::parse(R"({"values": [1, "x"]})")).ok());
  EXPECT_FALSE(LatencySummary::FromJson(nlohmann::json::parse(R"({"count": 3})")).ok());
  EXPECT_FALSE(LatencySummary::FromJson(
                   nlohmann::json::parse(
                       R"({"count": 3, "sum": 1, "min": 0, "max": 1, "zero": 0, "key_offset": 0, "buckets": [1]})"))
                   .ok());
}

}  // namespace
}  // namespace simreplay
