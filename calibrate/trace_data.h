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

// Rejects traces that measured nothing or contradict themselves (FILE:LINE: contradictory fields).
Status ValidateTrace(const TraceData& t);

// The run's window on the simulator's clock (replay/run_window.h).
replay::RunWindow WindowOf(const TraceData& t);

// What a trace measured, on the simulator's clock (first iter() to the last step end).
struct MeasuredSummary {
  int64_t samples = 0;  // samples delivered to the training loop
  int64_t batches = 0;
  double wall_s = 0;
  double train_throughput_samples_per_s = 0;
  double gpu_idle_fraction = 0;
  double mean_data_wait_s = 0;
  nlohmann::json ToJson() const;
};

MeasuredSummary Summarize(const TraceData& t);

}  // namespace simreplay::calibrate
