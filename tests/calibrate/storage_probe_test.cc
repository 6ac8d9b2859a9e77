#include "calibrate/storage_probe.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace simreplay::calibrate {
namespace {

// A fresh directory under the test temp dir, removed (with anything left in it) at the end.
class TempDir {
 public:
  TempDir() {
    std::string pattern = ::testing::TempDir() + "storage_probe_test.XXXXXX";
    char* made = ::mkdtemp(pattern.data());
    EXPECT_NE(made, nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    for (const std::string& name : Entries()) ::unlink((path_ + "/" + name).c_str());
    ::rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }
  std::vector<std::string> Entries() const {
    std::vector<std::string> names;
    if (DIR* d = ::opendir(path_.c_str())) {
      while (dirent* e = ::readdir(d)) {
        std::string name = e->d_name;
        if (name != "." && name != "..") names.push_back(name);
      }
      ::closedir(d);
    }
    return names;
  }

 private:
  std::string path_;
};

// Points on op_s = latency + bytes / bandwidth, computed from the chosen latency and bandwidth.
std::vector<CostPoint> ExactPoints(double latency_s, double bandwidth_bytes_per_s) {
  std::vector<CostPoint> points;
  for (double bytes : {4096.0, 65536.0, 1048576.0, 4194304.0}) {
    points.push_back({bytes, latency_s + bytes / bandwidth_bytes_per_s});
  }
  return points;
}

TEST(FitLinearCost, RecoversLatencyAndBandwidthFromExactPoints) {
  const double latency_s = 150e-6;
  const double bandwidth = 800e6;
  Result<LinearCostFit> fit = FitLinearCost(ExactPoints(latency_s, bandwidth));
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_NEAR(fit->latency_s, latency_s, latency_s * 1e-9);
  ASSERT_TRUE(fit->bandwidth_bytes_per_s().has_value());
  EXPECT_NEAR(*fit->bandwidth_bytes_per_s(), bandwidth, bandwidth * 1e-9);
  EXPECT_NEAR(fit->r2, 1.0, 1e-12);
}

TEST(FitLinearCost, TwoPointsGiveTheLineThroughThem) {
  // 1 MB in 3 ms and 3 MB in 7 ms: slope (7-3) ms / 2 MB = 2e-9 s/B (500 MB/s), intercept 3 - 2 = 1 ms.
  Result<LinearCostFit> fit = FitLinearCost({{1e6, 3e-3}, {3e6, 7e-3}});
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_NEAR(fit->latency_s, 1e-3, 1e-15);
  EXPECT_NEAR(fit->seconds_per_byte, 2e-9, 1e-21);
  EXPECT_NEAR(*fit->bandwidth_bytes_per_s(), 500e6, 1e-3);
}

TEST(FitLinearCost, SmallBlocksKeepTheirWeightAgainstNoisyLargeOnes) {
  // 100 us latency, 1 GB/s. The 4 MiB point is 5% slow (about 215 us too long, more than the whole
  // latency). Unweighted least squares would lose the intercept; relative weighting moves it by far
  // less than the 4 MiB error.
  std::vector<CostPoint> points = ExactPoints(100e-6, 1e9);
  points.back().op_s *= 1.05;
  Result<LinearCostFit> fit = FitLinearCost(points);
  ASSERT_TRUE(fit.ok());
  EXPECT_NEAR(fit->latency_s, 100e-6, 10e-6);
  EXPECT_LT(fit->r2, 1.0);
  EXPECT_GT(fit->r2, 0.99);
}

TEST(FitLinearCost, RejectsFewerThanTwoBlockSizes) {
  EXPECT_FALSE(FitLinearCost({}).ok());
  EXPECT_FALSE(FitLinearCost({{4096, 1e-4}}).ok());
  EXPECT_FALSE(FitLinearCost({{4096, 1e-4}, {4096, 2e-4}}).ok());
  EXPECT_FALSE(FitLinearCost({{4096, 0.0}, {8192, 1e-4}}).ok());
}

TEST(FitLinearCost, NonPositiveSlopeHasNoBandwidth) {
  Result<LinearCostFit> fit = FitLinearCost({{4096, 1e-4}, {8192, 1e-4}});
  ASSERT_TRUE(fit.ok());
  EXPECT_FALSE(fit->bandwidth_bytes_per_s().has_value());
}

TEST(MaxUsefulConcurrency, SmallestReachingNinetyPercentOfBest) {
  // Best 200; 90% is 180, first reached at 2.
  EXPECT_EQ(MaxUsefulConcurrency({{1, 100}, {2, 180}, {4, 195}, {8, 200}}), 2);
  EXPECT_EQ(MaxUsefulConcurrency({{1, 100}, {2, 179}, {4, 195}, {8, 200}}), 4);
  EXPECT_EQ(MaxUsefulConcurrency({{1, 300}, {2, 200}, {4, 100}}), 1);
  EXPECT_EQ(MaxUsefulConcurrency({{4, 50}}), 4);
}

ProbeOptions SmallProbe(const std::string& dir) {
  ProbeOptions options;
  options.dir = dir;
  options.file_bytes = 8 << 20;
  options.block_bytes = {4096, 1 << 20};
  options.concurrency = {1, 2};
  options.time_limit_s = 0.1;
  options.allow_global_drop_caches = false;  // never drop the whole host's cache from a unit test
  return options;
}

TEST(RunStorageProbe, SmallProbeMeasuresAndRemovesItsFile) {
  TempDir dir;
  ProbeOptions options = SmallProbe(dir.path());
  Result<ProbeResult> result = RunStorageProbe(options);
  ASSERT_TRUE(result.ok()) << result.status().message();
  // 2 patterns x 2 block sizes x 2 concurrencies cold, plus 2 x 2 warm at concurrency 1.
  ASSERT_EQ(result->measurements.size(), 12u);
  for (const ProbeMeasurement& m : result->measurements) {
    EXPECT_GT(m.bytes_per_s, 0) << AccessPatternName(m.pattern) << " " << m.block_bytes;
    EXPECT_GT(m.ops, 0u);
    EXPECT_EQ(m.bytes, m.ops * m.block_bytes);
    EXPECT_LE(m.bytes, options.file_bytes);
    EXPECT_GT(m.latency_s.mean, 0);
    EXPECT_LE(m.latency_s.p50, m.latency_s.p99);
  }
  EXPECT_EQ(result->file_bytes, options.file_bytes);
  EXPECT_FALSE(result->cache_drop.empty());
  ASSERT_TRUE(result->sequential_fit.has_value());
  ASSERT_TRUE(result->random_fit.has_value());
  EXPECT_GT(result->random_fit->peak_bytes_per_s, 0);
  EXPECT_TRUE(result->page_cache_fit.has_value());
  EXPECT_TRUE(dir.Entries().empty()) << "left behind: " << dir.Entries().front();
}

TEST(RunStorageProbe, DirectFallsBackOrWorksAndStillRemovesFile) {
  TempDir dir;
  ProbeOptions options = SmallProbe(dir.path());
  options.direct = true;
  options.patterns = {AccessPattern::kRandom};
  options.warm_pass = false;
  Result<ProbeResult> result = RunStorageProbe(options);
  ASSERT_TRUE(result.ok()) << result.status().message();
  if (!result->direct) {
    EXPECT_FALSE(result->notes.empty()) << "a fallback must say why";
  }
  for (const ProbeMeasurement& m : result->measurements) EXPECT_GT(m.bytes_per_s, 0);
  EXPECT_TRUE(dir.Entries().empty());
}

TEST(RunStorageProbe, JsonFollowsProbeFormat) {
  TempDir dir;
  ProbeOptions options = SmallProbe(dir.path());
  options.concurrency = {1};
  Result<ProbeResult> result = RunStorageProbe(options);
  ASSERT_TRUE(result.ok()) << result.status().message();
  nlohmann::json j = nlohmann::json::parse(ProbeResultToJson(*result));
  EXPECT_EQ(j["schema"], "simreplay.probe/1");
  EXPECT_EQ(j["path"], dir.path());
  EXPECT_EQ(j["file_bytes"], options.file_bytes);
  EXPECT_TRUE(j["direct"].is_boolean());
  EXPECT_TRUE(j["cache_drop"].is_string());
  ASSERT_EQ(j["measurements"].size(), result->measurements.size());
  const nlohmann::json& m = j["measurements"][0];
  for (const char* key : {"pattern", "block_bytes", "concurrency", "cold", "bytes_per_s", "ops"}) {
    EXPECT_TRUE(m.contains(key)) << key;
  }
  for (const char* key : {"mean", "p50", "p99"}) EXPECT_TRUE(m["latency_s"].contains(key)) << key;
  for (const char* pattern : {"sequential", "random"}) {
    const nlohmann::json& fit = j["fit"][pattern];
    for (const char* key : {"latency_s", "bandwidth_bytes_per_s", "max_useful_concurrency", "r2"}) {
      EXPECT_TRUE(fit.contains(key)) << pattern << "." << key;
    }
  }
  EXPECT_TRUE(j["fit"]["page_cache"].contains("bandwidth_bytes_per_s"));
  EXPECT_TRUE(j["fit"]["page_cache"].contains("latency_s"));
}

TEST(RandomReadOrder, IsASeededPermutationOfTheBlocks) {
  const uint64_t file_bytes = 64 << 20, block = 64 << 10;  // 1024 blocks
  std::vector<uint64_t> order = RandomReadOrder(file_bytes, block, 7);
  ASSERT_EQ(order.size(), 1024u);
  std::vector<uint64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (uint64_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], i) << "each block exactly once";
  EXPECT_EQ(RandomReadOrder(file_bytes, block, 7), order);
  EXPECT_NE(RandomReadOrder(file_bytes, block, 8), order);
  // Not the identity: fixed points of a random permutation of 1024 average 1.
  int fixed = 0;
  for (uint64_t i = 0; i < order.size(); ++i) fixed += order[i] == i;
  EXPECT_LT(fixed, 10);
  // A partial last block is never read.
  EXPECT_EQ(RandomReadOrder(block * 3 + 4096, block, 7).size(), 3u);
}

TEST(RunStorageProbe, MissingDirectoryIsNotFoundNamingThePath) {
  TempDir dir;
  ProbeOptions options = SmallProbe(dir.path() + "/does-not-exist");
  Result<ProbeResult> result = RunStorageProbe(options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), Status::Code::kNotFound);
  EXPECT_NE(result.status().message().find(options.dir), std::string::npos) << result.status().message();
}

TEST(RunStorageProbe, RegularFileIsNotADirectory) {
  TempDir dir;
  std::string file = dir.path() + "/plain";
  std::ofstream(file) << "x";
  Result<ProbeResult> result = RunStorageProbe(SmallProbe(file));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(result.status().message(), file + ": not a directory");
}

TEST(RunStorageProbe, RejectsUnalignedBlockSize) {
  TempDir dir;
  ProbeOptions options = SmallProbe(dir.path());
  options.block_bytes = {1000};
  Result<ProbeResult> result = RunStorageProbe(options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(dir.Entries().empty());
}

TEST(ReadProbeFile, ReadsBackWhatTheProbeWrote) {
  TempDir dir;
  ProbeResult r;
  r.cache_drop = "fadvise";
  PatternFit seq;
  seq.cost = {50e-6, 1.0 / 3e8, 0.99};  // 50 us + b / 300 MB/s
  seq.max_useful_concurrency = 4;
  seq.peak_bytes_per_s = 1.2e9;
  seq.max_useful_concurrency_by_block = {{4096, 8}, {1 << 20, 2}};
  r.sequential_fit = seq;
  LinearCostFit flat = {1e-6, -1e-12, 0.5};  // non-positive slope: written as bandwidth null
  r.page_cache_fit = flat;
  const std::string path = dir.path() + "/probe.json";
  std::ofstream(path) << ProbeResultToJson(r);
  auto doc = ReadProbeFile(path);
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  EXPECT_EQ(doc->cache_drop, "fadvise");
  ASSERT_TRUE(doc->sequential.has_value());
  EXPECT_FALSE(doc->random.has_value());  // written as null
  EXPECT_DOUBLE_EQ(doc->sequential->latency_s, 50e-6);
  EXPECT_DOUBLE_EQ(*doc->sequential->bandwidth_bytes_per_s, 3e8);
  EXPECT_EQ(*doc->sequential->max_useful_concurrency, 4);
  EXPECT_EQ(doc->sequential->max_useful_concurrency_by_block->at("4096"), 8);
  ASSERT_TRUE(doc->page_cache.has_value());
  EXPECT_FALSE(doc->page_cache->bandwidth_bytes_per_s.has_value());
  // What calibration reports is what the probe wrote.
  auto written = nlohmann::json::parse(ProbeResultToJson(r));
  EXPECT_EQ(doc->sequential->ToJson(), nlohmann::json(written["fit"]["sequential"]));
}

TEST(ReadProbeFile, WrongSchemaAndWrongFieldTypesAreBadInput) {
  TempDir dir;
  const std::string path = dir.path() + "/probe.json";
  std::ofstream(path) << R"({"schema": "simreplay.probe/2"})";
  auto r = ReadProbeFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), path + ":1: not a simreplay.probe/1 document");

  std::ofstream(path) << R"({"schema": "simreplay.probe/1", "fit": {"random": {"latency_s": "fast"}}})";
  r = ReadProbeFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(), path + ": fit.random.latency_s: expected a number, found \"fast\"");

  std::ofstream(path) << R"({"schema": "simreplay.probe/1", "fit": null})";
  r = ReadProbeFile(path);
  ASSERT_TRUE(r.ok());  // a probe without a fit is usable (calibration warns)
  EXPECT_FALSE(r->sequential || r->random || r->page_cache);
}

}  // namespace
}  // namespace simreplay::calibrate
