// Goodput, memory fit and communication closed forms, worked out by hand.
#include "plan/goodput.h"

#include <gtest/gtest.h>

#include <cmath>

#include "plan/collective_estimate.h"
#include "plan/memory_fit.h"

namespace simreplay::plan {
namespace {

TEST(Goodput, YoungDalyIntervalAndWallTime) {
  GoodputInput in;
  in.work_s = 1e6;
  in.training_s = 1e6;
  in.gpus = 100;
  in.gpu_mtbf_h = 50000;  // job MTBF M = 50000 h / 100 = 500 h = 1.8e6 s
  in.checkpoint_bytes = 1e11;
  in.write_bytes_per_s = 1e9;  // delta = 100 s
  in.read_bytes_per_s = 2e9;   // read 50 s
  in.restart_s = 850;          // R = 850 + 50 = 900 s
  Goodput g = ComputeGoodput(in);
  EXPECT_DOUBLE_EQ(g.job_mtbf_s, 1.8e6);
  EXPECT_DOUBLE_EQ(g.checkpoint_write_s, 100);
  // tau = sqrt(2 x 100 x 1.8e6) = sqrt(3.6e8) = 18973.67 s.
  const double tau = std::sqrt(3.6e8);
  EXPECT_NEAR(g.checkpoint_interval_s, tau, 1e-6);
  // W = work (1 + delta / tau) / (1 - (tau / 2 + R) / M).
  const double wall = 1e6 * (1 + 100 / tau) / (1 - (tau / 2 + 900) / 1.8e6);
  EXPECT_NEAR(g.wall_s, wall, 1e-6);
  EXPECT_NEAR(g.failures, wall / 1.8e6, 1e-12);
  EXPECT_NEAR(g.lost_work_s + g.restart_total_s + g.checkpoint_s + 1e6, wall, 1e-6);
  EXPECT_NEAR(g.goodput_fraction, 1e6 / wall, 1e-12);
  EXPECT_TRUE(g.feasible);
}

TEST(Goodput, FixedIntervalAndNodeFailures) {
  GoodputInput in;
  in.work_s = 36000;
  in.training_s = 30000;  // the rest is evaluation
  in.gpus = 8;
  in.nodes = 1;
  in.gpu_mtbf_h = 80;   // 8 GPUs: 0.1 failures/h
  in.node_mtbf_h = 10;  // + 0.1 failures/h: M = 5 h = 18000 s
  in.checkpoint_bytes = 1e9;
  in.write_bytes_per_s = 1e8;  // 10 s
  in.read_bytes_per_s = 1e9;   // 1 s
  in.auto_interval = false;
  in.every_s = 1000;
  in.restart_s = 99;  // R = 100 s
  Goodput g = ComputeGoodput(in);
  EXPECT_NEAR(g.job_mtbf_s, 18000, 1e-9);
  EXPECT_DOUBLE_EQ(g.checkpoint_interval_s, 1000);
  // W = 36000 x 1.01 / (1 - 600 / 18000) = 36360 / 0.96667 = 37613.79 s.
  EXPECT_NEAR(g.wall_s, 36360 / (1 - 600.0 / 18000), 1e-6);
  EXPECT_NEAR(g.goodput_fraction, 30000 / g.wall_s, 1e-12);
}

TEST(Goodput, FailuresFasterThanProgressAreInfeasible) {
  GoodputInput in;
  in.work_s = 1e6;
  in.training_s = 1e6;
  in.gpus = 100000;
  in.gpu_mtbf_h = 50000;  // M = 1800 s (MLPerf: a failure every 30 min at 100k GPUs)
  in.checkpoint_bytes = 1e13;
  in.write_bytes_per_s = 1e9;  // 10000 s per save: tau/2 alone exceeds M
  in.read_bytes_per_s = 1e9;
  Goodput g = ComputeGoodput(in);
  EXPECT_DOUBLE_EQ(g.job_mtbf_s, 1800);
  EXPECT_FALSE(g.feasible);
  EXPECT_TRUE(std::isinf(g.wall_s));
  EXPECT_NE(g.note.find("infeasible"), std::string::npos);
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
