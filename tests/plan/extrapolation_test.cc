// Extrapolation from a steady state against a full simulation of a shorter job (issue: within 1%).
// Real simulations of the quickstart's captured pipeline, each in a forked child.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numeric>

#include "plan/candidate_sim.h"
#include "plan/steady_state.h"
#include "scenarios/scenario.h"
#include "sim/isolated_run.h"

namespace simreplay::plan {
namespace {

// The job: 16000 optimizer steps of 8 samples. The planner simulates at most 3840 of them.
constexpr int64_t kJobSteps = 16000;

const std::string kModel = std::string(SIMREPLAY_SOURCE_DIR) + "/examples/quickstart/model.json";

nlohmann::json Scenario(int64_t dataset_samples) {
  nlohmann::json j = {{"model", kModel},
                      {"loader", {{"num_workers", 2}, {"batch_size", 8}, {"prefetch_factor", 2}}},
                      {"hardware", {{"cpu_cores", 4}, {"gpus", 1}}},
                      {"train", {{"steps", 10}}},
                      {"seed", 0}};
  if (dataset_samples > 0) j["train"]["dataset_samples"] = dataset_samples;
  return j;
}

struct Comparison {
  double full_s = 0, extrapolated_s = 0;
  SteadyState steady;
  int64_t probe_steps = 0;
};

// What the planner does for one candidate: simulate 240 steps, 4 x longer while not steady (at most
// 3840, the default simulation.max_steps); then
// extrapolate to `total_steps`. Compared with one simulation of all `total_steps`.
Comparison Compare(const CandidateSimSetup& setup, int64_t total_steps) {
  sim::CostCache cache;
  Comparison c;
  auto full = PrepareCandidate(setup, total_steps, &cache);
  EXPECT_TRUE(full.ok()) << full.status().message();
  std::vector<double> full_x;
  {
    auto out = sim::RunIsolated({MakeCandidateJob(*full)}, 1);
    auto run = ParseCandidateRun(out[0]);
    EXPECT_TRUE(run.ok()) << run.status().message();
    full_x = run->interval_s;
  }
  EXPECT_EQ(static_cast<int64_t>(full_x.size()), total_steps);
  c.full_s = std::accumulate(full_x.begin(), full_x.end(), 0.0);
  for (int64_t length = 240;; length *= 4) {
    auto probe = PrepareCandidate(setup, length, &cache);
    EXPECT_TRUE(probe.ok());
    auto out = sim::RunIsolated({MakeCandidateJob(*probe)}, 1);
    auto run = ParseCandidateRun(out[0]);
    EXPECT_TRUE(run.ok());
    const EpochGeometry epochs{MicroBatchesPerEpoch(*probe), 1};
    c.steady = DetectSteadyState(run->interval_s, epochs, 0.005);
    c.probe_steps = length;
    if (c.steady.steady || length * 4 > 3840) {
      c.extrapolated_s = ExtrapolateS(c.steady, run->interval_s, epochs, total_steps);
      break;
    }
  }
  return c;
}

void Report(const char* what, const Comparison& c) {
  const double diff = (c.extrapolated_s - c.full_s) / c.full_s;
  std::printf("%s: full simulation %.6f s, extrapolated from %lld steps %.6f s, difference %+.4f%% (%s)\n", what,
              c.full_s, static_cast<long long>(c.probe_steps), c.extrapolated_s, 100 * diff, c.steady.detail.c_str());
  EXPECT_TRUE(c.steady.steady) << c.steady.detail;
  EXPECT_LT(std::fabs(diff), 0.01) << what;
  EXPECT_LE(c.probe_steps * 4, kJobSteps) << "the extrapolation must come from a much shorter simulation";
}

TEST(Extrapolation, ShortEpochsWithinOnePercentOfFullSimulation) {
  // The trace's own 104-sample dataset: 13 batches per epoch, a non-persistent worker restart at
  // every boundary; 16000 steps = 1231 epochs.
  CandidateSimSetup setup;
  setup.scenario_json = Scenario(0);
  setup.scenario_path = "inline";
  setup.dataset_samples = 104;
  setup.step_time_s = 0.02;
  Report("short epochs, 1 GPU", Compare(setup, kJobSteps));
}

// `nodes` x 2 GPUs reading 100000 samples, 10 MB of gradients all-reduced every step over 1 GB/s NICs.
CandidateSimSetup TwoGpuNodes(int nodes, double step_time_s) {
  CandidateSimSetup setup;
  setup.scenario_json = Scenario(0);
  setup.scenario_path = "inline";
  setup.gpus_per_node = 2;
  setup.nodes = nodes;
  setup.dataset_samples = 100000;
  setup.step_time_s = step_time_s;
  setup.gradient_bytes = 10e6;
  setup.network.nic_bytes_per_s = 1e9;
  return setup;
}

TEST(Extrapolation, LongEpochTwoRanksWithCommunicationWithinOnePercent) {
  // 4 nodes x 2 GPUs (100000 samples: 12500 per rank, one epoch per 1563 steps, so 10 boundaries in
  // the job), 10 MB of gradients all-reduced every step over 1 GB/s NICs as simulated flows:
  // 2 x 3/4 x 10 MB / 1 GB/s = 15 ms between nodes, under a millisecond inside them.
  Report("long epochs, 2 GPUs x 4 nodes", Compare(TwoGpuNodes(4, 0.02), kJobSteps));
}

TEST(CandidateRun, FoldedClusterGivesOneIntervalPerStep) {
  // 16 nodes x 2 GPUs fold to 8 representative nodes (sim/rank_folding.h), whose ranks alone record
  // their steps: the candidate's step intervals are grouped by them, one per optimizer step.
  const CandidateSimSetup setup = TwoGpuNodes(16, 0.25);  // the loaders keep up: no wait spread, the fold is kept
  sim::CostCache cache;
  auto point = PrepareCandidate(setup, 50, &cache);
  ASSERT_TRUE(point.ok()) << point.status().message();
  auto out = sim::RunIsolated({MakeCandidateJob(*point)}, 1);
  auto run = ParseCandidateRun(out[0]);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->interval_s.size(), 50u);
}

}  // namespace
}  // namespace simreplay::plan
