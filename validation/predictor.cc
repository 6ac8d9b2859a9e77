#include "validation/predictor.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <numeric>

#include "common/paths.h"
#include "common/quantile.h"
#include "models/model_params.h"
#include "scenarios/scenario.h"
#include "sim/metrics.h"
#include "sim/point_runner.h"
#include "validation/measurement.h"
#include "validation/statistics.h"

namespace simreplay::validation {

std::vector<int64_t> BatchSizes(int64_t dataset_samples, int batch_size, int steps) {
  std::vector<int64_t> sizes;
  if (dataset_samples <= 0) {
    sizes.assign(static_cast<size_t>(steps), batch_size);
    return sizes;
  }
  int64_t left = dataset_samples;
  for (int i = 0; i < steps; ++i) {
    int64_t n = std::min<int64_t>(batch_size, left);
    sizes.push_back(n);
    left -= n;
    if (left == 0) left = dataset_samples;
  }
  return sizes;
}

namespace {

std::string Absolute(const std::string& path) {
  std::error_code ec;
  auto p = std::filesystem::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

// Warm-up-excluded summary of one simulated run, with the bench's definitions (docs/capture.md):
// the window starts when next() is called for batch W (the end of step W-1) and ends at the last
// step end; GPU idle = 1 - step time in the window / window.
struct Window {
  double samples = 0;
  double seconds = 0;
  std::vector<double> waits;
};

Window WarmupExcluded(const sim::SimRawStats& raw, const std::vector<int64_t>& sizes, int warmup) {
  const std::vector<double>& step_s = raw.step_s;
  const std::vector<double>& wait_s = raw.wait_s;
  const double makespan = raw.makespan_s;
  size_t w = std::min<size_t>(static_cast<size_t>(warmup), step_s.size());
  double t_warm = std::accumulate(step_s.begin(), step_s.begin() + static_cast<std::ptrdiff_t>(w), 0.0);
  Window out;
  out.seconds = makespan - t_warm;
  for (size_t i = w; i < sizes.size() && i < wait_s.size(); ++i) out.samples += static_cast<double>(sizes[i]);
  for (size_t i = w; i < wait_s.size(); ++i) out.waits.push_back(wait_s[i]);
  return out;
}

}  // namespace

Result<Prediction> PredictCase(const ExperimentSpec& spec, const ExperimentCase& c, const std::string& model_path,
                               const PredictOptions& options) {
  Prediction pred;
  pred.model_path = model_path;
  auto model = models::LoadModelFile(model_path);
  if (!model.ok()) return model.status();
  if (model->trace_path.empty()) return Status::InvalidArgument(model_path + ": the model names no trace");
  const std::string trace = Absolute(ResolveBesideFile(model_path, model->trace_path));

  nlohmann::json scenario_json = {{"name", fmt::format("validation case {}", c.name)},
                                  {"model", Absolute(model_path)},
                                  {"trace", trace},
                                  {"loader",
                                   {{"num_workers", c.config.num_workers},
                                    {"batch_size", c.config.batch_size},
                                    {"prefetch_factor", c.config.prefetch_factor},
                                    {"pin_memory", c.config.pin_memory},
                                    {"persistent_workers", c.config.persistent_workers},
                                    {"drop_last", false},
                                    {"shuffle", true}}},
                                  {"hardware", {{"cpu_cores", 0}, {"gpus", 1}}},
                                  {"train", {{"steps", spec.run.steps}, {"dataset_samples", options.dataset_samples}}},
                                  {"data", {{"format", c.config.format}}},
                                  {"replay", {{"order", "recorded"}}},
                                  {"seed", spec.run.seed}};
  if (!options.step_time_scales_with_batch) {
    scenario_json["train"]["step_time_s"] = model->gpu.step_time_s;
    pred.warnings.push_back(fmt::format(
        "GPU step pinned to the model's measured {:.6f} s per micro-batch: the bench emulates the step with a sleep "
        "of fixed mean whatever the batch size",
        model->gpu.step_time_s));
  }
  auto scenario = scenarios::ParseScenario(scenario_json, fmt::format("validation case {}", c.name), ".");
  if (!scenario.ok()) return scenario.status();

  // PreparePoint loads the calibration trace and moves its read costs to the case's storage format
  // (data.format) with the model's formats section.
  sim::CostCache cache;
  auto point = sim::PreparePoint(*scenario, &cache);
  if (!point.ok()) return point.status();
  pred.accelerator_note = point->accelerator_note;
  for (const auto& w : point->warnings) pred.warnings.push_back(w);

  // The same job pair `simulate` runs: the full run and its pipeline-only companion.
  const sim::PreparedPoint& prepared = *point;
  auto runs = sim::RunPoint(prepared);
  if (!runs.ok()) return runs.status();
  const sim::SimRawStats& raw = runs->full;

  // The epoch length the simulator used (PreparePoint resolves a dataset size of 0).
  std::vector<int64_t> sizes =
      BatchSizes(prepared.input.scenario.train.dataset_samples, c.config.batch_size, spec.run.steps);
  Window train = WarmupExcluded(raw, sizes, spec.run.warmup_steps);
  Window pipeline = WarmupExcluded(runs->pipeline_only, sizes, spec.run.warmup_steps);
  if (train.seconds <= 0 || pipeline.seconds <= 0 || train.waits.empty()) {
    return Status::Internal(fmt::format("case {}: the simulated run is shorter than its warm-up", c.name));
  }
  double micro = std::max(1.0, static_cast<double>(raw.micro_batches));
  double steps_in_window = micro - std::min<double>(micro, spec.run.warmup_steps);
  double gpu_in_window = raw.gpu_busy_s * steps_in_window / micro;  // steps of ~equal mean
  pred.values[kTrainThroughput] = sim::Round9(train.samples / train.seconds);
  pred.values[kPipelineThroughput] = sim::Round9(pipeline.samples / pipeline.seconds);
  pred.values[kGpuIdle] = sim::Round9(std::clamp(1 - gpu_in_window / train.seconds, 0.0, 1.0));
  pred.values[kWaitMean] = sim::Round9(Mean(train.waits));
  pred.values[kWaitP95] = sim::Round9(QuantileLinear(train.waits, 0.95));
  pred.values[kFirstBatch] = sim::Round9(raw.time_to_first_batch_s);
  pred.values[kPeakMemory] = sim::Round9(raw.peak_host_memory_bytes);
  pred.bottleneck = sim::FindBottleneck(prepared.input, raw);
  return pred;
}

}  // namespace simreplay::validation
