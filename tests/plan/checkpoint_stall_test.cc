// The checkpoint stall of plan candidates (plan/checkpoint_stall.h): the layout of the saves from the
// plan's inputs, the checkpoint window simulated for real (sim/checkpoint.h), and the label goodput
// sees. Expectations are bandwidth arithmetic, derived beside each check.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "plan/checkpoint_stall.h"
#include "plan/goodput.h"
#include "sim/isolated_run.h"
#include "sim/point_runner.h"

namespace simreplay::plan {
namespace {

const std::string kScenarioPath = std::string(SIMREPLAY_SOURCE_DIR) + "/examples/plan/scenario.json";

nlohmann::json ExampleScenario() {
  std::ifstream f(kScenarioPath);
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::json::parse(ss.str());
}

CheckpointInputs Inputs(const std::string& mode = "sync") {
  CheckpointInputs in;
  in.bytes = 1e9;
  in.write_bytes_per_s = 1e9;
  in.mode = mode;
  in.snapshot_bytes_per_s = 1e10;
  return in;
}

TEST(CheckpointLayout, DdpWritesTheWholeStateFsdpEveryRankItsShard) {
  const nlohmann::json scenario = ExampleScenario();
  // DDP on 4 nodes x 8 GPUs: rank 0 writes all 1 GB to its node disk (1 s at 1 GB/s). Synchronous
  // saves come every 2 steps in the window; asynchronous ones every ceil(1.5 x 1 s / 0.1 s) = 15 steps.
  CheckpointLayout ddp = LayOutCheckpoint(Inputs(), scenario, false, 4, 8, 0.1);
  EXPECT_EQ(ddp.sim.every_steps, 2);
  EXPECT_EQ(LayOutCheckpoint(Inputs("async"), scenario, false, 4, 8, 0.1).sim.every_steps, 15);
  EXPECT_TRUE(ddp.sim.simulate);
  EXPECT_EQ(ddp.sim.writers, "rank0");
  EXPECT_EQ(ddp.writers, 1);
  EXPECT_DOUBLE_EQ(ddp.bytes_per_writer, 1e9);
  EXPECT_EQ(ddp.sim.target, "local");
  EXPECT_DOUBLE_EQ(ddp.closed_form_stall_s, 1.0);
  // One writer per node when the plan says so: each still writes the whole state.
  CheckpointInputs per_node = Inputs();
  per_node.ddp_writers = "per_node";
  CheckpointLayout ddp_nodes = LayOutCheckpoint(per_node, scenario, false, 4, 8, 0.1);
  EXPECT_EQ(ddp_nodes.writers, 4);
  EXPECT_DOUBLE_EQ(ddp_nodes.bytes_per_writer, 1e9);
  // FSDP: 32 ranks, 1/32 GB each; a node disk takes 8 of them: 0.25 s, async saves every 4 steps.
  CheckpointLayout fsdp = LayOutCheckpoint(Inputs(), scenario, true, 4, 8, 0.1);
  EXPECT_EQ(fsdp.sim.writers, "all_ranks");
  EXPECT_EQ(fsdp.writers, 32);
  EXPECT_DOUBLE_EQ(fsdp.bytes_per_writer, 1e9 / 32);
  EXPECT_EQ(LayOutCheckpoint(Inputs("async"), scenario, true, 4, 8, 0.1).sim.every_steps, 4);
  // The closed form of a synchronous save is one number for every size and sharding.
  EXPECT_DOUBLE_EQ(fsdp.closed_form_stall_s, 1.0);
  // Async: the closed form is the snapshot, bytes per writer / snapshot rate.
  EXPECT_DOUBLE_EQ(LayOutCheckpoint(Inputs("async"), scenario, true, 4, 8, 0.1).closed_form_stall_s, 1e9 / 32 / 1e10);
}

TEST(CheckpointLayout, SharedStorageWithoutBandwidthFallsBackToTheClosedFormLabelledSo) {
  nlohmann::json scenario = ExampleScenario();
  scenario["storage"] = {{"kind", "shared"}};
  CheckpointLayout layout = LayOutCheckpoint(Inputs(), scenario, false, 2, 8, 0.1);
  EXPECT_FALSE(layout.sim.simulate);
  EXPECT_NE(layout.why_not_simulated.find("aggregate_bytes_per_s"), std::string::npos);
  const CheckpointStall stall = StallOf(layout, CandidateCheckpointRun{});
  EXPECT_EQ(stall.per_save.status, "closed form");
  EXPECT_DOUBLE_EQ(stall.per_save.value, 1.0);  // 1 GB / 1 GB/s
  EXPECT_NE(stall.per_save.source.find("not simulated"), std::string::npos);
  // With the store's bandwidth stated it is simulated, on the shared target: 1 GB over 2 GB/s is
  // 0.5 s, an async save every ceil(1.5 x 0.5 / 0.1) = 8 steps.
  scenario["storage"]["aggregate_bytes_per_s"] = 2e9;
  layout = LayOutCheckpoint(Inputs("async"), scenario, false, 2, 8, 0.1);
  EXPECT_TRUE(layout.sim.simulate);
  EXPECT_EQ(layout.sim.target, "shared");
  EXPECT_EQ(layout.sim.every_steps, 8);
}

TEST(CheckpointLayout, AsyncIntervalIsBoundedByTheWrite) {
  CheckpointLayout layout = LayOutCheckpoint(Inputs("async"), ExampleScenario(), false, 1, 8, 0.1);
  CandidateCheckpointRun run;
  run.simulated = true;
  run.saves = 3;
  run.stall_per_save_s = 0.1;
  run.write_s_per_save = 1.0;
  const CheckpointStall stall = StallOf(layout, run);
  EXPECT_EQ(stall.per_save.status, "simulated");
  EXPECT_DOUBLE_EQ(stall.per_save.value, 0.1);
  EXPECT_DOUBLE_EQ(stall.min_interval_s, 1.0);
  // A failure every 2 s: the optimal interval is about sqrt(2 x 0.1 x 2) = 0.63 s (Young; the exact
  // optimum is close to it); the write takes 1 s, so the interval is raised to 1 s.
  GoodputInput in;
  in.work_s = 100;
  in.training_s = 100;
  in.job_mtbf_s = 2;
  in.checkpoint_write_s = stall.per_save.value;
  in.min_interval_s = stall.min_interval_s;
  const Goodput g = ComputeGoodput(in);
  EXPECT_LT(g.optimal_interval_s, 1.0);
  EXPECT_DOUBLE_EQ(g.checkpoint_interval_s, 1.0);
  EXPECT_TRUE(g.interval_bounded);
  // Sync saves have no such bound.
  EXPECT_DOUBLE_EQ(StallOf(LayOutCheckpoint(Inputs(), ExampleScenario(), false, 1, 8, 0.1), run).min_interval_s, 0);
}

// The checkpoint window of a candidate of `nodes` x `gpus` with 0.1 s steps, simulated in a child;
// `storage` replaces the scenario's storage section when given.
CandidateCheckpointRun SimulateWindow(int nodes, int gpus, bool fsdp, const std::string& mode,
                                      const nlohmann::json& storage = nullptr) {
  CandidateSimSetup setup;
  setup.scenario_json = ExampleScenario();
  if (!storage.is_null()) setup.scenario_json["storage"] = storage;
  setup.scenario_path = kScenarioPath;
  setup.nodes = nodes;
  setup.gpus_per_node = gpus;
  setup.dataset_samples = 100000;
  setup.step_time_s = 0.1;
  setup.gradient_bytes = 1e6;  // a small all-reduce every step keeps the ranks in step
  setup.fsdp = fsdp;
  const CheckpointLayout layout = LayOutCheckpoint(Inputs(mode), setup.scenario_json, fsdp, nodes, gpus, 0.1);
  setup.checkpoint = layout.sim;
  sim::CostCache cache;
  auto window = PrepareCheckpointWindow(setup, &cache);
  EXPECT_TRUE(window.ok()) << window.status().message();
  if (!window.ok()) return {};
  auto results = sim::RunIsolated({MakeCheckpointWindowJob(*window)}, 1);
  auto run = ParseCheckpointWindowRun(results[0]);
  EXPECT_TRUE(run.ok()) << run.status().message();
  return run.ok() ? *run : CandidateCheckpointRun{};
}

TEST(CheckpointWindow, FsdpShardsOnLocalDisksStallNTimesLessThanDdpRank0) {
  // 4 nodes x 1 GPU, 1 GB of state, node disks at the plan's 1 GB/s. DDP: rank 0 writes 1 GB, 1 s
  // per save. FSDP: each of the 4 ranks writes 0.25 GB to its own disk at once: 0.25 s. Ratio 4.
  const CandidateCheckpointRun ddp = SimulateWindow(4, 1, false, "sync");
  const CandidateCheckpointRun fsdp = SimulateWindow(4, 1, true, "sync");
  EXPECT_EQ(ddp.saves, kCheckpointWindowSaves);
  EXPECT_NEAR(ddp.stall_per_save_s, 1.0, 0.03);
  EXPECT_NEAR(fsdp.stall_per_save_s, 0.25, 0.01);
  EXPECT_NEAR(ddp.stall_per_save_s / fsdp.stall_per_save_s, 4.0, 0.2);
  EXPECT_DOUBLE_EQ(fsdp.bytes_written, kCheckpointWindowSaves * 1e9);
  // 2 nodes x 2 GPUs: the two shards of a node share its disk, 0.5 GB per disk: 0.5 s, ratio 2.
  const CandidateCheckpointRun fsdp_2x2 = SimulateWindow(2, 2, true, "sync");
  EXPECT_NEAR(fsdp_2x2.stall_per_save_s, 0.5, 0.02);
}

TEST(CheckpointWindow, OnASharedStoreTheStoreIsTheLimitForEverySharding) {
  // The same 1 GB to a shared store of 1 GB/s (NICs 50 GB/s by default in the candidate network):
  // DDP's one writer and FSDP's four quarter-writers both need 1 s, however the bytes are split.
  // (The example's reads are recorded read times: they do not use the store's bandwidth.)
  const nlohmann::json store = {{"kind", "shared"}, {"aggregate_bytes_per_s", 1e9}, {"latency_s", 0}};
  const CandidateCheckpointRun ddp = SimulateWindow(4, 1, false, "sync", store);
  const CandidateCheckpointRun fsdp = SimulateWindow(4, 1, true, "sync", store);
  EXPECT_NEAR(ddp.stall_per_save_s, 1.0, 0.03);
  EXPECT_NEAR(fsdp.stall_per_save_s, 1.0, 0.03);
}

TEST(CheckpointWindow, AsyncStallIsTheSnapshot) {
  // Snapshot at 10 GB/s: DDP rank 0 copies 1 GB in 0.1 s; FSDP on 4 nodes 0.25 GB in 0.025 s. The
  // window's interval (15 steps of 0.1 s = 1.5 s) lets each 1 s write end before the next save.
  const CandidateCheckpointRun ddp = SimulateWindow(4, 1, false, "async");
  const CandidateCheckpointRun fsdp = SimulateWindow(4, 1, true, "async");
  EXPECT_NEAR(ddp.stall_per_save_s, 0.1, 0.005);
  EXPECT_NEAR(fsdp.stall_per_save_s, 0.025, 0.002);
  EXPECT_NEAR(ddp.write_s_per_save, 1.0, 0.03);
}

}  // namespace
}  // namespace simreplay::plan
