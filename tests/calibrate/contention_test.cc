#include "calibrate/contention.h"

#include <gtest/gtest.h>

namespace simreplay::calibrate {
namespace {

ContentionInput Busy(double cpu_fraction, bool with_cpu) {
  ContentionInput in;
  in.workers = 2;
  in.cores = 2;
  // 100 samples of 10 ms decode+augment and no read: 1 s of busy wall time over a 1 s run: N = 1.
  for (int i = 0; i < 100; ++i) in.samples.push_back({0.0, 0.010, with_cpu ? 0.010 * cpu_fraction : -1});
  in.run_wall_s = 1.0;
  return in;
}

TEST(EstimateContention, CpuTimeGivesIntrinsicScale) {
  auto e = EstimateContention(Busy(0.5, true));
  EXPECT_EQ(e.method, "cpu_ns");
  EXPECT_NEAR(e.intrinsic_scale, 0.5, 1e-12);
  EXPECT_NEAR(e.busy_loader_threads, 1.0, 1e-12);
  // 1 busy loader thread on 2 cores explains no slowdown: the rest is background, C / 0.5 - 1 = 3.
  EXPECT_NEAR(e.background_threads, 3.0, 1e-9);
  EXPECT_NEAR(e.as_captured_scale, 1.0, 1e-12);
  EXPECT_FALSE(e.assumed);
}

TEST(EstimateContention, UncontendedTraceKeepsScaleOne) {
  auto e = EstimateContention(Busy(1.0, true));
  EXPECT_NEAR(e.intrinsic_scale, 1.0, 1e-12);
  EXPECT_NEAR(e.background_threads, 0.0, 1e-12);
}

TEST(EstimateContention, WithoutCpuTimeAssumesFairShare) {
  ContentionInput in = Busy(0, false);
  in.run_wall_s = 0.25;  // N = 4 busy threads on 2 cores: each got half a core
  auto e = EstimateContention(in);
  EXPECT_EQ(e.method, "fair_share_assumed");
  EXPECT_TRUE(e.assumed);
  EXPECT_NEAR(e.intrinsic_scale, 0.5, 1e-12);
  EXPECT_NEAR(e.as_captured_scale, 0.5, 1e-12);
}

TEST(EstimateContention, ReadTimeIsNotCountedAsDecodeCpu) {
  ContentionInput in;
  in.cores = 4;
  in.run_wall_s = 10;
  // 1 ms read + 9 ms decode, cpu 10 ms x 0.9 share: decode gets 9 ms of cpu x 0.9 = exact 0.9 share.
  for (int i = 0; i < 10; ++i) in.samples.push_back({0.001, 0.009, 0.009});
  auto e = EstimateContention(in);
  EXPECT_NEAR(e.intrinsic_scale, 0.9, 1e-12);
}

// Worker overhead outside the stages is seconds per sample, not a factor on the scales: it does not
// grow with a sample's decode cost (a 4x-pixel what-if once paid twice the overhead the capture had).
TEST(EstimateContention, OverheadOutsideStagesIsPerSampleNotInTheScales) {
  ContentionInput in = Busy(1.0, true);
  in.worker_overhead_per_batch_s = 0.002;
  in.cpu_work_per_batch_s = 0.020;
  auto e = EstimateContention(in);
  EXPECT_NEAR(e.overhead_factor, 1.1, 1e-12);
  EXPECT_NEAR(e.intrinsic_scale, 1.0, 1e-12);
  EXPECT_NEAR(e.as_captured_scale, 1.0, 1e-12);
  // Fallback (wall per batch): the factor's share of the mean recorded work, 10% of 10 ms.
  EXPECT_NEAR(e.overhead_per_sample_s, 0.001, 1e-12);
}

TEST(EstimateContention, ProcessCpuGivesTheOverheadPerSampleDirectly) {
  ContentionInput in = Busy(1.0, true);
  in.worker_process_cpu_s = 1.3;  // 1.0 s in the stages + 0.3 s around them, over 100 samples
  in.worker_stage_cpu_s = 1.0;
  in.worker_window_samples = 100;
  auto e = EstimateContention(in);
  EXPECT_EQ(e.overhead_method, "worker_process_cpu");
  EXPECT_NEAR(e.overhead_factor, 1.3, 1e-12);
  EXPECT_NEAR(e.overhead_per_sample_s, 0.003, 1e-12);
  EXPECT_NEAR(e.intrinsic_scale, 1.0, 1e-12);
}

TEST(EstimateContention, CpuOffTheMainThreadsIsReportedAsTheSendThreadsPerByte) {
  // 0.3 s of overhead over 100 samples, 0.2 s of it off the workers' main threads (the result queue's
  // feeder) while the samples' tensors held 1e8 bytes: 2 ns per byte sent, reported; the overhead per
  // sample keeps all 3 ms. Without the main thread's CPU nothing is reported.
  ContentionInput in = Busy(1.0, true);
  in.worker_process_cpu_s = 1.3;
  in.worker_stage_cpu_s = 1.0;
  in.worker_window_samples = 100;
  in.worker_window_out_bytes = 1e8;
  in.worker_main_thread_cpu_s = 1.1;
  auto e = EstimateContention(in);
  EXPECT_NEAR(e.send_s_per_byte, 2e-9, 1e-18);
  EXPECT_NEAR(e.send_per_sample_s, 0.002, 1e-12);
  EXPECT_NEAR(e.overhead_per_sample_s, 0.003, 1e-12);
  EXPECT_NEAR(e.overhead_factor, 1.3, 1e-12);
  // More off the main threads than the overhead (clock-tick rounding): capped at the overhead.
  in.worker_main_thread_cpu_s = 0.9;
  e = EstimateContention(in);
  EXPECT_NEAR(e.send_per_sample_s, 0.003, 1e-12);
  in.worker_main_thread_cpu_s = 0;
  e = EstimateContention(in);
  EXPECT_EQ(e.send_s_per_byte, 0);
  EXPECT_NEAR(e.overhead_per_sample_s, 0.003, 1e-12);
}

TEST(EstimateContention, NothingRecorded) {
  ContentionInput in;
  auto e = EstimateContention(in);
  EXPECT_EQ(e.method, "none");
  EXPECT_EQ(e.intrinsic_scale, 1.0);
}

}  // namespace
}  // namespace simreplay::calibrate
