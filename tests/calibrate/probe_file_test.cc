// LoadProbeFile / ParseProbeDocument: which fit the calibrator takes from a probe, and bad documents
// (a person may edit them) as errors naming the file and field.
#include "calibrate/probe_file.h"

#include <gtest/gtest.h>

#include <fstream>

namespace simreplay::calibrate {
namespace {

Result<ProbeFileFit> Parse(const std::string& text) {
  return ParseProbeDocument(nlohmann::json::parse(text), "p.json");
}

TEST(ProbeFile, PrefersTheRandomFit) {
  auto fit = Parse(R"({"schema":"simreplay.probe/1","cache_drop":"fadvise","fit":{
      "sequential":{"latency_s":1e-5,"bandwidth_bytes_per_s":2e9,"max_useful_concurrency":2},
      "random":{"latency_s":2e-4,"bandwidth_bytes_per_s":5e8,"max_useful_concurrency":8},
      "page_cache":{"bandwidth_bytes_per_s":6e9}}})");
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_EQ(fit->pattern, "random");
  EXPECT_DOUBLE_EQ(*fit->latency_s, 2e-4);
  EXPECT_DOUBLE_EQ(*fit->bandwidth_bytes_per_s, 5e8);
  EXPECT_EQ(*fit->max_useful_concurrency, 8);
  EXPECT_DOUBLE_EQ(*fit->page_cache_bytes_per_s, 6e9);
  EXPECT_EQ(fit->cache_drop, "fadvise");
}

TEST(ProbeFile, NullRandomFitFallsBackToSequential) {
  auto fit = Parse(R"({"schema":"simreplay.probe/1","fit":{"random":null,"sequential":{"latency_s":0,
      "bandwidth_bytes_per_s":0}}})");
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_EQ(fit->pattern, "sequential");
  EXPECT_DOUBLE_EQ(*fit->latency_s, 0);
  EXPECT_FALSE(fit->bandwidth_bytes_per_s);  // 0 is unusable: the trace's reads decide
}

TEST(ProbeFile, NoFitIsNoPattern) {
  auto fit = Parse(R"({"schema":"simreplay.probe/1"})");
  ASSERT_TRUE(fit.ok());
  EXPECT_EQ(fit->pattern, "");
}

// Regression (issue 13): a non-string "schema" made json::value() throw type_error out of calibrate.
TEST(ProbeFile, RegressionNonStringSchemaIsAnError) {
  auto fit = Parse(R"({"schema":1})");
  ASSERT_FALSE(fit.ok());
  EXPECT_EQ(fit.status().message(), "p.json:1: not a simreplay.probe/1 document");
}

// Regression (issue 13): max_useful_concurrency went through get<int>(), so 4294967297 wrapped to 1.
TEST(ProbeFile, RegressionHugeConcurrencyIsAnError) {
  auto fit = Parse(R"({"schema":"simreplay.probe/1","fit":{"random":{"max_useful_concurrency":4294967297}}})");
  ASSERT_FALSE(fit.ok());
  EXPECT_EQ(fit.status().message(),
            "p.json: fit.random.max_useful_concurrency: expected an integer in [1, 64], found 4294967297");
}

TEST(ProbeFile, WrongTypesAndNegativeLatencyAreErrors) {
  auto text = Parse(R"({"schema":"simreplay.probe/1","fit":{"random":{"latency_s":"fast"}}})");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().message(), "p.json: fit.random.latency_s: expected a number, found string");
  auto negative = Parse(R"({"schema":"simreplay.probe/1","fit":{"sequential":{"latency_s":-1}}})");
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.status().message(), "p.json: fit.sequential.latency_s: expected >= 0, found -1");
}

TEST(ProbeFile, LoadNamesFileAndLine) {
  std::string path = ::testing::TempDir() + "/probe_overflow.json";
  std::ofstream(path) << "{\"schema\":\"simreplay.probe/1\",\n\"fit\":{\"random\":{\"latency_s\":1e999}}}\n";
  auto fit = LoadProbeFile(path);
  ASSERT_FALSE(fit.ok());
  EXPECT_EQ(fit.status().message(), path + ":2: a number out of range: 1e999 does not fit a 64-bit float");
}

}  // namespace
}  // namespace simreplay::calibrate
