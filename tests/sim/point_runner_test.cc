// PreparePoint's warnings: oversubscription is counted over every rank on the node.
#include "sim/point_runner.h"

#include <algorithm>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "models/model_params.h"

namespace simreplay::sim {
namespace {

Result<PreparedPoint> Prepare(int gpus, int workers, int cores, bool pin) {
  const std::string dir = std::string(SIMREPLAY_SOURCE_DIR) + "/examples/quickstart";
  nlohmann::json j = {{"model", "model.json"},
                      {"loader", {{"num_workers", workers}, {"batch_size", 8}, {"pin_memory", pin}}},
                      {"hardware", {{"cpu_cores", cores}, {"gpus", gpus}}},
                      {"train", {{"steps", 4}}}};
  auto s = scenarios::ParseScenario(j, dir + "/scenario.json", dir);
  EXPECT_TRUE(s.ok()) << s.status().message();
  CostCache cache;
  return PreparePoint(*s, &cache);
}

bool Warns(const PreparedPoint& p, const std::string& what) {
  return std::any_of(p.warnings.begin(), p.warnings.end(),
                     [&](const std::string& w) { return w.find(what) != std::string::npos; });
}

// 8 ranks x (8 workers + main) = 72 processes on 64 cores: oversubscribed, though one rank's 9 are
// not. The quickstart model has no measured contention curve, so the prediction rests on an assumed
// one and must say so.
TEST(PreparePoint, OversubscriptionCountsEveryRankOnTheNode) {
  auto eight = Prepare(8, 8, 64, false);
  ASSERT_TRUE(eight.ok()) << eight.status().message();
  EXPECT_TRUE(Warns(*eight, "CPU contention curve assumed: 8 ranks x (8 workers + main process) on 64 cores"));
  auto one = Prepare(1, 8, 64, false);
  ASSERT_TRUE(one.ok());
  EXPECT_FALSE(Warns(*one, "CPU contention curve assumed"));
  // 8 ranks x (7 workers + main) = 64 processes fit; their 8 pin threads do not.
  auto pinned = Prepare(8, 7, 64, true);
  ASSERT_TRUE(pinned.ok());
  EXPECT_TRUE(Warns(*pinned, "CPU contention curve assumed: 8 ranks x (7 workers + main process + pin thread)"));
  auto unpinned = Prepare(8, 7, 64, false);
  ASSERT_TRUE(unpinned.ok());
  EXPECT_FALSE(Warns(*unpinned, "CPU contention curve assumed"));
}

// A cluster scenario: the quickstart model with a probed network and an emulated step's host CPU.
Result<PreparedPoint> PrepareCluster(const nlohmann::json& cluster, const nlohmann::json& collective) {
  const std::string dir = std::string(SIMREPLAY_SOURCE_DIR) + "/examples/quickstart";
  auto model = models::LoadModelFile(dir + "/model.json");
  EXPECT_TRUE(model.ok()) << model.status().message();
  model->trace_path = dir + "/" + model->trace_path;
  model->gpu.step_host_cpu_s = 0.01;
  model->collective.gradient_bytes = 8e6;
  model->network.link_bytes_per_s = 1.2e8;
  model->network.link_latency_s = 1e-4;
  model->network.nominal_link_bytes_per_s = 1.25e8;
  // One file per test: ctest runs this file's tests as parallel processes, and a shared path let one
  // test read another's half-written model.
  const std::string path = ::testing::TempDir() + "/point_runner_cluster_model_" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json";
  std::ofstream(path) << models::ModelToJson(*model).dump();
  nlohmann::json j = {{"model", path},       {"loader", {{"num_workers", 1}, {"batch_size", 8}}},
                      {"cluster", cluster},  {"collective", collective},
                      {"train", {{"steps", 4}}}};
  auto s = scenarios::ParseScenario(j, dir + "/scenario.json", dir);
  EXPECT_TRUE(s.ok()) << s.status().message();
  CostCache cache;
  return PreparePoint(*s, &cache);
}

TEST(PreparePoint, ClusterNicsComeFromTheProbeUnlessStated) {
  auto probed = PrepareCluster({{"nodes", 2}}, nlohmann::json::object());
  ASSERT_TRUE(probed.ok()) << probed.status().message();
  EXPECT_DOUBLE_EQ(probed->input.scenario.cluster.nic_bytes_per_s, 1.2e8);
  EXPECT_EQ(probed->network.Label(), kProbed);
  auto nominal = PrepareCluster({{"nodes", 2}, {"network", {{"nic_bytes_per_s", 1.25e8}}}}, nlohmann::json::object());
  ASSERT_TRUE(nominal.ok());
  EXPECT_DOUBLE_EQ(nominal->input.scenario.cluster.nic_bytes_per_s, 1.25e8);
  EXPECT_TRUE(Warns(*nominal, "is assumed (nominal)"));
}

TEST(PreparePoint, AStatedGradientScalesTheEmulatedStepsHostCpu) {
  auto same = PrepareCluster({{"nodes", 2}}, nlohmann::json::object());
  ASSERT_TRUE(same.ok());
  EXPECT_DOUBLE_EQ(same->input.model.gpu.step_host_cpu_s, 0.01);
  auto doubled = PrepareCluster({{"nodes", 2}}, {{"gradient_bytes", 16e6}});
  ASSERT_TRUE(doubled.ok());
  EXPECT_DOUBLE_EQ(doubled->input.model.gpu.step_host_cpu_s, 0.02);
  EXPECT_TRUE(Warns(*doubled, "gpu.step_host_cpu_s scaled x2 with collective.gradient_bytes"));
}

TEST(PreparePoint, NodesSharingCoresCountEveryNodesProcesses) {
  // 4 nodes x (1 worker + main) on the trace's 2 cores, shared: 8 processes, oversubscribed; on each
  // node's own 2 cores not.
  auto shared = PrepareCluster({{"nodes", 4}, {"nodes_share_cores", true}}, nlohmann::json::object());
  ASSERT_TRUE(shared.ok());
  EXPECT_TRUE(Warns(*shared, "4 ranks x (1 workers + main process) on 2 cores"));
  auto own = PrepareCluster({{"nodes", 4}}, nlohmann::json::object());
  ASSERT_TRUE(own.ok());
  EXPECT_FALSE(Warns(*own, "ranks x (1 workers"));
}

}  // namespace
}  // namespace simreplay::sim
