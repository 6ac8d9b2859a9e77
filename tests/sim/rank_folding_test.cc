// Rank folding (sim/rank_folding.h): the order statistic it draws the other ranks' slowest step from,
// when it applies, and a folded cluster against the same cluster simulated in full.
#include "sim/rank_folding.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/random.h"
#include "scenarios/scenario.h"
#include "sim/run_config.h"
#include "sim/simulation.h"
#include "tests/scoped_env.h"
#include "tests/sim/free_loading_run.h"

namespace simreplay::sim {
namespace {

// The mean of `draws` maxima of n step times drawn one by one as Simulation::DrawStepTime does.
double MeanOfDirectMaxima(double mean, double cv, int n, int draws, uint64_t seed) {
  Rng rng(seed);
  const double sigma2 = std::log(1 + cv * cv);
  double sum = 0;
  for (int d = 0; d < draws; ++d) {
    double top = 0;
    for (int i = 0; i < n; ++i) {
      top = std::max(top, std::exp(std::log(mean) - sigma2 / 2 + std::sqrt(sigma2) * rng.Normal()));
    }
    sum += top;
  }
  return sum / draws;
}

double MeanOfFoldedMaxima(double mean, double cv, StepDistribution distribution, int n, int draws, uint64_t seed) {
  Rng rng(seed);
  double sum = 0;
  for (int d = 0; d < draws; ++d) sum += MaxOfStepDraws(mean, cv, distribution, n, rng.Unit());
  return sum / draws;
}

TEST(RankFolding, MaximumOfNDrawsInOneDraw) {
  // One draw of the maximum has the distribution of the maximum of n draws: their means agree within
  // the Monte Carlo error (20,000 maxima; the relative standard error is well under 0.2%).
  for (int n : {1, 7, 64, 1000}) {
    const double direct = MeanOfDirectMaxima(0.25, 0.2, n, 20000, 11);
    const double folded = MeanOfFoldedMaxima(0.25, 0.2, StepDistribution::kLognormal, n, 20000, 12);
    EXPECT_NEAR(folded / direct, 1.0, 0.005) << n;
  }
  // The maximum grows with n, and a constant step has no spread to take the maximum of.
  EXPECT_GT(MaxOfStepDraws(0.25, 0.2, StepDistribution::kLognormal, 16384, 0.5),
            MaxOfStepDraws(0.25, 0.2, StepDistribution::kLognormal, 1024, 0.5));
  EXPECT_EQ(MaxOfStepDraws(0.25, 0.2, StepDistribution::kConstant, 16384, 0.5), 0.25);
  EXPECT_EQ(MaxOfStepDraws(0.25, 0.0, StepDistribution::kLognormal, 16384, 0.5), 0.25);
  // The median of the maximum of n normal draws: Phi^-1(0.5^(1/n)); for n = 1 the median itself.
  EXPECT_NEAR(MaxOfStepDraws(1.0, 0.1, StepDistribution::kNormal, 1, 0.5), 1.0, 1e-12);
  EXPECT_NEAR(MaxOfStepDraws(1.0, 0.1, StepDistribution::kNormal, 2, 0.25), 1.0, 1e-12);  // 0.25^(1/2) = 0.5
  // u at its extremes stays finite.
  EXPECT_TRUE(std::isfinite(MaxOfStepDraws(1.0, 0.1, StepDistribution::kLognormal, 1 << 20, 0.0)));
  EXPECT_TRUE(std::isfinite(MaxOfStepDraws(1.0, 0.1, StepDistribution::kLognormal, 1 << 20, 1.0 - 1e-16)));
}

SimInput FoldableCluster(const replay::SampleCostTable* costs, int nodes, int steps) {
  SimInput in = BucketedCluster(costs, nodes, 2, 0.02, steps, 0.1);
  in.scenario.cluster.fat_tree_nodes_per_switch = 4;
  return in;
}

// Decode costs drawn at random (seeded), 2039 of them (prime), so that every rank's share of the
// dataset starts elsewhere in the table and its batches cost differently from the others'.
replay::SampleCostTable RandomCosts() {
  replay::SampleCostTable costs = VariedCosts();
  costs.samples.resize(2039);
  costs.distinct_indices = 2039;
  Rng rng(5);
  for (auto& c : costs.samples) c.decode_s = 0.0005 + 0.006 * rng.Unit() * rng.Unit();
  return costs;
}

TEST(RankFolding, AppliesOnlyWhereEveryNodeIsTheSameSystem) {
  auto costs = FreeCosts(64);
  auto plan = [](const SimInput& in, bool allowed = true) {
    return PlanRankFolding(in, RunConfig::Resolve(in), allowed);
  };
  EXPECT_FALSE(plan(FoldableCluster(&costs, kRepresentativeNodes, 1)).folded());
  EXPECT_EQ(plan(FoldableCluster(&costs, kRepresentativeNodes, 1)).off_reason, "");
  const RankFolding folded = plan(FoldableCluster(&costs, 32, 1));
  EXPECT_TRUE(folded.folded());
  EXPECT_EQ(folded.simulated_nodes, kRepresentativeNodes);
  EXPECT_NE(plan(FoldableCluster(&costs, 32, 1), false).off_reason, "");
  auto reason = [&](auto change) {
    SimInput in = FoldableCluster(&costs, 32, 1);
    change(&in);
    const RankFolding f = plan(in);
    EXPECT_FALSE(f.folded());
    return f.off_reason;
  };
  EXPECT_NE(reason([](SimInput* in) {
              in->scenario.cluster.stragglers.push_back({3, -1, 1.5, 1.0});
            }).find("stragglers"),
            std::string::npos);
  EXPECT_NE(reason([](SimInput* in) { in->scenario.storage.kind = scenarios::StorageKind::kShared; }).find("storage"),
            std::string::npos);
  EXPECT_NE(reason([](SimInput* in) { in->scenario.train.grad_accum = 2; }).find("accumulation"), std::string::npos);
  EXPECT_NE(reason([](SimInput* in) {
              in->scenario.checkpoint.every_steps = 5;
              in->scenario.checkpoint.bytes = 1e9;
              in->scenario.checkpoint.target = scenarios::CheckpointTarget::kShared;
            }).find("checkpoint saves to shared storage"),
            std::string::npos);
  EXPECT_NE(reason([](SimInput* in) { in->record_timeline = true; }).find("timeline"), std::string::npos);
  EXPECT_NE(reason([](SimInput* in) { in->scenario.collective.sharding = scenarios::Sharding::kFull; }).find("sharded"),
            std::string::npos);
  EXPECT_NE(reason([](SimInput* in) {
              in->scenario.collective.fidelity = scenarios::CollectiveFidelity::kPerMessage;
            }).find("per rank"),
            std::string::npos);
}

TEST(RankFolding, FoldedClusterAgreesWithTheFullSimulation) {
  // 32 nodes x 2 GPUs with random loading costs (each rank its own) and lognormal steps (cv 0.1): 8 nodes simulated,
  // the other 48 ranks as the slowest of them per step. Throughput and p95 step time within 1% of every rank simulated;
  // sums are scaled to the cluster (samples exactly).
  auto costs = RandomCosts();
  SimInput in = FoldableCluster(&costs, 32, 300);
  nlohmann::json folded_m, full_m;
  auto folded = Simulate(in, &folded_m);
  in.scenario.rank_folding = false;
  auto full = Simulate(in, &full_m);
  EXPECT_EQ(folded["rank_collective_s"].size(), 16u);
  EXPECT_EQ(full["rank_collective_s"].size(), 64u);
  EXPECT_EQ(folded_m["cluster"]["rank_folding"]["simulated_nodes"], kRepresentativeNodes);
  EXPECT_FALSE(full_m["cluster"].contains("rank_folding"));
  EXPECT_EQ(folded_m["cluster"]["ranks"], 64);
  EXPECT_EQ(folded_m["samples"], full_m["samples"]);
  EXPECT_EQ(folded_m["optimizer_steps"], full_m["optimizer_steps"]);
  const double thr_f = folded_m["train_throughput_samples_per_s"], thr = full_m["train_throughput_samples_per_s"];
  const double p95_f = folded_m["step_time_s"]["p95"], p95 = full_m["step_time_s"]["p95"];
  EXPECT_NEAR(thr_f / thr, 1.0, 0.01) << thr_f << " vs " << thr;
  EXPECT_NEAR(p95_f / p95, 1.0, 0.01) << p95_f << " vs " << p95;
  EXPECT_NEAR(folded_m["gpu_idle_fraction"].get<double>(), full_m["gpu_idle_fraction"].get<double>(), 0.01);
  // Without the phantom rank the simulated 16 ranks alone set the pace: the step is visibly faster
  // than the cluster's (the slowest of 64 lognormal draws against the slowest of 16).
  in.scenario.rank_folding = true;
  in.scenario.cluster.nodes = kRepresentativeNodes;
  nlohmann::json alone_m;
  Simulate(in, &alone_m);
  EXPECT_LT(alone_m["step_time_s"]["mean"].get<double>(), 0.99 * full_m["step_time_s"]["mean"].get<double>());
}

// A data-bound cluster: one worker per rank loads a batch in about 8 ms against 1 ms GPU steps, so
// ranks wait in most steps, each by its own batches' costs (with RandomCosts, by different times).
SimInput DataBoundCluster(const replay::SampleCostTable* costs, int nodes, int steps) {
  SimInput in = FoldableCluster(costs, nodes, steps);
  in.step_time_s = 0.001;
  in.scenario.loader.num_workers = 1;
  in.scenario.collective.gradient_bytes = 1e6;
  in.scenario.collective.bucket_bytes = 1e6;
  return in;
}

TEST(RankFolding, RanksThatWaitDifferentlyAreSimulatedInFull) {
  // The fold is attempted, its wait spread is far above the limit, and the cluster is simulated in
  // full: every rank in the per-rank figures, the refusal and the spread in the metrics.
  auto costs = RandomCosts();
  SimInput in = DataBoundCluster(&costs, 16, 60);
  nlohmann::json m;
  auto raw = Simulate(in, &m);
  EXPECT_EQ(raw["rank_collective_s"].size(), 32u);
  ASSERT_TRUE(m["cluster"].contains("rank_folding"));
  EXPECT_TRUE(m["cluster"]["rank_folding"].contains("refused"));
  EXPECT_EQ(m["cluster"]["rank_folding"]["simulated_nodes"], 16);
  EXPECT_GT(m["cluster"]["rank_folding"]["wait_spread"].get<double>(), kMaxFoldedWaitSpread);
  // The same cluster with folding off: identical figures, without the note.
  in.scenario.rank_folding = false;
  nlohmann::json off;
  Simulate(in, &off);
  EXPECT_FALSE(off["cluster"].contains("rank_folding"));
  m["cluster"].erase("rank_folding");
  EXPECT_EQ(m.dump(), off.dump());
}

TEST(RankFolding, TooLargeToSimulateInFullStaysFoldedWithACaveat) {
  // 1024 nodes x 8 GPUs x 8 workers: about 23 GB to simulate every rank (past the 8 GB fallback), so a
  // fold whose waits spread stays folded and says what that costs.
  auto costs = RandomCosts();
  SimInput in = DataBoundCluster(&costs, 1024, 10);
  in.scenario.cluster.gpus_per_node = in.scenario.hardware.gpus = 8;
  in.scenario.loader.num_workers = 8;
  in.scenario.loader.batch_size = 64;
  ASSERT_GT(scenarios::EstimatedSimulationBytes(in.scenario), kMaxUnfoldedFallbackBytes);
  nlohmann::json m;
  auto raw = Simulate(in, &m);
  EXPECT_EQ(raw["rank_collective_s"].size(), 64u);
  ASSERT_TRUE(m["cluster"].contains("rank_folding"));
  EXPECT_GT(m["cluster"]["rank_folding"]["wait_spread"].get<double>(), kMaxFoldedWaitSpread);
  EXPECT_TRUE(m["cluster"]["rank_folding"].contains("caveat"));
}

TEST(RankFolding, AClusterTooLargeToSimulateInFullIsRefusedWhereFoldingDoesNotApply) {
  // 4096 nodes x 8 GPUs x 8 workers: the loader accepts it on its folded estimate (64 ranks), about 92 GB
  // to simulate every rank. Folded it runs; where folding cannot apply (here a recorded timeline) the
  // simulator refuses it in one line before building anything.
  const ScopedEnv roomy("SIMREPLAY_MEMORY_LIMIT", "1T");  // the simulator's own 64 GB limit governs
  auto costs = RandomCosts();
  SimInput in = FoldableCluster(&costs, 4096, 1000);
  in.scenario.cluster.gpus_per_node = in.scenario.hardware.gpus = 8;
  in.scenario.loader.num_workers = 8;
  ASSERT_LT(scenarios::EstimatedSimulationBytes(in.scenario, scenarios::SimulatedNodesAtLeast(in.scenario)), 1e9);
  ASSERT_GT(scenarios::EstimatedSimulationBytes(in.scenario), scenarios::kMaxSimulationBytes);
  in.record_timeline = true;
  auto stats = RunSimulation(in);
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(stats.status().message(),
            "4096 nodes x 8 GPUs with 8 workers per rank need an estimated 92 GB to simulate every rank, more than "
            "the 64 GB limit, and rank folding does not apply: a timeline is recorded (it shows every rank) (fewer "
            "nodes, workers or steps)");
}

TEST(RankFolding, NodeLocalCheckpointSavesFold) {
  // Synchronous saves of 200 MB to each node's own disk (1 GB/s), one writer per node, every 20 steps:
  // folded, the saves' stall and the bytes written agree with the full simulation (the stall exactly:
  // every node's disk takes the same time), and throughput and p95 step within 1%.
  auto costs = RandomCosts();
  SimInput in = FoldableCluster(&costs, 32, 100);
  in.model.storage.bandwidth_bytes_per_s = 1e9;
  in.scenario.checkpoint.every_steps = 20;
  in.scenario.checkpoint.bytes = 2e8;
  in.scenario.checkpoint.writers = scenarios::CheckpointWriters::kPerNode;
  nlohmann::json folded, full;
  Simulate(in, &folded);
  in.scenario.rank_folding = false;
  Simulate(in, &full);
  ASSERT_TRUE(folded["cluster"].contains("rank_folding"));
  EXPECT_EQ(folded["cluster"]["rank_folding"]["simulated_nodes"], kRepresentativeNodes);
  EXPECT_EQ(folded["checkpoint"]["saves"], full["checkpoint"]["saves"]);
  EXPECT_NEAR(folded["checkpoint"]["stall_per_save_s"].get<double>(),
              full["checkpoint"]["stall_per_save_s"].get<double>(), 1e-9);
  EXPECT_DOUBLE_EQ(folded["checkpoint"]["bytes_written"].get<double>(), 32 * 2e8 * 5);
  EXPECT_DOUBLE_EQ(full["checkpoint"]["bytes_written"].get<double>(), 32 * 2e8 * 5);
  const double thr_f = folded["train_throughput_samples_per_s"], thr = full["train_throughput_samples_per_s"];
  EXPECT_NEAR(thr_f / thr, 1.0, 0.01) << thr_f << " vs " << thr;
  EXPECT_NEAR(folded["step_time_s"]["p95"].get<double>() / full["step_time_s"]["p95"].get<double>(), 1.0, 0.01);
}

TEST(RankFolding, FoldedRunsAreByteIdentical) {
  auto costs = VariedCosts();
  SimInput in = FoldableCluster(&costs, 512, 20);
  nlohmann::json m1, m2;
  auto a = Simulate(in, &m1, {}, true);
  auto b = Simulate(in, &m2, {}, true);
  EXPECT_EQ(a["encoded"], b["encoded"]);
  EXPECT_EQ(m1.dump(), m2.dump());
  EXPECT_EQ(m1["cluster"]["ranks"], 1024);
}

}  // namespace
}  // namespace simreplay::sim
