#include "scenarios/scenario.h"

#include <gtest/gtest.h>

#include <fstream>

#include <fmt/format.h>

#include "scenarios/memory_limit.h"
#include "scenarios/sweep_outputs.h"
#include "tests/scenarios/scenario_test_util.h"
#include "tests/scoped_env.h"

namespace simreplay::scenarios {
namespace {

using testing::Base;
using testing::ErrorOf;

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
  j = Base();
  j["replay"] = {{"rank_folding", "maybe"}};
  EXPECT_NE(ErrorOf(j).find("s.json: replay: 'rank_folding' must be \"auto\" or \"off\", found \"maybe\""),
            std::string::npos)
      << ErrorOf(j);
  j = Base();
  j["replay"] = {{"rank_folding", "off"}};
  auto off = ParseScenario(j, "s.json", "/base");
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_FALSE(off->rank_folding);
  EXPECT_TRUE(ParseScenario(Base(), "s.json", "/base")->rank_folding);
}

TEST(Scenario, ClusterKeysParseWithDefaults) {
  auto j = Base();
  j["hardware"] = {{"gpus", 8}};
  j["cluster"] = nlohmann::json::parse(R"({"nodes": 4, "topology": "star",
      "network": {"nic_bytes_per_s": 25e9, "nic_latency_s": 3e-6, "nics_per_node": 2},
      "intra_node": {"bytes_per_s": 400e9, "latency_s": 1e-6},
      "stragglers": [{"node": 3, "gpu_step_scale": 1.5}]})");
  j["collective"] = nlohmann::json::parse(
      R"({"algorithm": "hierarchical", "gradient_bytes": 1e8, "bucket_bytes": 25e6, "overlap": 0.4})");
  j["storage"] = nlohmann::json::parse(R"({"kind": "shared", "aggregate_bytes_per_s": 2e9, "latency_s": 1e-3})");
  auto s = ParseScenario(j, "s.json", "/base");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->cluster.nodes, 4);
  EXPECT_EQ(s->cluster.gpus_per_node, 8);  // from hardware.gpus
  EXPECT_EQ(s->cluster.Ranks(), 32);
  EXPECT_EQ(s->cluster.nics_per_node, 2);
  EXPECT_TRUE(s->cluster.nic_rate_stated);  // stated: simulated as written, labelled nominal
  EXPECT_TRUE(s->cluster.nic_latency_stated);
  EXPECT_FALSE(s->cluster.nodes_share_cores);
  EXPECT_TRUE(s->storage.client_cache);  // the default: a network file system's client cache
  EXPECT_EQ(s->cluster.intra_node_bytes_per_s, 400e9);
  ASSERT_EQ(s->cluster.stragglers.size(), 1u);
  EXPECT_EQ(s->cluster.stragglers[0].node, 3);
  EXPECT_EQ(s->cluster.stragglers[0].cpu_speed_scale, 1.0);
  EXPECT_EQ(s->collective.algorithm, CollectiveAlgorithm::kHierarchical);
  EXPECT_EQ(s->collective.overlap, 0.4);
  EXPECT_EQ(s->storage.kind, StorageKind::kShared);
  // Without a "collective" section: analytic on one node, ring on a cluster.
  auto one = ParseScenario(Base(), "s.json", "/base");
  EXPECT_EQ(one->collective.algorithm, CollectiveAlgorithm::kAnalytic);
  auto two = Base();
  two["cluster"] = {{"nodes", 2}, {"gpus_per_node", 4}};
  auto parsed = ParseScenario(two, "s.json", "/base");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->collective.algorithm, CollectiveAlgorithm::kRing);
  EXPECT_EQ(parsed->hardware.gpus, 4);  // hardware.gpus follows cluster.gpus_per_node
}

// Every node count the planner offers (candidates.nodes up to 4096) is a valid cluster size, up to
// 16384 nodes; what cannot fit in memory is refused in one line. Actors per rank: loop, pin thread and
// workers; past 30000 actors each costs its whole 256 KiB stack + 16 kB (unguarded stacks).
// 4096 nodes x 8 GPUs x 2 workers: 32768 x 4 = 131072 actors x (262144 + 16000) B = 36.46 GB, plus
// 32768 ranks x 1000 steps x 16 B = 0.52 GB, plus 64 MB: 37.05 GB, under the 64 GB limit.
// 16384 nodes x 1 GPU, no workers: 32768 actors x 278144 B = 9.11 GB + 0.26 GB + 0.06 GB: loads.
// 4096 nodes x 8 GPUs x 8 workers: 327680 actors x 278144 B = 91.14 GB + 0.52 + 0.06 = 91.73 GB to
// simulate every rank: refused with rank folding off. Folded (the default) it is 8 nodes' 64 ranks x 10
// guarded actors x 48 kB = 30.7 MB + 64 x 1000 x 16 B + the other 32704 ranks' platform share of 8 kB
// each (261.6 MB) + 64 MB = 357.4 MB: loads.
TEST(Scenario, ClusterSizesUpToTheLimitLoadAndWhatCannotFitIsRefused) {
  const ScopedEnv roomy("SIMREPLAY_MEMORY_LIMIT", "1T");  // the simulator's own 64 GB limit governs
  auto parse = [](int nodes, int gpus, int workers) {
    auto j = Base();
    j["cluster"] = {{"nodes", nodes}, {"gpus_per_node", gpus}};
    j["loader"]["num_workers"] = workers;
    j["train"]["steps"] = 1000;
    return ParseScenario(j, "s.json", ".");
  };
  auto planner_largest = parse(4096, 8, 2);
  ASSERT_TRUE(planner_largest.ok()) << planner_largest.status().message();
  EXPECT_NEAR(EstimatedSimulationBytes(*planner_largest), 131072 * 278144.0 + 32768 * 1000 * 16.0 + 64e6, 1);
  EXPECT_TRUE(parse(16384, 1, 0).ok());
  EXPECT_FALSE(parse(16385, 1, 0).ok());
  EXPECT_TRUE(parse(16384, 8, 8).ok());  // 131,072 GPUs: the most the simulator builds a platform for
  auto too_many_gpus = parse(16384, 9, 0);
  ASSERT_FALSE(too_many_gpus.ok());
  EXPECT_NE(too_many_gpus.status().message().find(
                "s.json: cluster: 16384 nodes x 9 GPUs are 147456 GPUs, more than the 131072 the simulator builds"),
            std::string::npos)
      << too_many_gpus.status().message();
  auto folded = parse(4096, 8, 8);
  ASSERT_TRUE(folded.ok()) << folded.status().message();
  EXPECT_NEAR(EstimatedSimulationBytes(*folded, SimulatedNodesAtLeast(*folded)),
              640 * 48e3 + 64 * 1000 * 16.0 + 32704 * 8e3 + 64e6, 1);
  auto j = Base();
  j["cluster"] = {{"nodes", 4096}, {"gpus_per_node", 8}};
  j["loader"]["num_workers"] = 8;
  j["train"]["steps"] = 1000;
  j["replay"] = {{"rank_folding", "off"}};
  auto too_big = ParseScenario(j, "s.json", ".");
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.status().message().find("s.json: cluster: 4096 nodes x 8 GPUs with 8 workers per rank need an "
                                            "estimated 92 GB to simulate, more than the 64 GB limit"),
            std::string::npos)
      << too_big.status().message();
  EXPECT_EQ(too_big.status().message().find('\n'), std::string::npos);
}

// Issue 44 item 4: a 16,384-GPU plan candidate died of the OOM killer on a 24 GiB machine, under the
// 64 GB limit. The limit is the lower of 64 GB and 80% of the machine's memory (its cgroup's when
// lower), or SIMREPLAY_MEMORY_LIMIT; what exceeds it is refused with the estimate and the limit.
TEST(Scenario, WhatExceedsTheMachinesMemoryIsRefusedWithTheEstimateAndTheLimit) {
  auto j = Base();
  j["cluster"] = {{"nodes", 4096}, {"gpus_per_node", 8}};
  j["loader"]["num_workers"] = 2;
  j["train"]["steps"] = 1000;
  j["replay"] = {{"rank_folding", "off"}};  // 37.05 GB to simulate every rank (above)
  {
    const ScopedEnv small("SIMREPLAY_MEMORY_LIMIT", "16G");
    auto refused = ParseScenario(j, "s.json", ".");
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find(
                  "s.json: cluster: 4096 nodes x 8 GPUs with 2 workers per rank need an estimated 37 GB to simulate, "
                  "more than the 17 GB limit (SIMREPLAY_MEMORY_LIMIT) (fewer nodes, workers or steps)"),
              std::string::npos)
        << refused.status().message();
  }
  {
    const ScopedEnv large("SIMREPLAY_MEMORY_LIMIT", "40G");
    EXPECT_TRUE(ParseScenario(j, "s.json", ".").ok());
  }
  {
    const ScopedEnv unreadable("SIMREPLAY_MEMORY_LIMIT", "lots");
    auto bad = ParseScenario(Base(), "s.json", ".");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("SIMREPLAY_MEMORY_LIMIT=lots: not a size"), std::string::npos)
        << bad.status().message();
  }
  // Without the variable: 80% of this machine's memory (or its cgroup's), never above 64 GB.
  auto machine = MachineMemoryLimit();
  ASSERT_TRUE(machine.ok()) << machine.status().message();
  EXPECT_GT(machine->bytes, 0);
  EXPECT_LE(SimulationMemoryLimitBytes(), kMaxSimulationBytes);
  EXPECT_EQ(ShowGigabytes(91.73e9), "92 GB");
  EXPECT_EQ(ShowGigabytes(9.11e9), "9.1 GB");
  EXPECT_EQ(ShowGigabytes(0.213e9), "0.21 GB");
}

TEST(Scenario, ClusterKeysRejectBadValues) {
  auto error = [](const char* section, const char* text) {
    auto j = Base();
    j[section] = nlohmann::json::parse(text);
    return ErrorOf(j);
  };
  EXPECT_NE(error("cluster", R"({"nodes": 0})").find("s.json: cluster: 'nodes' must be in [1, 16384], found 0"),
            std::string::npos);
  EXPECT_NE(error("cluster", R"({"topology": "ring"})").find("'topology' must be \"star\" or \"fat-tree\""),
            std::string::npos);
  EXPECT_NE(error("cluster", R"({"nodes": 2, "stragglers": [{"node": 2}]})").find("'node' must be in [0, 1]"),
            std::string::npos);
  EXPECT_NE(error("cluster", R"({"network": {"nic_bytes_per_s": -1}})").find("cluster.network"), std::string::npos);
  EXPECT_NE(error("cluster", R"({"nodes": 2, "nodes_share_cores": true, "stragglers": [{"node": 1, "cpu_speed_scale": 2}]})")
                .find("no node can have slower ones"),
            std::string::npos);
  EXPECT_NE(error("cluster", R"({"nodes_share_cores": 1})").find("nodes_share_cores"), std::string::npos);
  EXPECT_NE(error("cluster", R"({"topology": "fat-tree", "fat_tree": {"nodes_per_switch": 8, "oversubscription": 3}})")
                .find("whole number of spine switches"),
            std::string::npos);
  EXPECT_NE(error("collective", R"({"algorithm": "butterfly"})").find("'algorithm' must be"), std::string::npos);
  EXPECT_NE(error("collective", R"({"overlap": 1.5})").find("'overlap' must be in [0, 1]"), std::string::npos);
  EXPECT_NE(error("storage", R"({"kind": "nfs"})").find("'kind' must be \"local\" or \"shared\""), std::string::npos);
  EXPECT_NE(error("storage", R"({"aggregate_bytes_per_s": 0})").find("'aggregate_bytes_per_s' must be in (0"),
            std::string::npos);
  auto j = Base();
  j["hardware"] = {{"gpus", 8}};
  j["cluster"] = {{"gpus_per_node", 4}};
  EXPECT_NE(ErrorOf(j).find("contradicts hardware.gpus"), std::string::npos);
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
  EXPECT_NE(csv.find(",cpu,emulated,\n"), std::string::npos) << csv;  // no NIC used: empty network
  result["resolved"] = {{"network", {{"label", "assumed (nominal)"}}}};
  std::string cluster = SweepCsv({{{{"cluster.nodes", 2}}, result}});
  EXPECT_NE(cluster.find(",accelerator,network\n"), std::string::npos) << cluster;
  EXPECT_NE(cluster.find(",cpu,emulated,assumed (nominal)\n"), std::string::npos) << cluster;
}

// A what-if point over loader.num_workers with every metric the HTML report reads.
SweepResult ReportPoint(int workers, const std::vector<std::string>& warnings, double peak_host_memory_bytes) {
  nlohmann::json result = {{"accelerator", "emulated"},
                           {"warnings", warnings},
                           {"metrics",
                            {{"train_throughput_samples_per_s", 1.0},
                             {"pipeline_throughput_samples_per_s", 1.0},
                             {"gpu_idle_fraction", 0.5},
                             {"data_wait_s", {{"p95", 0.1}}},
                             {"time_to_first_batch_s", 0.1},
                             {"peak_host_memory_bytes", peak_host_memory_bytes},
                             {"bottleneck", {{"stage", "cpu"}, {"evidence", "e"}}}}}};
  return SweepResult{{{"loader.num_workers", workers}}, result};
}

TEST(SweepOutputs, HtmlListsEveryPointsWarningsOnce) {
  auto point = [](int workers, std::vector<std::string> warnings) { return ReportPoint(workers, warnings, 1.0); };
  std::string html = SweepHtml("s.json", {point(1, {"shared"}), point(6, {"shared", "extrapolating: 6 workers"})});
  EXPECT_NE(html.find("<li>extrapolating: 6 workers (loader.num_workers=6)</li>"), std::string::npos) << html;
  EXPECT_NE(html.find("<li>shared (every point: loader.num_workers=1, 6)</li>"), std::string::npos) << html;
}

// Issue 44 item 6: the quickstart's what-if over 0-6 workers listed 13 warnings for 6 points, the same
// three said with each point's own figures. One line per kind, with the points it concerns.
TEST(SweepOutputs, AWarningRepeatedWithEachPointsFiguresIsOneLine) {
  auto point = [](int workers) {
    std::vector<std::string> w = {fmt::format("extrapolating: num_workers = {} outside the measured range [2, 2]", workers)};
    if (workers >= 3) {
      w.push_back(fmt::format("CPU contention curve assumed: {} workers + main process on 2 cores", workers));
    }
    return ReportPoint(workers, w, 1.0);
  };
  const std::vector<SweepResult> points = {point(0), point(1), point(3), point(4), point(6)};
  const auto lines = GroupedWarnings(points);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            "extrapolating: num_workers = 0 outside the measured range [2, 2] (loader.num_workers=0; likewise, with "
            "its own figures, at loader.num_workers=1, 3, 4, 6)");
  EXPECT_EQ(lines[1],
            "CPU contention curve assumed: 3 workers + main process on 2 cores (loader.num_workers=3; likewise, with "
            "its own figures, at loader.num_workers=4, 6)");
  // One point: the warning as it is.
  EXPECT_EQ(GroupedWarnings({point(3)}).size(), 2u);
  EXPECT_EQ(GroupedWarnings({point(3)})[0], "extrapolating: num_workers = 3 outside the measured range [2, 2]");
}

TEST(SweepOutputs, MemoryAxisIsInGibOrMibNotBytes) {
  // 0.95e9 and 1.5e9 bytes: the largest is over 1 GiB (1073741824), so the axis is in GiB. Its top
  // tick is ymax x 1.1 = 1.5e9 / 2^30 x 1.1 = 1.5367 GiB ("1.54"); nothing prints bytes (9.5e+08).
  auto point = [](int workers, double bytes) { return ReportPoint(workers, {}, bytes); };
  std::string html = SweepHtml("s.json", {point(1, 0.95e9), point(2, 1.5e9)});
  EXPECT_NE(html.find("Peak host memory (GiB)"), std::string::npos);
  EXPECT_NE(html.find(">1.54<"), std::string::npos);
  EXPECT_EQ(html.find("(bytes)"), std::string::npos);
  EXPECT_EQ(html.find("e+08"), std::string::npos);
  // All under 1 GiB: MiB. 5e8 bytes = 476.84 MiB, top tick 476.84 x 1.1 = 524.52, 3 digits: "525".
  html = SweepHtml("s.json", {point(1, 2e8), point(2, 5e8)});
  EXPECT_NE(html.find("Peak host memory (MiB)"), std::string::npos);
  EXPECT_NE(html.find(">525<"), std::string::npos);
}

TEST(SweepOutputs, ScalingCurveMarksTheKnee) {
  // 1, 2, 4, 8 nodes of 8 GPUs at 800, 1580, 2900, 3400 samples/s: 100 samples/s per GPU at 8 GPUs.
  // Added GPUs buy (1580 - 800) / 8 = 97.5 (97.5% of linear), (2900 - 1580) / 16 = 82.5 (82.5%), then
  // (3400 - 2900) / 32 = 15.6 (15.6% < 50%): the knee is the 64-GPU point. Efficiency there:
  // 3400 / 64 / 100 = 53.1%.
  std::vector<SweepResult> points;
  const std::vector<std::pair<int, double>> runs = {{1, 800}, {2, 1580}, {4, 2900}, {8, 3400}};
  for (const auto& [nodes, tp] : runs) {
    nlohmann::json result = {
        {"metrics", {{"train_throughput_samples_per_s", tp}, {"cluster", {{"ranks", nodes * 8}}}}}};
    points.push_back({{{"cluster.nodes", nodes}}, result});
  }
  int knee = -2;
  auto curve = ScalingCurve(points, &knee);
  ASSERT_EQ(curve.size(), 4u);
  EXPECT_EQ(knee, 3);
  EXPECT_NEAR(curve[1].marginal_fraction, 0.975, 1e-12);
  EXPECT_NEAR(curve[3].marginal_fraction, 500.0 / 32 / 100, 1e-12);
  EXPECT_NEAR(curve[3].efficiency, 3400.0 / 64 / 100, 1e-12);
  const std::string chart = ScalingChart(points);
  EXPECT_NE(chart.find("knee: added GPUs buy 16% of linear"), std::string::npos) << chart;
  EXPECT_NE(chart.find("from 64 GPUs on"), std::string::npos);
  // Without a cluster.nodes axis there is no curve.
  points[0].axes[0].first = "loader.num_workers";
  EXPECT_TRUE(ScalingCurve({points[0]}, &knee).empty());
}

// Regression (issue 13): "1e400" in a scenario escaped LoadScenarioJson as an out_of_range exception.
TEST(Scenario, RegressionNumberOverflowIsFileLineError) {
  std::string path = ::testing::TempDir() + "/overflow_scenario.json";
  std::ofstream(path) << "{\"trace\": \"t.jsonl.gz\",\n \"train\": {\"steps\": 1e400}}\n";
  auto json = LoadScenarioJson(path);
  ASSERT_FALSE(json.ok());
  EXPECT_EQ(json.status().message(), path + ":2: a number out of range: 1e400 does not fit a 64-bit float");
}

TEST(ErrorLine, ScenarioErrorsNameTheLineOfTheOffendingKey) {
  const std::string path = ::testing::TempDir() + "/bad_scenario.json";
  std::ofstream(path) << "{\"model\": \"model.json\",\n"
                         " \"train\": {\"steps\": 10},\n"
                         " \"loader\": {\"batch_size\": 8,\n"
                         "            \"num_workers\": -2}}\n";
  auto json = LoadScenarioJson(path);
  ASSERT_TRUE(json.ok()) << json.status().message();
  auto scenario = ParseScenario(*json, path, ::testing::TempDir());
  ASSERT_FALSE(scenario.ok());
  EXPECT_EQ(scenario.status().message().rfind(path + ":4: loader: 'num_workers'", 0), 0u)
      << scenario.status().message();
}

TEST(Checkpoint, DefaultsFollowTheParallelismAndTheStorage) {
  auto j = Base();
  j["checkpoint"] = {{"every_steps", 5}, {"bytes", 1e9}};
  auto s = ParseScenario(j, "s.json", "/base");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->checkpoint.enabled());
  EXPECT_EQ(s->checkpoint.mode, CheckpointMode::kSync);
  EXPECT_EQ(s->checkpoint.writers, CheckpointWriters::kRank0);  // DDP: one rank saves the replica
  EXPECT_EQ(s->checkpoint.target, CheckpointTarget::kLocal);
  j["collective"] = {{"sharding", "full"}};
  j["storage"] = {{"kind", "shared"}};
  s = ParseScenario(j, "s.json", "/base");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->checkpoint.writers, CheckpointWriters::kAllRanks);  // FSDP: every rank saves its shard
  EXPECT_EQ(s->checkpoint.target, CheckpointTarget::kShared);
  EXPECT_FALSE(ParseScenario(Base(), "s.json", "/base")->checkpoint.enabled());  // no section, no saves
}

TEST(Checkpoint, RejectsBadSectionsNamingTheField) {
  auto error = [](const std::string& text) {
    auto j = Base();
    j["checkpoint"] = nlohmann::json::parse(text);
    return ErrorOf(j);
  };
  EXPECT_NE(error(R"({"bytes": 1e9})").find("s.json: checkpoint: missing"), std::string::npos);
  EXPECT_NE(error(R"({"every_steps": 0, "bytes": 1e9})").find("'every_steps' must be >= 1"), std::string::npos);
  EXPECT_NE(error(R"({"every_steps": 5})").find("missing required field 'bytes'"), std::string::npos);
  EXPECT_NE(error(R"({"every_steps": 5, "bytes": -1})").find("field 'bytes' must be"), std::string::npos);
  EXPECT_NE(error(R"({"every_steps": 5, "bytes": 1, "mode": "lazy"})").find("'mode' must be \"sync\" or \"async\""),
            std::string::npos);
  EXPECT_NE(error(R"({"every_steps": 5, "bytes": 1, "writers": "rank1"})").find("'writers' must be"), std::string::npos);
  EXPECT_NE(error(R"({"every_steps": 5, "bytes": 1, "target": "shared"})").find("needs storage.kind"),
            std::string::npos);
  EXPECT_NE(error(R"({"every_steps": 5, "bytes": 1, "mode": "async"})").find("needs 'snapshot_bytes_per_s'"),
            std::string::npos);
  EXPECT_NE(error(R"({"every_steps": 5, "bytes": 1, "interval": 3})").find("unknown key 'interval'"), std::string::npos);
  EXPECT_NE(error("[1]").find("checkpoint: must be an object"), std::string::npos);
}

TEST(Checkpoint, ErrorsNameTheLineOfTheOffendingKey) {
  const std::string path = ::testing::TempDir() + "/bad_checkpoint.json";
  std::ofstream(path) << "{\"model\": \"model.json\",\n"
                         " \"train\": {\"steps\": 10},\n"
                         " \"checkpoint\": {\"every_steps\": 5,\n"
                         "                \"bytes\": 1e9,\n"
                         "                \"mode\": \"later\"}}\n";
  auto json = LoadScenarioJson(path);
  ASSERT_TRUE(json.ok()) << json.status().message();
  auto scenario = ParseScenario(*json, path, ::testing::TempDir());
  ASSERT_FALSE(scenario.ok());
  EXPECT_EQ(scenario.status().message().rfind(path + ":5: checkpoint: 'mode'", 0), 0u) << scenario.status().message();
}

}  // namespace
}  // namespace simreplay::scenarios
