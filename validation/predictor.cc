#include "validation/predictor.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <numeric>

#include "models/model_params.h"
#include "scenarios/scenario.h"
#include "sim/isolated_run.h"
#include "sim/metrics.h"
#include "sim/point_runner.h"
#include "sim/simulation.h"
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

Window WarmupExcluded(const nlohmann::json& raw, const std::vector<int64_t>& sizes, int warmup) {
  std::vector<double> step_s = raw.at("step_s").get<std::vector<double>>();
  std::vector<double> wait_s = raw.at("wait_s").get<std::vector<double>>();
  double makespan = raw.at("makespan_s").get<double>();
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
  std::string trace =
      model->trace_path[0] == '/' ? model->trace_path : scenarios::DirectoryOf(model_path) + "/" + model->trace_path;
  trace = Absolute(trace);

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

  const sim::PreparedPoint& prepared = *point;
  std::vector<sim::IsolatedJob> jobs;
  jobs.push_back([&prepared]() -> Result<std::string> {
    sim::SimInput input = prepared.input;
    auto stats = sim::RunSimulation(input);
    if (!stats.ok()) return stats.status();
    nlohmann::json out = {{"raw", sim::RawStatsToJson(*stats)}, {"metrics", sim::SummarizeMetrics(input, *stats)}};
    return out.dump();
  });
  jobs.push_back([&prepared]() -> Result<std::string> {
    sim::SimInput input = prepared.input;
    input.pipeline_only = true;
    auto stats = sim::RunSimulation(input);
    if (!stats.ok()) return stats.status();
    return sim::RawStatsToJson(*stats).dump();
  });
  auto results = sim::RunIsolated(jobs, 2);
  if (!results[0].ok()) return results[0].status();
  if (!results[1].ok()) return results[1].status();
  nlohmann::json full = nlohmann::json::parse(*results[0]);
  nlohmann::json pipe = nlohmann::json::parse(*results[1]);

  // The epoch length the simulator used (PreparePoint resolves a dataset size of 0).
  std::vector<int64_t> sizes =
      BatchSizes(prepared.input.scenario.train.dataset_samples, c.config.batch_size, spec.run.steps);
  Window train = WarmupExcluded(full["raw"], sizes, spec.run.warmup_steps);
  Window pipeline = WarmupExcluded(pipe, sizes, spec.run.warmup_steps);
  if (train.seconds <= 0 || pipeline.seconds <= 0 || train.waits.empty()) {
    return Status::Internal(fmt::format("case {}: the simulated run is shorter than its warm-up", c.name));
  }
  const auto& raw = full["raw"];
  double micro = std::max(1.0, raw.at("micro_batches").get<double>());
  double steps_in_window = micro - std::min<double>(micro, spec.run.warmup_steps);
  double gpu_in_window = raw.at("gpu_busy_s").get<double>() * steps_in_window / micro;  // steps of ~equal mean
  pred.values[kTrainThroughput] = sim::Round9(train.samples / train.seconds);
  pred.values[kPipelineThroughput] = sim::Round9(pipeline.samples / pipeline.seconds);
  pred.values[kGpuIdle] = sim::Round9(std::clamp(1 - gpu_in_window / train.seconds, 0.0, 1.0));
  pred.values[kWaitMean] = sim::Round9(Mean(train.waits));
  pred.values[kWaitP95] = sim::Round9(Quantile(train.waits, 0.95));
  pred.values[kFirstBatch] = sim::Round9(raw.at("time_to_first_batch_s").get<double>());
  pred.values[kPeakMemory] = sim::Round9(raw.at("peak_host_memory_bytes").get<double>());
  pred.bottleneck = full["metrics"].value("bottleneck", nlohmann::json::object());
  return pred;
}

}  // namespace simreplay::validation
