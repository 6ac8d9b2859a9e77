#include "scenarios/scenario.h"

#include <gtest/gtest.h>

#include <fstream>

#include "scenarios/sweep_outputs.h"

namespace simreplay::scenarios {
namespace {

nlohmann::json Base() {
  return nlohmann::json::parse(R"({"trace":"t.jsonl.gz","loader":{"num_workers":2,"batch_size":8},
                                   "train":{"steps":10}})");
}

std::string ErrorOf(const nlohmann::json& j) {
  auto s = ParseScenario(j, "s.json", "/base");
  return s.ok() ? "" : s.status().message();
}

TEST(Scenario, ParsesAndResolvesRelativePaths) {
  auto s = ParseScenario(Base(), "s.json", "/base");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->trace_path, "/base/t.jsonl.gz");
  EXPECT_EQ(s->loader.num_workers, 2);
  EXPECT_EQ(s->loader.prefetch_factor, 2);  // PyTorch's default
  EXPECT_EQ(s->train.steps, 10);
}

TEST(Scenario, RejectsBadValuesNamingTheField) {
  auto j = Base();
  j["loader"]["num_workers"] = -1;
  EXPECT_NE(ErrorOf(j).find("s.json: loader: 'num_workers' must be in [0, 4096]"), std::string::npos) << ErrorOf(j);
  j = Base();
  j["loader"]["batch_size"] = "eight";
  EXPECT_NE(ErrorOf(j).find("'batch_size' must be an integer, found string"), std::string::npos) << ErrorOf(j);
  j = Base();
  j["loader"]["prefetch"] = 2;
  EXPECT_NE(ErrorOf(j).find("unknown key 'prefetch'"), std::string::npos);
  j = Base();
  j["train"] = {{"steps", 5}, {"epochs", 2}};
  EXPECT_NE(ErrorOf(j).find("not both"), std::string::npos);
  j = Base();
  j.erase("trace");
  EXPECT_NE(ErrorOf(j).find("needs \"model\" or \"trace\""), std::string::npos);
  j = Base();
  j["loader"]["persistent_workers"] = true;
  j["loader"]["num_workers"] = 0;
  EXPECT_NE(ErrorOf(j).find("persistent_workers requires num_workers > 0"), std::string::npos);
  j = Base();
  j["train"]["step_time_s"] = -0.5;
  EXPECT_NE(ErrorOf(j).find("'step_time_s' must be >= 0"), std::string::npos);
}

TEST(Scenario, SweepIsCartesianLastAxisFastest) {
  auto j = Base();
  j["sweep"] = {{"loader.num_workers", {0, 1, 2}}, {"loader.prefetch_factor", {2, 4}}};
  auto points = ExpandSweep(j, "s.json", "/base");
  ASSERT_TRUE(points.ok()) << points.status().message();
  ASSERT_EQ(points->size(), 6u);
  EXPECT_EQ((*points)[0].scenario.loader.num_workers, 0);
  EXPECT_EQ((*points)[1].scenario.loader.prefetch_factor, 4);
  EXPECT_EQ((*points)[5].scenario.loader.num_workers, 2);
  EXPECT_FALSE((*points)[0].scenario.resolved.contains("sweep"));
}

TEST(Scenario, SweepPointErrorsNameThePoint) {
  auto j = Base();
  j["sweep"] = {{"loader.num_workers", {1, -3}}};
  auto points = ExpandSweep(j, "s.json", "/base");
  ASSERT_FALSE(points.ok());
  EXPECT_NE(points.status().message().find("sweep point loader.num_workers=-3"), std::string::npos);
}

TEST(Scenario, MalformedFileReportsLine) {
  std::string path = ::testing::TempDir() + "/broken.json";
  std::ofstream(path) << "{\n  \"trace\": \"t\",\n  \"loader\": {,}\n}\n";
  auto j = LoadScenarioJson(path);
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("broken.json:3: malformed JSON"), std::string::npos) << j.status().message();
}

TEST(SweepOutputs, CsvHasAxesThenMetrics) {
  nlohmann::json result = {{"accelerator", "emulated"},
                           {"metrics", {{"train_throughput_samples_per_s", 12.5}, {"bottleneck", {{"stage", "cpu"}}}}}};
  std::vector<SweepResult> points = {{{{"loader.num_workers", 2}}, result}};
  std::string csv = SweepCsv(points);
  EXPECT_EQ(csv.substr(0, csv.find(',')), "loader.num_workers");
  EXPECT_NE(csv.find("\n2,12.5,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",cpu,emulated\n"), std::string::npos) << csv;
}

TEST(SweepOutputs, HtmlListsEveryPointsWarningsOnce) {
  auto point = [](int workers, std::vector<std::string> warnings) {
    nlohmann::json result = {{"accelerator", "emulated"},
                             {"warnings", warnings},
                             {"metrics",
                              {{"train_throughput_samples_per_s", 1.0},
                               {"pipeline_throughput_samples_per_s", 1.0},
                               {"gpu_idle_fraction", 0.5},
                               {"data_wait_s", {{"p95", 0.1}}},
                               {"time_to_first_batch_s", 0.1},
                               {"peak_host_memory_bytes", 1.0},
                               {"bottleneck", {{"stage", "cpu"}, {"evidence", "e"}}}}}};
    return SweepResult{{{"loader.num_workers", workers}}, result};
  };
  std::string html = SweepHtml("s.json", {point(1, {"shared"}), point(6, {"shared", "extrapolating: 6 workers"})});
  EXPECT_NE(html.find("extrapolating: 6 workers"), std::string::npos);
  EXPECT_EQ(html.find("<li>shared</li>"), html.rfind("<li>shared</li>"));
}

// Regression (issue 13): "1e400" in a scenario escaped LoadScenarioJson as an out_of_range exception.
TEST(Scenario, RegressionNumberOverflowIsFileLineError) {
  std::string path = ::testing::TempDir() + "/overflow_scenario.json";
  std::ofstream(path) << "{\"trace\": \"t.jsonl.gz\",\n \"train\": {\"steps\": 1e400}}\n";
  auto json = LoadScenarioJson(path);
  ASSERT_FALSE(json.ok());
  EXPECT_EQ(json.status().message(), path + ":2: a number out of range: 1e400 does not fit a 64-bit float");
}

}  // namespace
}  // namespace simreplay::scenarios
