// PreparePoint's warnings: oversubscription is counted over every rank on the node.
#include "sim/point_runner.h"

#include <algorithm>
#include <fstream>
#include <functional>
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

// The quickstart model changed by `change`, written to a file of this test's own, and `scenario` run on it.
Result<PreparedPoint> PrepareWithModel(const std::function<void(models::ModelParams*)>& change, nlohmann::json scenario) {
  const std::string dir = std::string(SIMREPLAY_SOURCE_DIR) + "/examples/quickstart";
  auto model = models::LoadModelFile(dir + "/model.json");
  EXPECT_TRUE(model.ok()) << model.status().message();
  model->trace_path = dir + "/" + model->trace_path;
  change(&*model);
  // One file per test: ctest runs this file's tests as parallel processes, and a shared path let one
  // test read another's half-written model.
  const std::string path = ::testing::TempDir() + "/point_runner_model_" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json";
  std::ofstream(path) << models::ModelToJson(*model).dump();
  scenario["model"] = path;
  auto s = scenarios::ParseScenario(scenario, dir + "/scenario.json", dir);
  EXPECT_TRUE(s.ok()) << s.status().message();
  CostCache cache;
  return PreparePoint(*s, &cache);
}

// A cluster scenario: the quickstart model with a probed network and an emulated step's host CPU.
Result<PreparedPoint> PrepareCluster(const nlohmann::json& cluster, const nlohmann::json& collective) {
  return PrepareWithModel(
      [](models::ModelParams* m) {
        m->gpu.step_host_cpu_s = 0.01;
        m->gpu.step_host_cpu_after_fork_s = 0.03;
        m->collective.gradient_bytes = 8e6;
        m->network.link_bytes_per_s = 1.2e8;
        m->network.link_latency_s = 1e-4;
        m->network.nominal_link_bytes_per_s = 1.25e8;
      },
      {{"loader", {{"num_workers", 1}, {"batch_size", 8}}},
       {"cluster", cluster},
       {"collective", collective},
       {"train", {{"steps", 4}}}});
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
  EXPECT_DOUBLE_EQ(same->input.model.gpu.step_host_cpu_after_fork_s, 0.03);
  EXPECT_DOUBLE_EQ(doubled->input.model.gpu.step_host_cpu_after_fork_s, 0.06);  // its pages grow alike
  EXPECT_TRUE(Warns(*doubled, "gpu.step_host_cpu_s scaled x2 with collective.gradient_bytes"));
}

// The quickstart model prices its recorded lifetimes' warm-up with its calibration's steady costs; a
// model file whose section is damaged is refused in one line naming the file, before anything runs.
TEST(PreparePoint, ADamagedWarmupSteadyCostIsRefusedNamingTheModel) {
  const std::string dir = std::string(SIMREPLAY_SOURCE_DIR) + "/examples/quickstart";
  std::ifstream in(dir + "/model.json");
  nlohmann::json model = nlohmann::json::parse(in);
  ASSERT_TRUE(model.contains("warmup_steady_cpu_s_per_unit"));
  ASSERT_GT(model["cpu"]["recorded_warmup_samples"]["value"].get<double>(), 0);
  model["trace"] = dir + "/trace.jsonl.gz";
  model["warmup_steady_cpu_s_per_unit"]["jpeg"] = -1;
  const std::string path = ::testing::TempDir() + "/damaged-warmup-model.json";
  std::ofstream(path) << model.dump();
  nlohmann::json j = {{"model", path}, {"loader", {{"num_workers", 2}, {"batch_size", 8}}}, {"train", {{"steps", 4}}}};
  auto s = scenarios::ParseScenario(j, dir + "/scenario.json", dir);
  ASSERT_TRUE(s.ok()) << s.status().message();
  CostCache cache;
  auto p = PreparePoint(*s, &cache);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find(path + ": warmup_steady_cpu_s_per_unit.jpeg must be a number >= 0"),
            std::string::npos)
      << p.status().message();
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

// The quickstart model (captured at 2 workers, batch 8) with `share` of its samples' CPU in page faults,
// measured or assumed, run at `workers`.
Result<PreparedPoint> PrepareChurn(double share, bool measured, int workers, int prefetch_factor = 2) {
  return PrepareWithModel(
      [&](models::ModelParams* m) {
        m->cpu.page_fault_cpu_share = share;
        m->info["cpu.page_fault_cpu_share"].assumed = !measured;
      },
      {{"loader", {{"num_workers", workers}, {"batch_size", 8}, {"prefetch_factor", prefetch_factor}}},
       {"hardware", {{"cpu_cores", 2}}},
       {"train", {{"steps", 4}}}});
}

// Another worker count deals the samples to other processes: a capture whose CPU is mostly measured page
// faults says the captured churn may not hold; a small or assumed share, the captured worker count, or
// a change that keeps every batch in its process (prefetch factor) says nothing.
TEST(PreparePoint, MeasuredChurnWarnsWhenTheLoaderDealsSamplesToOtherProcesses) {
  auto other = PrepareChurn(0.5, true, 4);
  ASSERT_TRUE(other.ok()) << other.status().message();
  EXPECT_TRUE(Warns(*other, "extrapolating: num_workers = 4"));
  EXPECT_TRUE(Warns(*other, "page-fault churn: 50% of the captured samples' CPU is page faults"));
  auto same = PrepareChurn(0.5, true, 2);
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(Warns(*same, "page-fault churn"));
  auto small = PrepareChurn(0.05, true, 4);
  ASSERT_TRUE(small.ok());
  EXPECT_FALSE(Warns(*small, "page-fault churn"));
  auto assumed = PrepareChurn(0.5, false, 4);
  ASSERT_TRUE(assumed.ok());
  EXPECT_FALSE(Warns(*assumed, "page-fault churn"));
  // Another prefetch factor is an extrapolation too, but every batch still goes to the same process.
  auto prefetch = PrepareChurn(0.5, true, 2, 4);
  ASSERT_TRUE(prefetch.ok());
  EXPECT_TRUE(Warns(*prefetch, "extrapolating: prefetch_factor = 4"));
  EXPECT_FALSE(Warns(*prefetch, "page-fault churn"));
}

}  // namespace
}  // namespace simreplay::sim
