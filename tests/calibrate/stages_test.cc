// The calibrator's stages on synthetic traces built in memory, each expectation worked out by hand.
#include "calibrate/stages.h"

#include <algorithm>

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

// The first H200 capture's shape: a 560 ms first step (CUDA context, library handles, kernel loading)
// then 7 ms steps. Its mean (25 ms) made a model twice too slow: the warm-up steps are left out.
TEST(FitGpu, CudaWarmUpStepsAreLeftOutOfTheSteadyStep) {
  CalibrationInput in;
  TraceData t = Trace(false);
  t.manifest["accelerator"] = "cuda";
  t.steps = {Step(560'000'000), Step(30'000'000)};  // 30 ms: still over 3 x 7 ms, a second warm-up step
  for (int i = 0; i < 10; ++i) t.steps.push_back(Step(i % 2 == 0 ? 6'000'000 : 8'000'000));
  t.batches.assign(t.steps.size(), Batch(0, 0));
  const StepWarmup w = FindStepWarmup(t);
  EXPECT_EQ(w.steps, 2);
  EXPECT_TRUE(w.is_warmup[0] && w.is_warmup[1] && !w.is_warmup[2]);
  EXPECT_NEAR(w.extra_s, 0.560 + 0.030 - 2 * 0.007, 1e-12);  // beyond the steady mean of 7 ms
  in.traces = {t};
  CalibrationDraft d;
  ASSERT_TRUE(FitGpu(in, &d).ok());
  EXPECT_NEAR(d.model.gpu.step_time_s, 0.007, 1e-12);
  EXPECT_NEAR(d.model.gpu.step_cv, 1.0 / 7, 1e-12);  // sd 1 ms over mean 7 ms
  EXPECT_EQ(d.quality["gpu"]["warmup"]["steps_excluded"], 2);
  EXPECT_NE(d.model.info.at("gpu.step_time_s").source.find("without the 2 warm-up step(s)"), std::string::npos);
  // The self-check's measured run leaves the same one-time excess out.
  EXPECT_NEAR(Summarize(t).gpu_warmup_excluded_s, w.extra_s, 1e-12);
}

// The multi-node bench's shape (2026-12-06): an emulated step whose host part took 148 ms and 38 ms of
// CPU in its first two steps (DDP's first iteration) and 8-9 ms after. Their mean (16 ms over 20 steps)
// charged every simulated step twice its host CPU: the warm-up steps are left out of it.
TEST(FitGpu, EmulatedHostCpuWarmUpStepsAreLeftOutOfTheSteadyHostCpu) {
  CalibrationInput in;
  TraceData t = Trace(false);
  const std::vector<int64_t> cpu_ms = {148, 38, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9};
  for (int64_t ms : cpu_ms) {
    t.steps.push_back(Step((50 + ms) * 1'000'000));
    t.steps.back().cpu_ns = ms * 1'000'000;
    t.steps.back().accel_ns = 50'000'000;
  }
  t.batches.assign(t.steps.size(), Batch(0, 0));
  const StepWarmup w = FindStepWarmup(t);
  EXPECT_TRUE(w.host_cpu);
  EXPECT_EQ(w.steps, 2);
  EXPECT_NEAR(w.extra_s, 0.148 + 0.038 - 2 * 0.0085, 1e-12);  // beyond the steady mean of 8.5 ms
  in.traces = {t};
  CalibrationDraft d;
  ASSERT_TRUE(FitGpu(in, &d).ok());
  EXPECT_NEAR(d.model.gpu.step_host_cpu_s, 0.0085, 1e-12);
  EXPECT_NEAR(d.model.gpu.step_time_s, 0.050, 1e-12);
  EXPECT_EQ(d.quality["gpu"]["warmup"]["steps_excluded"], 2);
  EXPECT_NE(d.model.info.at("gpu.step_host_cpu_s").source.find("without the 2 warm-up step(s)"), std::string::npos);
  // The self-check's measured run leaves the same one-time excess out.
  EXPECT_NEAR(Summarize(t).gpu_warmup_excluded_s, w.extra_s, 1e-12);
}

// The loop thread's CPU time ran under the shared-core slowdown the cpu stage measured for its trace;
// the simulator applies the slowdown of the configuration it predicts, so the model holds it without.
TEST(FitGpu, EmulatedHostCpuLosesItsTracesSharedCoreSlowdown) {
  CalibrationInput in;
  TraceData a = Trace(false), b = Trace(false);
  for (TraceData* t : {&a, &b}) {
    for (int i = 0; i < 8; ++i) {
      t->steps.push_back(Step(62'000'000));
      t->steps.back().cpu_ns = 12'000'000;
      t->steps.back().accel_ns = 50'000'000;
    }
    t->batches.assign(t->steps.size(), Batch(0, 0));
  }
  in.traces = {a, b};
  CalibrationDraft d;
  d.cpu_ns_inflation = {1.5, 1.2};  // 12 ms at 1.5x and at 1.2x: 8 and 10 ms on a dedicated core
  ASSERT_TRUE(FitGpu(in, &d).ok());
  EXPECT_NEAR(d.model.gpu.step_host_cpu_s, 0.009, 1e-12);
  EXPECT_NEAR(d.model.gpu.step_time_s, 0.050, 1e-12);  // the accelerator part keeps its length
  EXPECT_NE(d.model.info.at("gpu.step_host_cpu_s").source.find("shared-core slowdown"), std::string::npos);
  CalibrationDraft none;  // no cpu stage ran: nothing to take out
  ASSERT_TRUE(FitGpu(in, &none).ok());
  EXPECT_NEAR(none.model.gpu.step_host_cpu_s, 0.012, 1e-12);
}

// The multi-node bench's shape (2026-12-06, n4-1g rank 0): 148 ms of loop CPU in the first step (the
// first epoch's fork and one-time start-up), 180 ms in the first step of the second epoch (its fork of
// the non-persistent worker), 8-9 ms otherwise.
TraceData ForkingTrace(bool second_epoch) {
  TraceData t = Trace(false);
  t.events.push_back({{"type", "event"}, {"kind", "epoch_start"}, {"epoch", 0}, {"t_ns", 0}});
  if (second_epoch) {
    t.events.push_back({{"type", "event"}, {"kind", "epoch_start"}, {"epoch", 1}, {"t_ns", 995'000'000}});
  }
  for (int i = 0; i < 20; ++i) {
    const int64_t us = i == 0 ? 148'000 : (i == 10 && second_epoch ? 180'000 : 8'500);
    t.steps.push_back(Step(50'000'000 + us * 1'000));
    t.steps.back().t_start_ns = 1'000'000 + i * 100'000'000;
    t.steps.back().cpu_ns = us * 1'000;
    t.steps.back().accel_ns = 50'000'000;
  }
  t.batches.assign(t.steps.size(), Batch(0, 0));
  return t;
}

TEST(FitGpu, TheFirstStepAfterAForkOfWorkersIsNotTheSteadyStep) {
  TraceData t = ForkingTrace(true);
  const AfterForkSteps forks = FindAfterForkSteps(t);
  EXPECT_TRUE(forks.first[0]);
  EXPECT_TRUE(forks.later[10]);
  EXPECT_EQ(std::count(forks.later.begin(), forks.later.end(), true), 1);
  CalibrationInput in;
  in.traces = {t};
  CalibrationDraft d;
  ASSERT_TRUE(FitGpu(in, &d).ok());
  EXPECT_NEAR(d.model.gpu.step_host_cpu_s, 0.0085, 1e-12);  // neither step 0 nor step 10
  EXPECT_NEAR(d.model.gpu.step_host_cpu_after_fork_s, 0.180 - 0.0085, 1e-12);
  EXPECT_EQ(d.quality["gpu"]["host_cpu_after_fork"]["from"], "later epochs");

  // One epoch in the window: the first step's excess, start-up included, is the upper bound it gives.
  in.traces = {ForkingTrace(false)};
  CalibrationDraft first;
  ASSERT_TRUE(FitGpu(in, &first).ok());
  EXPECT_NEAR(first.model.gpu.step_host_cpu_s, 0.0085, 1e-12);
  EXPECT_NEAR(first.model.gpu.step_host_cpu_after_fork_s, 0.148 - 0.0085, 1e-12);
  EXPECT_NE(first.model.info.at("gpu.step_host_cpu_after_fork_s").source.find("upper bound"), std::string::npos);

  // Persistent workers are forked once: the second epoch's step is a steady one.
  t.manifest["loader"]["persistent_workers"] = true;
  const AfterForkSteps once = FindAfterForkSteps(t);
  EXPECT_TRUE(once.first[0]);
  EXPECT_EQ(std::count(once.later.begin(), once.later.end(), true), 0);
  // No workers: nothing is forked.
  t.manifest["loader"]["num_workers"] = 0;
  const AfterForkSteps none = FindAfterForkSteps(t);
  EXPECT_EQ(std::count(none.first.begin(), none.first.end(), true), 0);
}

TEST(FitGpu, NoWarmUpWithoutAGpuFewStepsOrNoSlowStart) {
  TraceData t = Trace(false);
  t.steps = {Step(560'000'000), Step(7'000'000), Step(7'000'000), Step(7'000'000), Step(7'000'000)};
  EXPECT_EQ(FindStepWarmup(t).steps, 0);  // emulated, no host CPU recorded: nothing to look at
  t.manifest["accelerator"] = "cuda";
  EXPECT_EQ(FindStepWarmup(t).steps, 1);
  t.steps.pop_back();  // 4 steps: a quarter is 1
  EXPECT_EQ(FindStepWarmup(t).steps, 1);
  t.steps.pop_back();  // 3 steps: too few to tell
  EXPECT_EQ(FindStepWarmup(t).steps, 0);
  t.steps = {Step(20'000'000), Step(7'000'000), Step(7'000'000), Step(7'000'000), Step(7'000'000)};
  EXPECT_EQ(FindStepWarmup(t).steps, 0);  // under 3 x the median: an ordinary slow step stays
  // Per rank: rank 1's slow start does not touch rank 0's steps.
  t.steps = {Step(7'000'000), Step(7'000'000), Step(7'000'000), Step(7'000'000)};
  for (int i = 0; i < 4; ++i) {
    t.steps.push_back(Step(i == 0 ? 100'000'000 : 7'000'000));
    t.steps.back().rank = 1;
  }
  const StepWarmup w = FindStepWarmup(t);
  EXPECT_EQ(w.steps, 1);
  EXPECT_TRUE(w.is_warmup[4]);
  EXPECT_NEAR(w.extra_s, 0.093, 1e-12);
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
