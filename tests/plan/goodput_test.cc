// Goodput, memory fit and communication closed forms, worked out by hand.
#include "plan/goodput.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>
#include <vector>

#include "plan/collective_estimate.h"
#include "plan/failure_model.h"
#include "plan/restart_model.h"
#include "plan/memory_fit.h"

namespace simreplay::plan {
namespace {

// Daly (2006): wall = M e^{R/M} (e^{(tau + delta)/M} - 1) x work / tau.
double Exact(double work, double tau, double delta, double restart, double m) {
  return m * std::exp(restart / m) * std::expm1((tau + delta) / m) * work / tau;
}

TEST(Goodput, ExactWallTimeAtTheOptimalIntervalBesideYoungs) {
  GoodputInput in;
  in.work_s = 1e6;
  in.training_s = 1e6;
  in.job_mtbf_s = 1.8e6;  // 100 GPUs at 50,000 h: 500 h
  in.checkpoint_write_s = 100;
  in.restart_s = 900;
  Goodput g = ComputeGoodput(in);
  // Young: sqrt(2 x 100 x 1.8e6) = sqrt(3.6e8) = 18973.67 s. The exact optimum solves
  // u = 1 - e^{-(u + d)}, d = 100 / 1.8e6: u = 0.010503921, tau = 18907.06 s (0.35% shorter).
  EXPECT_NEAR(g.young_interval_s, std::sqrt(3.6e8), 1e-6);
  EXPECT_NEAR(g.optimal_interval_s, 18907.0579, 1e-3);
  EXPECT_DOUBLE_EQ(g.checkpoint_interval_s, g.optimal_interval_s);
  const double tau = g.optimal_interval_s;
  EXPECT_NEAR(tau / 1.8e6, 1 - std::exp(-(tau + 100) / 1.8e6), 1e-14);
  // wall = 1.8e6 e^{900/1.8e6} (e^{19007.06/1.8e6} - 1) x 1e6 / 18907.06 = 1011120.86 s.
  EXPECT_NEAR(g.wall_s, 1011120.8587, 1e-3);
  EXPECT_NEAR(g.wall_s, Exact(1e6, tau, 100, 900, 1.8e6), 1e-6);
  // A minimum: 1% either side costs more.
  EXPECT_LT(g.wall_s, Exact(1e6, tau * 1.01, 100, 900, 1.8e6));
  EXPECT_LT(g.wall_s, Exact(1e6, tau * 0.99, 100, 900, 1.8e6));
  // Rare failures: the first-order form agrees to 2e-5 (1011104.87 s).
  EXPECT_NEAR(g.first_order_wall_s / g.wall_s, 1, 2e-5);
  EXPECT_NEAR(g.failures, g.wall_s / 1.8e6, 1e-12);
  EXPECT_NEAR(g.lost_work_s + g.restart_total_s + g.checkpoint_s + 1e6, g.wall_s, 1e-6);
  EXPECT_NEAR(g.goodput_fraction, 1e6 / g.wall_s, 1e-12);
  EXPECT_TRUE(g.feasible);
}

TEST(Goodput, FixedIntervalAndTheSplitOfTheWallTime) {
  GoodputInput in;
  in.work_s = 36000;
  in.training_s = 30000;  // the rest is evaluation
  in.job_mtbf_s = 18000;
  in.checkpoint_write_s = 10;
  in.restart_s = 100;
  in.auto_interval = false;
  in.every_s = 1000;
  Goodput g = ComputeGoodput(in);
  EXPECT_DOUBLE_EQ(g.checkpoint_interval_s, 1000);
  // 36 segments of 1010 s: 18000 e^{100/18000} (e^{1010/18000} - 1) x 36 = 37607.80 s (first order:
  // 36360 / (1 - 600 / 18000) = 37613.79 s).
  EXPECT_NEAR(g.wall_s, 37607.8033, 1e-3);
  EXPECT_NEAR(g.first_order_wall_s, 37613.7931, 1e-3);
  // Per segment: restarts (e^a - 1) M (e^r - 1), a = 1010/18000, r = 100/18000.
  const double a = 1010.0 / 18000, r = 100.0 / 18000;
  EXPECT_NEAR(g.restart_total_s, 36 * std::expm1(a) * 18000 * std::expm1(r), 1e-6);
  EXPECT_NEAR(g.lost_work_s, 36 * (std::expm1(a) * 18000 - 1010), 1e-6);
  EXPECT_DOUBLE_EQ(g.checkpoint_s, 360);
  EXPECT_NEAR(g.goodput_fraction, 30000 / g.wall_s, 1e-12);
}

TEST(Goodput, FirstOrderOverstatesWhereFailuresAreFrequent) {
  // Where a restart dominates, (tau/2 + R)/M = x, the first-order form divides by 1 - x while the exact
  // one multiplies by about e^x: 1 / ((1 - x) e^x) - 1 = +11.7% at x = 0.4 and +37.2% at x = 0.6 (the
  // issue's 12% at 65k GPUs and 36% at 100k). The exact expression has no cut-off there.
  for (const auto& [x, departure] : {std::pair{0.4, 0.11720}, std::pair{0.6, 0.37203}}) {
    GoodputInput in;
    in.work_s = 1e6;
    in.training_s = 1e6;
    in.job_mtbf_s = 3600;
    in.auto_interval = false;
    in.every_s = 1;  // negligible half-interval: the restart is the loss
    in.restart_s = x * 3600 - 0.5;
    Goodput g = ComputeGoodput(in);
    EXPECT_TRUE(g.feasible);
    EXPECT_NEAR(g.first_order_wall_s / g.wall_s - 1, departure, 1e-4) << x;
  }
  // Past the old 0.9 cut-off the exact wall time is still finite: x = 1.5 gives e^{1.5} x work.
  GoodputInput in;
  in.work_s = 1e6;
  in.training_s = 1e6;
  in.job_mtbf_s = 3600;
  in.auto_interval = false;
  in.every_s = 1;
  in.restart_s = 5400;
  Goodput g = ComputeGoodput(in);
  EXPECT_TRUE(g.feasible);
  EXPECT_NEAR(g.wall_s / (1e6 * std::exp(1.5)), 1, 2e-4);
  EXPECT_TRUE(std::isinf(g.first_order_wall_s));
  EXPECT_NE(g.note.find("first-order"), std::string::npos);
}

TEST(Goodput, InfeasibleOnlyWhereTheExactExpressionOverflows) {
  GoodputInput in;
  in.work_s = 1e6;
  in.training_s = 1e6;
  in.job_mtbf_s = 1800;  // MLPerf Storage: a failure every 30 min at 100k GPUs
  in.checkpoint_write_s = 1e4;
  in.restart_s = 2e6;  // e^{2e6 / 1800} overflows a double
  Goodput g = ComputeGoodput(in);
  EXPECT_FALSE(g.feasible);
  EXPECT_TRUE(std::isinf(g.wall_s));
  EXPECT_NE(g.note.find("overflows"), std::string::npos);
  // A save of 10000 s against a failure every 1800 s is slow but finite: the optimum is below M.
  in.restart_s = 600;
  g = ComputeGoodput(in);
  EXPECT_TRUE(g.feasible);
  EXPECT_LT(g.checkpoint_interval_s, 1800);
  EXPECT_GT(g.wall_s, 1e6 * std::exp(1e4 / 1800.0));  // every segment pays at least e^{delta/M}
}

TEST(Goodput, NoSaveCostMeansContinuousSavesAndNoFailuresMeansNoLoss) {
  GoodputInput in;
  in.work_s = 1000;
  in.training_s = 1000;
  in.job_mtbf_s = 100;
  in.restart_s = 10;
  Goodput g = ComputeGoodput(in);  // delta = 0: tau -> 0, wall = work e^{R/M}
  EXPECT_DOUBLE_EQ(g.checkpoint_interval_s, 0);
  EXPECT_NEAR(g.wall_s, 1000 * std::exp(0.1), 1e-9);
  in.job_mtbf_s = std::numeric_limits<double>::infinity();
  in.checkpoint_write_s = 5;
  in.auto_interval = false;
  in.every_s = 100;
  g = ComputeGoodput(in);
  EXPECT_DOUBLE_EQ(g.wall_s, 1050);
  EXPECT_DOUBLE_EQ(g.failures, 0);
}

// The table of docs/planning.md ("Goodput"): 30 days of work, 60 s saves and reads, 8 GPUs per node,
// exact against first-order wall time (a) with the default failure and restart models at the optimal
// interval and (b) with the planner's former inputs (50,000 h per GPU, 900 s + read, Young's interval).
TEST(Goodput, FirstOrderAgainstExactAtScale) {
  const double work = 30 * 86400.0;
  std::printf("%8s %10s %8s %8s %6s %10s %12s %9s\n", "GPUs", "M_s", "R_s", "tau_s", "x", "exact/work",
              "first/work", "first/exact-1");
  struct Row {
    int gpus;
    double exact_per_work, first_per_work;
  };
  std::vector<Row> rows;
  for (int gpus : {1024, 16384, 65536, 100000}) {
    const int nodes = (gpus + 7) / 8;
    GoodputInput in;
    in.work_s = work;
    in.training_s = work;
    in.job_mtbf_s = ComputeJobFailureRate(DefaultFailureModel(), gpus, nodes).mtbf_s();
    in.checkpoint_write_s = 60;
    in.restart_s = ComputeRestart(DefaultRestart(), gpus, nodes, {60, "input", ""}, std::nullopt).total_s();
    Goodput g = ComputeGoodput(in);
    const double x = (g.checkpoint_interval_s / 2 + g.restart_s) / g.job_mtbf_s;
    std::printf("%8d %10.0f %8.0f %8.0f %6.3f %10.4f %12.4f %+9.4f\n", gpus, g.job_mtbf_s, g.restart_s,
                g.checkpoint_interval_s, x, g.wall_s / work, g.first_order_wall_s / work,
                g.first_order_wall_s / g.wall_s - 1);
    rows.push_back({gpus, g.wall_s / work, g.first_order_wall_s / work});
    EXPECT_TRUE(g.feasible);
  }
  EXPECT_NEAR(rows[0].exact_per_work, 1.0856, 1e-4);  // 1,024 GPUs: M = 7.9 h (the floor), R = 467 s
  EXPECT_NEAR(rows[1].first_per_work / rows[1].exact_per_work - 1, 0.0138, 1e-4);  // 16,384: +1.4%
  EXPECT_NEAR(rows[2].exact_per_work, 3.8545, 1e-3);  // 65,536: x = 1.19, no first-order value
  EXPECT_TRUE(std::isinf(rows[2].first_per_work));
  EXPECT_NEAR(rows[3].exact_per_work, 13.64, 1e-2);

  std::printf("former inputs:\n");
  std::vector<double> departure;
  for (int gpus : {1024, 16384, 65536, 100000}) {
    GoodputInput in;
    in.work_s = work;
    in.training_s = work;
    in.job_mtbf_s = 50000 * 3600.0 / gpus;
    in.checkpoint_write_s = 60;
    in.restart_s = 960;
    in.auto_interval = false;
    in.every_s = std::sqrt(2 * 60 * in.job_mtbf_s);  // Young
    Goodput g = ComputeGoodput(in);
    const double x = (g.checkpoint_interval_s / 2 + g.restart_s) / g.job_mtbf_s;
    std::printf("%8d %10.0f %8.0f %8.0f %6.3f %10.4f %12.4f %+9.4f\n", gpus, g.job_mtbf_s, g.restart_s,
                g.checkpoint_interval_s, x, g.wall_s / work, g.first_order_wall_s / work,
                g.first_order_wall_s / g.wall_s - 1);
    departure.push_back(g.first_order_wall_s / g.wall_s - 1);
  }
  // x = 0.45 at 65,536 GPUs: +14.8%; x = 0.66 at 100,000: +49.7% (the issue: about 12% and 36%).
  EXPECT_NEAR(departure[2], 0.148, 1e-3);
  EXPECT_NEAR(departure[3], 0.497, 1e-3);
  EXPECT_LT(std::abs(departure[0]), 1e-4);
}

models::Accelerator Gpu(double memory_bytes) {
  models::Accelerator a;
  a.name = "x";
  a.memory_bytes = memory_bytes;
  a.hbm_bytes_per_s = 2e12;
  a.bf16_flops_per_s = 312e12;
  a.intra_node_bytes_per_s = 600e9;
  return a;
}

TEST(MemoryFit, DdpReplicatesFsdpShards) {
  ModelSpec m;
  m.parameters = 7e9;
  m.activation_bytes_per_gpu = 20e9;
  m.memory_headroom_fraction = 0.1;
  // DDP: 16 B x 7e9 = 112 GB + 20 GB = 132 GB > 0.9 x 80 GB = 72 GB usable.
  MemoryFit ddp = FitMemory(m, false, 64, Gpu(80e9));
  EXPECT_DOUBLE_EQ(ddp.states_bytes, 112e9);
  EXPECT_DOUBLE_EQ(ddp.total_bytes, 132e9);
  EXPECT_DOUBLE_EQ(ddp.usable_bytes, 72e9);
  EXPECT_FALSE(ddp.fits);
  // FSDP over 16 GPUs: 112 GB / 16 = 7 GB + 20 GB = 27 GB: fits.
  MemoryFit fsdp = FitMemory(m, true, 16, Gpu(80e9));
  EXPECT_DOUBLE_EQ(fsdp.total_bytes, 27e9);
  EXPECT_TRUE(fsdp.fits);
  EXPECT_NE(fsdp.breakdown.find("/ 16 GPUs"), std::string::npos);
}

TEST(MemoryFit, FsdpWithAccumulationKeepsWhatTheSimulatedTrafficKeepsGathered) {
  // The simulator's FSDP gathers parameters and reduce-scatters gradients once per optimizer step, on
  // the last micro-batch: with 4 micro-batches the weights (2 B) and gradients (2 B) stay whole and
  // only the 12 B of master copy and Adam state are sharded. 7e9 x (4 + 12 / 16) = 33.25 GB + 20 GB
  // activations = 53.25 GB; with one micro-batch it is 7 GB + 20 GB as above.
  ModelSpec m;
  m.parameters = 7e9;
  m.activation_bytes_per_gpu = 20e9;
  MemoryFit accumulating = FitMemory(m, true, 16, Gpu(80e9), 0, 4);
  EXPECT_DOUBLE_EQ(accumulating.states_bytes, 33.25e9);
  EXPECT_DOUBLE_EQ(accumulating.total_bytes, 53.25e9);
  EXPECT_NE(accumulating.breakdown.find("kept whole across 4 accumulated micro-batches"), std::string::npos)
      << accumulating.breakdown;
  EXPECT_DOUBLE_EQ(FitMemory(m, true, 16, Gpu(80e9), 0, 1).states_bytes, 7e9);
  // DDP does not depend on accumulation.
  EXPECT_DOUBLE_EQ(FitMemory(m, false, 16, Gpu(80e9), 0, 4).states_bytes, 112e9);
}

TEST(MemoryFit, PreflightPeakReplacesTheFormula) {
  ModelSpec m;
  m.parameters = 1e9;  // 16 GB of states
  // Measured peak 40 GB with full states: activations 24 GB. FSDP over 8: 40 - 16 x 7/8 = 26 GB.
  MemoryFit ddp = FitMemory(m, false, 8, Gpu(80e9), 40e9);
  EXPECT_TRUE(ddp.measured);
  EXPECT_DOUBLE_EQ(ddp.total_bytes, 40e9);
  EXPECT_DOUBLE_EQ(ddp.activation_bytes, 24e9);
  MemoryFit fsdp = FitMemory(m, true, 8, Gpu(80e9), 40e9);
  EXPECT_DOUBLE_EQ(fsdp.total_bytes, 26e9);
}

TEST(CollectiveEstimate, HierarchicalRingClosedForm) {
  NetworkSpec net;
  net.nic_bytes_per_s = 50e9;
  net.latency_s = 5e-6;
  net.intra_latency_s = 2e-6;
  net.overlap = 0.5;
  // S = 1e10 B, 4 nodes x 8 GPUs, NVLink 600 GB/s both ways = 300 GB/s one way:
  // intra = 2 x 7/8 x 1e10 / 3e11 + 14 x 2e-6 = 0.0583333 + 0.000028 s;
  // inter = 2 x 3/4 x 1e10 / 5e10 + 6 x 5e-6 = 0.3 + 0.00003 s.
  CollectiveEstimate c = EstimateCollective(1e10, false, 4, 8, Gpu(80e9), net, 0.2);
  EXPECT_NEAR(c.intra_s, 2.0 * 7 / 8 * 1e10 / 3e11 + 14 * 2e-6, 1e-12);
  EXPECT_NEAR(c.inter_s, 0.3 + 6 * 5e-6, 1e-12);
  // Exposed: total - 0.5 x 0.2 s of step that hides it.
  EXPECT_NEAR(c.exposed_s, c.total_s - 0.1, 1e-12);
  // FSDP moves 1.5 x the bytes (and 1.5 x the latency terms).
  CollectiveEstimate f = EstimateCollective(1e10, true, 4, 8, Gpu(80e9), net, 0.2);
  EXPECT_NEAR(f.total_s, 1.5 * c.total_s, 1e-12);
  // One GPU on one node: nothing to communicate.
  EXPECT_DOUBLE_EQ(EstimateCollective(1e10, false, 1, 1, Gpu(80e9), net, 0.2).total_s, 0);
}

}  // namespace
}  // namespace simreplay::plan
