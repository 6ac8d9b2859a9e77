#include "sim/point_runner.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/atomic_file.h"
#include "common/paths.h"
#include "models/error_band.h"
#include "models/model_params.h"
#include "models/page_fault_churn.h"
#include "replay/manifest.h"
#include "sim/cluster_network.h"
#include "sim/remote_storage.h"
#include "sim/decode_replay.h"
#include "sim/format_replay.h"
#include "sim/media_replay.h"
#include "sim/metrics.h"
#include "sim/rank_folding.h"
#include "sim/raw_stats_codec.h"
#include "sim/simulation.h"
#include "sim/timeline_writer.h"

namespace simreplay::sim {

namespace {

using replay::ManifestBool;
using replay::ManifestInt;

// The measured run can be compared with the prediction when the scenario reproduces its configuration.
bool SameConfiguration(const scenarios::Scenario& s, const nlohmann::json& manifest) {
  if (!manifest.contains("loader") || !manifest["loader"].is_object()) return false;
  return ManifestInt(manifest, "loader", "num_workers", -1) == s.loader.num_workers &&
         ManifestInt(manifest, "loader", "batch_size", -1) == s.loader.batch_size &&
         (s.loader.num_workers == 0 ||
          ManifestInt(manifest, "loader", "prefetch_factor", 2) == s.loader.prefetch_factor) &&
         ManifestBool(manifest, "loader", "pin_memory") == s.loader.pin_memory &&
         ManifestBool(manifest, "loader", "persistent_workers") == s.loader.persistent_workers &&
         s.hardware.gpus == 1 && s.cluster.nodes == 1;
}

bool Contains(const nlohmann::json& list, const nlohmann::json& value) {
  return list.is_array() && std::find(list.begin(), list.end(), value) != list.end();
}

// Warns when the scenario leaves what the model's traces measured (the model's measured_range, or
// the trace manifest for a scenario without a calibrated model).
void AddExtrapolationWarnings(const scenarios::Scenario& s, int cores, const models::ModelParams& model,
                              const nlohmann::json& manifest, std::vector<std::string>* warnings,
                              std::vector<std::string>* extrapolated) {
  nlohmann::json range =
      model.extra.contains("measured_range") ? model.extra["measured_range"] : nlohmann::json::object();
  if (range.empty() && manifest.contains("loader")) {  // a bare trace: its own configuration is the range
    int w = ManifestInt(manifest, "loader", "num_workers", -1);
    int c = ManifestInt(manifest, "hardware", "cores", 0);
    if (w >= 0) range["num_workers"] = {w, w};
    if (w >= 0 && c > 0) range["max_workers_plus_main_over_cores"] = static_cast<double>(w + 1) / c;
    range["formats"] = {replay::ContainerOfManifest(manifest)};
  }
  const int w = s.loader.num_workers;
  // Every rank on the node runs its workers, its main loop and (with pin_memory) its pin thread on the
  // node's cores: the oversubscription that matters is theirs together.
  // The measured range counts processes (workers + main, as calibrate records it); the contention
  // check counts the pin threads too.
  const int ranks = s.hardware.gpus * (s.cluster.nodes_share_cores ? s.cluster.nodes : 1);
  const int processes = ranks * (w + 1);
  const int busy = processes + (s.loader.pin_memory ? ranks : 0);
  const std::string who =
      ranks == 1 ? fmt::format("{} workers + main process{}", w, s.loader.pin_memory ? " + pin thread" : "")
                 : fmt::format("{} ranks x ({} workers + main process{})", ranks, w,
                               s.loader.pin_memory ? " + pin thread" : "");
  if (range.contains("max_workers_plus_main_over_cores") &&
      static_cast<double>(processes) / cores > range["max_workers_plus_main_over_cores"].get<double>() + 1e-9) {
    extrapolated->push_back("oversubscription");
    warnings->push_back(
        fmt::format("extrapolating: {} on {} cores is more oversubscribed than anything measured (at most {:.2f} "
                    "processes per core)",
                    who, cores, range["max_workers_plus_main_over_cores"].get<double>()));
  }
  // More processes than cores: the prediction rests on the CPU contention curve. Say when it was not
  // measured (no CPU probe or joint fit behind cpu.oversubscription_overhead; docs/probe-cpu.md).
  const auto curve = model.info.find("cpu.oversubscription_overhead");
  if (busy > cores && (curve == model.info.end() || curve->second.assumed)) {
    warnings->push_back(fmt::format(
        "CPU contention curve assumed: {} on {} cores, and the model's oversubscription overhead was not "
        "measured (calibrate --cpu-probe, python3 -m simreplay_capture.probe_cpu)",
        who, cores));
  }
  auto outside = [&](const char* key, int value) {
    if (!range.contains(key) || !range[key].is_array() || range[key].size() != 2) return;
    int lo = range[key][0].get<int>(), hi = range[key][1].get<int>();
    if (value < lo || value > hi) {
      extrapolated->push_back(key);
      warnings->push_back(
          fmt::format("extrapolating: {} = {} outside the measured range [{}, {}]", key, value, lo, hi));
    }
  };
  outside("num_workers", w);
  outside("batch_size", s.loader.batch_size);
  if (w > 0) outside("prefetch_factor", s.loader.prefetch_factor);
  if (range.contains("pin_memory") && !Contains(range["pin_memory"], s.loader.pin_memory)) {
    extrapolated->push_back("pin_memory");
    warnings->push_back(fmt::format("extrapolating: pin_memory = {} was never measured", s.loader.pin_memory));
  }
  if (range.contains("persistent_workers") && !Contains(range["persistent_workers"], s.loader.persistent_workers)) {
    extrapolated->push_back("persistent_workers");
    warnings->push_back(
        fmt::format("extrapolating: persistent_workers = {} was never measured", s.loader.persistent_workers));
  }
  // Another worker count, batch size or worker persistence deals the samples to other processes, and
  // each process churns according to the samples it meets: the captured churn no longer holds.
  const double churn = model.cpu.page_fault_cpu_share;
  const auto churn_info = model.info.find("cpu.page_fault_cpu_share");
  const bool dealt_otherwise = std::any_of(extrapolated->begin(), extrapolated->end(), [](const std::string& what) {
    return what == "num_workers" || what == "batch_size" || what == "persistent_workers";
  });
  if (dealt_otherwise && churn >= models::kChurnShareWorthNaming &&
      churn_info != model.info.end() && !churn_info->second.assumed) {
    warnings->push_back(fmt::format(
        "page-fault churn: {:.0f}% of the captured samples' CPU is page faults (cpu.page_fault_cpu_share), and each "
        "DataLoader process churns according to the samples it meets; this loader deals them to other processes, "
        "which can churn differently than the captured ones, and the prediction keeps the captured churn (docs/"
        "modelling.md, \"Page-fault churn\"; `simreplay diagnose` shows where it falls)",
        100 * churn));
  }
  if (!s.data_format.empty() && range.contains("formats") && !Contains(range["formats"], s.data_format)) {
    extrapolated->push_back("format");
    warnings->push_back("extrapolating: format '" + s.data_format +
                        "' was never captured: its read costs come from "
                        "the format model (" +
                        (range["formats"].empty() ? std::string("?") : range["formats"][0].get<std::string>()) +
                        " -> " + s.data_format + ")");
  }
}

// An emulated step's host part (gpu.step_host_cpu_s: forward, backward and optimizer run on the CPU)
// is O(parameters): a scenario that states another gradient size than the model's scales it by the
// same ratio (docs/modelling.md, "Cluster links"). A real GPU step's host part is not modelled.
void ScaleStepHostCpu(const scenarios::Scenario& s, models::ModelParams* model, std::vector<std::string>* warnings) {
  const double calibrated = model->collective.gradient_bytes;
  const double stated = s.collective.gradient_bytes;
  if (stated < 0 || calibrated <= 0 || model->gpu.step_host_cpu_s <= 0 || stated == calibrated) return;
  const double ratio = stated / calibrated;
  model->gpu.step_host_cpu_s *= ratio;
  model->gpu.step_host_cpu_after_fork_s *= ratio;  // the pages the step writes grow with it too
  warnings->push_back(fmt::format(
      "gpu.step_host_cpu_s scaled x{:.3g} with collective.gradient_bytes ({:.4g} stated, {:.4g} calibrated): the "
      "emulated step's host work grows with the parameter count",
      ratio, stated, calibrated));
}

}  // namespace

Result<PreparedPoint> PreparePoint(const scenarios::Scenario& scenario, CostCache* cache) {
  PreparedPoint point;
  point.input.scenario = scenario;
  if (!scenario.model_path.empty()) {
    auto model = models::LoadModelFile(scenario.model_path);
    if (!model.ok()) return model.status();
    point.input.model = std::move(*model);
    if (scenario.trace_path.empty() && point.input.model.trace_path.empty()) {
      return Status::InvalidArgument(scenario.model_path + ": the model names no trace and the scenario gives none");
    }
  }
  std::string trace = scenario.trace_path;
  if (trace.empty()) {
    const std::string& t = point.input.model.trace_path;
    trace = ResolveBesideFile(scenario.model_path, t);
  }
  // Cached per (trace, format, media, seed): the points of a sweep share the loaded and transformed costs.
  // What the replay takes out of the recorded costs: the model's window, priced with its calibration's
  // steady costs.
  const replay::RecordedWarmup recorded_warmup{static_cast<int>(point.input.model.cpu.recorded_warmup_samples),
                                               point.input.model.warmup_steady_cpu_s_per_unit};
  std::string cache_key = trace + "#" + scenario.data_format + (scenario.data_sequential ? "#seq" : "") + "#w" +
                          std::to_string(recorded_warmup.window);
  for (const auto& [format, cost] : recorded_warmup.steady_cpu_s_per_unit) {
    cache_key += fmt::format(":{}={}", format, cost);
  }
  if (scenario.decode_on_gpu) {
    const auto& g = scenario.gpu_decode;
    cache_key += fmt::format("#gpu:{}:{}:{}:{}", g.per_sample_s, g.s_per_pixel, g.s_per_frame, g.cpu_parse_s_per_byte);
  }
  if (!scenario.data_media.empty()) {
    cache_key += "#" + std::to_string(scenario.seed);
    for (const auto& [name, m] : scenario.data_media) {
      cache_key += fmt::format("#{}:{}:{}:{}:{}:{}", name, m.share, m.width, m.height, m.frames, m.scale);
    }
  }
  auto cached = cache->find(cache_key);
  if (cached == cache->end()) {
    auto costs = replay::LoadSampleCosts({trace}, recorded_warmup);
    if (!costs.ok()) return costs.status();
    if (!scenario.data_media.empty()) {
      auto synthesised = ApplyMedia(*costs, point.input.model, scenario.data_media, scenario.seed);
      if (!synthesised.ok()) return Status::InvalidArgument(scenario.path + ": " + synthesised.status().message());
      costs = std::move(*synthesised);
    }
    if (!scenario.data_format.empty() || scenario.data_sequential) {
      const auto& extra = point.input.model.extra;
      auto formats = extra.contains("formats")
                         ? models::ParseFormatParams(extra["formats"], scenario.model_path + ": formats")
                         : Result<models::FormatParams>(models::CatalogueFormats());
      if (!formats.ok()) return formats.status();
      auto transformed = ApplyFormat(*costs, *formats, scenario.data_format, scenario.data_sequential);
      if (!transformed.ok())
        return Status::InvalidArgument(scenario.path + ": data.format: " + transformed.status().message());
      costs = std::move(*transformed);
    }
    if (scenario.decode_on_gpu) {
      costs = MoveDecodeToGpu(*costs, scenario.gpu_decode, point.input.model.cpu.worker_cost_scale);
    }
    cached = cache->emplace(cache_key, std::make_shared<const replay::SampleCostTable>(std::move(*costs))).first;
  }
  point.costs = cached->second;
  point.trace_path = trace;
  point.input.costs = point.costs.get();
  point.warnings = point.costs->warnings;
  point.extrapolated = point.costs->extrapolated;
  const auto& manifest = point.costs->manifest;
  const auto& model = point.input.model;

  // Dataset size: the scenario's, else the dataset the captured run read (manifest data.files), else
  // the distinct samples in the trace (which undercounts a trace shorter than an epoch).
  auto& train = point.input.scenario.train;
  if (train.dataset_samples == 0) train.dataset_samples = ManifestInt(manifest, "data", "files", 0);
  if (train.dataset_samples == 0) train.dataset_samples = point.costs->distinct_indices;

  int measured_cores = ManifestInt(manifest, "hardware", "cores", 0);
  point.input.cpu_cores = scenario.hardware.cpu_cores > 0 ? scenario.hardware.cpu_cores
                          : measured_cores > 0            ? measured_cores
                                                          : 8;
  if (scenario.hardware.cpu_cores == 0 && measured_cores == 0) {
    point.warnings.push_back("cpu_cores not given and not in the trace manifest: assuming 8");
  }

  // Step time: the scenario wins, then a measured model, then the trace's steps, then the default.
  const auto gpu_info = model.info.find("gpu.step_time_s");
  const bool model_has_step = gpu_info != model.info.end();
  std::string trace_accel = manifest.value("accelerator", "emulated");
  if (scenario.train.step_time_s >= 0) {
    point.input.step_time_s = scenario.train.step_time_s;
    point.step_time_source = "scenario";
    point.accelerator = "emulated";
    point.accelerator_note = "GPU step emulated: fixed step time given in the scenario";
  } else if (model_has_step) {
    point.input.step_time_s = model.gpu.step_time_s;
    point.step_time_source = "model";
    point.accelerator = model.gpu.accelerator == "cuda" ? "cuda" : "emulated";
    point.accelerator_note = point.accelerator == "cuda"
                                 ? "GPU step time measured on a real GPU (model file)"
                                 : "GPU step emulated: step time from the model file, not measured on a GPU";
    int measured_bs = model.gpu.measured_batch_size;
    if (model.gpu.step_per_sample_s > 0) {
      point.input.step_time_s = model.gpu.step_intercept_s + model.gpu.step_per_sample_s * scenario.loader.batch_size;
    } else if (measured_bs > 0 && measured_bs != scenario.loader.batch_size) {
      point.input.step_time_s *= static_cast<double>(scenario.loader.batch_size) / measured_bs;
      point.warnings.push_back(fmt::format("GPU step time scaled linearly from batch size {} to {} (assumed linear)",
                                           measured_bs, scenario.loader.batch_size));
    }
  } else if (point.costs->measured.mean_step_compute_s >= 0) {
    point.input.step_time_s = point.costs->measured.mean_step_compute_s;
    point.step_time_source = "trace";
    point.accelerator = trace_accel == "cuda" ? "cuda" : "emulated";
    point.accelerator_note = point.accelerator == "cuda" ? "GPU step time measured on a real GPU (trace)"
                                                         : "GPU step emulated: the traced run had no GPU (sleep step)";
  } else {
    point.input.step_time_s = model.gpu.step_time_s;
    point.step_time_source = "default";
    point.accelerator = "emulated";
    point.accelerator_note = "GPU step emulated: default step time, nothing measured";
    point.warnings.push_back("no GPU step time in scenario, model or trace: using the default (assumed)");
  }

  if (scenario.decode_on_gpu) {
    // Every micro-batch's GPU step grows by its samples' decode (mean per sample x batch size).
    const double decode_s = MeanGpuDecodeS(*point.costs, scenario.gpu_decode) * scenario.loader.batch_size;
    point.input.step_time_s += decode_s;
    point.accelerator_note += fmt::format("; plus {:.6f} s of GPU decoding per micro-batch (decode.device gpu: ASSUMED "
                                          "catalogue costs, not measured)",
                                          decode_s);
  }
  point.input.background_threads =
      scenario.hardware.background_threads >= 0 ? scenario.hardware.background_threads : model.cpu.background_threads;
  point.network = ResolveClusterNetwork(model, scenario.storage.kind == scenarios::StorageKind::kShared,
                                        &point.input.scenario.cluster, &point.warnings);
  ScaleStepHostCpu(scenario, &point.input.model, &point.warnings);
  AddExtrapolationWarnings(scenario, point.input.cpu_cores, model, manifest, &point.warnings, &point.extrapolated);
  AddStreamingWarnings(scenario,
                       scenario.train.dataset_samples > 0 ? scenario.train.dataset_samples
                                                          : static_cast<int64_t>(point.costs->samples.size()),
                       scenario.hardware.gpus * std::max(1, scenario.cluster.nodes), &point.warnings);
  return point;
}

std::vector<IsolatedJob> MakeJobs(const PreparedPoint& point, const std::string& timeline_path) {
  std::vector<IsolatedJob> jobs;
  jobs.push_back([&point, timeline_path]() -> Result<std::string> {
    SimInput input = point.input;
    input.record_timeline = !timeline_path.empty();
    auto stats = RunSimulation(input);
    if (!stats.ok()) return stats.status();
    if (!timeline_path.empty()) {
      std::string text = TimelineToJson(*stats, input.scenario.hardware.gpus * input.scenario.cluster.nodes,
                                        input.scenario.hardware.gpus, input.scenario.loader.num_workers,
                                        input.scenario.loader.pin_memory, point.accelerator);
      // The parent renames this into place only when the whole command succeeds.
      Status s = WriteFileAtomically(timeline_path, text);
      if (!s.ok()) return s;
    }
    return EncodeRawStats(*stats);
  });
  jobs.push_back([&point]() -> Result<std::string> {
    SimInput input = point.input;
    input.pipeline_only = true;
    auto stats = RunSimulation(input);
    if (!stats.ok()) return stats.status();
    return EncodeRawStats(*stats);
  });
  return jobs;
}

Result<PointRuns> DecodePointRuns(const Result<std::string>& full, const Result<std::string>& pipeline) {
  if (!full.ok()) return full.status();
  if (!pipeline.ok()) return pipeline.status();
  auto f = DecodeRawStats(*full);
  if (!f.ok()) return f.status();
  auto p = DecodeRawStats(*pipeline);
  if (!p.ok()) return p.status();
  return PointRuns{std::move(*f), std::move(*p)};
}

Result<PointRuns> RunPoint(const PreparedPoint& point) {
  auto results = RunIsolated(MakeJobs(point, ""), 2);
  return DecodePointRuns(results[0], results[1]);
}

Result<nlohmann::json> AssembleResult(const PreparedPoint& point, const Result<std::string>& full,
                                      const Result<std::string>& pipeline) {
  auto runs = DecodePointRuns(full, pipeline);
  if (!runs.ok()) return runs.status();
  nlohmann::json metrics = SummarizeMetrics(point.input, runs->full);
  metrics["pipeline_throughput_samples_per_s"] = Round9(static_cast<double>(runs->pipeline_only.samples_consumed) /
                                                        std::max(runs->pipeline_only.makespan_s, 1e-12));
  // Where the real throughput lies if this prediction errs as validated ones did (models/error_band.h).
  const double train_tp = metrics["train_throughput_samples_per_s"].get<double>();
  const models::ErrorBand band;
  metrics["train_throughput_low_samples_per_s"] = Round9(models::BandLow(band, train_tp));
  metrics["train_throughput_high_samples_per_s"] = Round9(models::BandHigh(band, train_tp));
  nlohmann::json result = nlohmann::json::object();
  result["schema"] = kResultSchema;
  result["scenario"] = point.input.scenario.resolved;
  result["accelerator"] = point.accelerator;
  result["accelerator_note"] = point.accelerator_note;
  result["resolved"] = {{"cpu_cores", point.input.cpu_cores},
                        {"step_time_s", Round9(point.input.step_time_s)},
                        {"step_time_source", point.step_time_source},
                        {"storage_mode", point.input.model.storage.mode},
                        {"trace_samples", static_cast<int64_t>(point.costs->samples.size())},
                        {"dataset_samples", point.input.scenario.train.dataset_samples}};
  if (point.network.used) result["resolved"]["network"] = point.network.ToJson();
  result["metrics"] = metrics;
  const auto& measured = point.costs->measured;
  const auto& train = point.input.scenario.train;
  const bool same_length = train.steps > 0 && train.steps * train.grad_accum == measured.batches;
  if (SameConfiguration(point.input.scenario, point.costs->manifest) && same_length && measured.wall_s > 0) {
    double measured_tp = static_cast<double>(measured.samples) / measured.wall_s;
    double predicted_tp = metrics["train_throughput_samples_per_s"].get<double>();
    result["measured"] = {{"note", "the trace was captured with this configuration: prediction error against it"},
                          {"train_throughput_samples_per_s", Round9(measured_tp)},
                          {"train_throughput_error_pct", Round9(100.0 * (predicted_tp - measured_tp) / measured_tp)},
                          {"mean_data_wait_s", Round9(measured.mean_wait_s)}};
  }
  result["warnings"] = point.warnings;
  return result;
}

Result<nlohmann::json> SimulateScenario(const scenarios::Scenario& scenario, const std::string& timeline_path,
                                        CostCache* cache) {
  auto point = PreparePoint(scenario, cache);
  if (!point.ok()) return point.status();
  if (!timeline_path.empty()) {
    // A timeline shows every rank, so it turns rank folding off: refuse what cannot then fit before
    // anything runs, and say so where folding would apply.
    SimInput with_timeline = point->input;
    with_timeline.record_timeline = true;
    SIMREPLAY_RETURN_IF_ERROR(CheckSimulationFits(with_timeline));
    const RunConfig config = RunConfig::Resolve(point->input);
    if (PlanRankFolding(point->input, config, point->input.scenario.rank_folding).folded()) {
      point->warnings.push_back(fmt::format(
          "rank folding off: simulate records a timeline of every rank, so all {} nodes are simulated; "
          "`simreplay what-if` simulates this cluster through {} representative nodes (docs/performance.md, "
          "\"Rank folding\")",
          config.nodes, kRepresentativeNodes));
    }
  }
  auto results = RunIsolated(MakeJobs(*point, timeline_path), 2);
  return AssembleResult(*point, results[0], results[1]);
}

}  // namespace simreplay::sim
