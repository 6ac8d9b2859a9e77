// The calibrator's stages on synthetic traces built in memory, each expectation worked out by hand.
#include "calibrate/stages.h"

#include <gtest/gtest.h>

#include "calibrate/calibrator.h"

namespace simreplay::calibrate {
namespace {

TraceData Trace(bool pin_memory, int world_size = 1) {
  TraceData t;
  t.path = "synthetic.jsonl";
  t.manifest = {{"loader", {{"num_workers", 1}, {"batch_size", 4}, {"pin_memory", pin_memory}}},
                {"world_size", world_size}};
  return t;
}

replay::BatchRecord Batch(int64_t h2d_bytes, int64_t h2d_ns) {
  replay::BatchRecord b;
  b.size = 4;
  b.h2d_bytes = h2d_bytes;
  b.h2d_ns = h2d_ns;
  return b;
}

replay::StepRecord Step(int64_t compute_ns, int64_t comm_ns = 0) {
  replay::StepRecord s;
  s.compute_ns = s.step_ns = compute_ns;
  s.comm_ns = comm_ns;
  return s;
}

TEST(CalibrationStages, RunInDependencyOrder) {
  std::vector<std::string> names;
  for (const auto& stage : CalibrationStages()) names.emplace_back(stage.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"cpu", "costs", "media", "storage", "memory", "pcie", "gpu", "collectives", "formats"}));
}

TEST(FitPcie, BandwidthIsBytesOverTimePerPinning) {
  CalibrationInput in;
  TraceData pinned = Trace(true);
  pinned.batches = {Batch(1'000'000, 100'000), Batch(3'000'000, 300'000)};  // 4 MB in 0.4 ms = 1e10 B/s
  TraceData pageable = Trace(false);
  pageable.batches = {Batch(2'000'000, 1'000'000), Batch(0, 5)};  // 2 MB in 1 ms = 2e9 B/s; empty copy ignored
  in.traces = {pinned, pageable};
  CalibrationDraft d;
  ASSERT_TRUE(FitPcie(in, &d).ok());
  EXPECT_DOUBLE_EQ(d.model.pcie.h2d_pinned_bytes_per_s, 1e10);
  EXPECT_DOUBLE_EQ(d.model.pcie.h2d_pageable_bytes_per_s, 2e9);
  EXPECT_FALSE(d.model.info.at("pcie.h2d_pinned_bytes_per_s").assumed);
  EXPECT_TRUE(d.model.info.at("pcie.latency_s").assumed);
  EXPECT_DOUBLE_EQ(d.quality["pcie"]["pinned_bytes"].get<double>(), 4e6);
}

TEST(FitPcie, NoCopyMeasuredKeepsTheCatalogueAndSaysSo) {
  CalibrationInput in;
  in.traces = {Trace(false)};
  CalibrationDraft d;
  const double catalogue = d.model.pcie.h2d_pageable_bytes_per_s;
  ASSERT_TRUE(FitPcie(in, &d).ok());
  EXPECT_EQ(d.model.pcie.h2d_pageable_bytes_per_s, catalogue);
  EXPECT_TRUE(d.model.info.at("pcie.h2d_pageable_bytes_per_s").assumed);
}

TEST(FitGpu, MeanCvAndDistributionOfTheStepTimes) {
  CalibrationInput in;
  TraceData t = Trace(false);
  t.batches = {Batch(0, 0), Batch(0, 0), Batch(0, 0), Batch(0, 0)};
  // Steps of 10, 10, 30, 30 ms: mean 20 ms, population sd 10 ms, cv 0.5, skewness 0 -> "normal".
  t.steps = {Step(10'000'000), Step(10'000'000), Step(30'000'000), Step(30'000'000)};
  in.traces = {t};
  CalibrationDraft d;
  ASSERT_TRUE(FitGpu(in, &d).ok());
  EXPECT_NEAR(d.model.gpu.step_time_s, 0.020, 1e-12);
  EXPECT_NEAR(d.model.gpu.step_cv, 0.5, 1e-12);
  EXPECT_EQ(d.model.gpu.distribution, "normal");
  EXPECT_EQ(d.model.gpu.measured_batch_size, 4);
  EXPECT_FALSE(d.gpu_batch_size_fitted);  // one batch size measured
  EXPECT_EQ(d.model.gpu.accelerator, "emulated");
}

TEST(FitGpu, EmulatedStepSplitsIntoHostCpuAndAccelerator) {
  CalibrationInput in;
  TraceData t = Trace(false);
  t.batches = {Batch(0, 0), Batch(0, 0)};
  // 70 ms steps: 16 and 20 ms of the loop thread's CPU; the first marks its 50 ms accelerator part,
  // the second does not (accelerator = compute - CPU = 50 ms too).
  t.steps = {Step(70'000'000), Step(70'000'000)};
  t.steps[0].cpu_ns = 16'000'000;
  t.steps[0].accel_ns = 50'000'000;
  t.steps[1].cpu_ns = 20'000'000;
  in.traces = {t};
  CalibrationDraft d;
  ASSERT_TRUE(FitGpu(in, &d).ok());
  EXPECT_NEAR(d.model.gpu.step_time_s, 0.050, 1e-12);
  EXPECT_NEAR(d.model.gpu.step_host_cpu_s, 0.018, 1e-12);
  EXPECT_FALSE(d.model.info.at("gpu.step_host_cpu_s").assumed);
  // On a real GPU the launches overlap the device: compute_ns stays the step, no host part.
  in.traces[0].manifest["accelerator"] = "cuda";
  CalibrationDraft cuda;
  ASSERT_TRUE(FitGpu(in, &cuda).ok());
  EXPECT_NEAR(cuda.model.gpu.step_time_s, 0.070, 1e-12);
  EXPECT_EQ(cuda.model.gpu.step_host_cpu_s, 0);
}

TEST(FitCollectives, MeanCommTimeOnlyForMultiRankTraces) {
  CalibrationInput in;
  TraceData t = Trace(false, /*world_size=*/4);
  t.steps = {Step(1, 2'000'000), Step(1, 4'000'000), Step(1, 0)};  // comm 2 and 4 ms; a step without comm
  in.traces = {t};
  CalibrationDraft d;
  ASSERT_TRUE(FitCollectives(in, &d).ok());
  EXPECT_NEAR(d.model.collective.time_per_step_s, 0.003, 1e-12);
  EXPECT_EQ(d.quality["collective"]["world_size"], 4);

  CalibrationInput single;
  single.traces = {Trace(false)};
  single.traces[0].steps = t.steps;
  CalibrationDraft s;
  ASSERT_TRUE(FitCollectives(single, &s).ok());
  EXPECT_TRUE(s.model.info.at("collective.time_per_step_s").assumed);
}

TEST(FitMemory, MedianOfWorkerPeaksAndFirstMainSample) {
  CalibrationInput in;
  TraceData t = Trace(false);
  t.manifest["hardware"] = {{"ram_bytes", 8e9}};
  auto worker = [](int64_t pid, int64_t t_ns, int64_t pss) {
    replay::WorkerRecord w;
    w.worker = 0;
    w.pid = pid;
    w.t_ns = t_ns;
    w.pss_bytes = pss;
    return w;
  };
  replay::WorkerRecord main;
  main.worker = -1;
  main.t_ns = 5;
  main.rss_bytes = 700;
  replay::WorkerRecord later_main = main;
  later_main.t_ns = 9;
  later_main.rss_bytes = 900;
  // Worker peaks: pid 1 -> 300, pid 2 -> 100, pid 3 -> 200: nearest-rank median 200.
  t.workers = {worker(1, 1, 100), worker(1, 2, 300), worker(2, 1, 100), worker(3, 1, 200), later_main, main};
  in.traces = {t};
  CalibrationDraft d;
  ASSERT_TRUE(FitMemory(in, &d).ok());
  EXPECT_DOUBLE_EQ(d.model.memory.worker_base_pss_bytes, 200);
  EXPECT_DOUBLE_EQ(d.model.memory.main_base_bytes, 700);  // the first main sample, not the later one
  EXPECT_DOUBLE_EQ(d.model.memory.capacity_bytes, 8e9);
}

}  // namespace
}  // namespace simreplay::calibrate
