// One trace held in memory for calibration (the stages make several passes over it), its validation,
// and what it measured (the figures the self-check compares a prediction with).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "replay/run_window.h"
#include "replay/trace_records.h"

namespace simreplay::calibrate {

inline constexpr double kNs = 1e-9;

struct TraceData {
  std::string path;
  nlohmann::json manifest;
  std::vector<replay::SampleRecord> samples;
  std::vector<int64_t> sample_lines;
  std::vector<replay::BatchRecord> batches;
  std::vector<int64_t> batch_lines;
  std::vector<replay::StepRecord> steps;
  std::vector<int64_t> step_lines;
  std::vector<replay::WorkerRecord> workers;
  std::vector<replay::HostRecord> hosts;
  std::vector<nlohmann::json> events;
  bool has_footer = false;
  std::vector<std::string> warnings;
};

// Reads every record of the trace at `path` (errors: FILE:LINE from the trace reader).
Result<TraceData> ReadTrace(const std::string& path);

// Rejects traces that measured nothing or contradict themselves (FILE:LINE: contradictory fields). A
// stray sample whose thread CPU exceeds its wall time (at most 1% of them) is clamped and warned about.
Status ValidateTrace(TraceData* t);

// The run's window on the simulator's clock (replay/run_window.h).
replay::RunWindow WindowOf(const TraceData& t);

// The first steps of a run pay one-time costs the steady step does not. On a real GPU: the CUDA context,
// library handles, lazy kernel loading, autotuning (the first H200 capture, 2026-12-04: 562 ms, then
// 6-8 ms), seen in compute_ns. In an emulated step (a sleep, which has none) the loop thread's host
// part has its own: lazy initialisation, DDP's first iteration (the multi-node bench on 2026-12-06:
// 148 ms and 38 ms of CPU in steps 0 and 1, then 8-9 ms), seen in cpu_ns. Per rank, its leading steps
// while one takes more than kStepWarmupFactor x the median of the rank's steps after the first, at
// most a quarter of them; none for fewer than 4 steps. The simulator does not model this one-time
// cost: calibrate leaves these steps out of gpu.step_time_s and gpu.step_host_cpu_s, and the
// self-check leaves their excess out of the measured run.
inline constexpr double kStepWarmupFactor = 3;
struct StepWarmup {
  std::vector<bool> is_warmup;  // per step record of the trace
  int64_t steps = 0;            // how many are warm-up steps, over all ranks
  double extra_s = 0;           // the largest over ranks of their cost beyond that rank's steady mean
  bool host_cpu = false;        // measured on the emulated step's host part (cpu_ns), not compute_ns
};
StepWarmup FindStepWarmup(const TraceData& t);

// The steps that follow a fork of DataLoader workers (an epoch_start event of a loader with workers,
// every epoch unless they are persistent): per rank, the first step record after each event. Their
// loop thread pays the copy-on-write faults of the pages it writes, shared with the children until
// then (the multi-node bench on 2026-12-06: 180 ms of CPU in the first step of the second epoch against
// 8-9 ms). `later`: after the fork of a later epoch; `first`: the first epoch's, whose step also holds
// the run's one-time start-up work (FindStepWarmup).
struct AfterForkSteps {
  std::vector<bool> later;  // per step record of the trace
  std::vector<bool> first;
};
AfterForkSteps FindAfterForkSteps(const TraceData& t);

// What a trace measured, on the simulator's clock (first iter() to the last step end), less the
// one-time excess of its warm-up steps (FindStepWarmup).
struct MeasuredSummary {
  int64_t samples = 0;  // samples delivered to the training loop
  int64_t batches = 0;
  double wall_s = 0;
  double train_throughput_samples_per_s = 0;
  double gpu_idle_fraction = 0;
  double mean_data_wait_s = 0;
  double gpu_warmup_excluded_s = 0;  // the warm-up steps' one-time excess left out of wall_s
  nlohmann::json ToJson() const;
};

MeasuredSummary Summarize(const TraceData& t);

}  // namespace simreplay::calibrate
