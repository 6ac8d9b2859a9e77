#include "validation/orchestrator.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "common/atomic_file.h"
#include "common/json_fields.h"
#include "validation/measurement.h"
#include "validation/predictor.h"
#include "validation/report_writer.h"
#include "validation/run_manifests.h"
#include "validation/statistics.h"

namespace simreplay::validation {

namespace fs = std::filesystem;

namespace {

std::string UtcNow() {
  std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buffer;
}

Status MakeDirectories(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IoError(dir + ": cannot create directory: " + ec.message());
  return Status::Ok();
}

int64_t DatasetSamples(const std::string& dataset_dir) {
  auto json = ReadJsonFile(dataset_dir + "/dataset.json");
  if (!json.ok() || !json->contains("samples") || !(*json)["samples"].is_array()) return 0;
  return static_cast<int64_t>((*json)["samples"].size());
}

bool HostBelowBound(const HostCapacity& h) { return h.cores > 0 && h.delivered_share() < kMinDeliveredShare; }
// A window between two screens (MeanDeliveredShare) under the bound; an unscreened one (-1) never is.
bool WindowBelowBound(double share) { return share >= 0 && share < kMinDeliveredShare; }

// Screens the host, and while it delivers under the bound and `wait_budget_s` lasts, waits and
// screens again: a run started now would only be repeated.
HostCapacity ScreenHost(const HostScreenPolicy& policy, double* wait_budget_s) {
  HostCapacity h = policy.screen();
  while (HostBelowBound(h) && *wait_budget_s > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(policy.wait_step_s));
    *wait_budget_s -= policy.wait_step_s;
    h = policy.screen();
  }
  return h;
}

// Why a finished run is not to be scored as it stands: "steal", "host_capacity" or "" (scorable).
std::string NoiseReason(const RunRecord& rec) {
  if (rec.exit_code != 0 || rec.plan.discarded) return "";  // a warm-up run is not scored anyway
  if (rec.steal_fraction > kStealBound) return "steal";
  if (WindowBelowBound(rec.HostDeliveredShare())) return "host_capacity";
  return "";
}

std::string RunOutcome(const RunRecord& rec, const std::string& out_dir) {
  if (rec.exit_code != 0) {
    return fmt::format("FAILED (exit {}{}; see {})", rec.exit_code, rec.timed_out ? ", timed out" : "", rec.log);
  }
  std::string what = "ok";
  auto m = ReadRunMetrics(out_dir + "/" + rec.summary, rec.plan.kind, nullptr);
  if (m.ok()) {
    for (const auto& [k, v] : m->values) {
      if (k == kTrainThroughput || k == kPipelineThroughput) what = fmt::format("{:.1f} samples/s", v);
    }
  }
  return what;
}

// Calibrates a model from each calibrating case's median run (`simreplay calibrate` as a child, so a
// crash in calibration cannot take the validation down). Returns case -> model path relative to OUT.
std::map<std::string, std::string> CalibrateCases(const ValidateOptions& options, const std::vector<RunRecord>& runs,
                                                  const std::string& runs_base, const std::string& cpu_probe,
                                                  AnalysisInput* input, std::vector<std::string>* warnings) {
  const ExperimentSpec& spec = options.spec;
  const std::string& out_dir = options.out_dir;
  std::map<std::string, std::string> model_of_case;
  for (const std::string& cal : {spec.calibrate_from, spec.calibrate_alternate}) {
    const std::vector<const RunRecord*> repetitions = CalibrationRuns(runs, *input, cal);
    if (repetitions.empty()) {
      warnings->push_back(fmt::format("case {}: no successful train run to calibrate from", cal));
      continue;
    }
    const RunRecord* chosen = repetitions.front();
    const std::string model_rel = "models/" + cal + ".json";
    std::vector<std::string> args = {options.simreplay_executable, "calibrate"};
    nlohmann::json pooled = nlohmann::json::array();
    for (const RunRecord* run : repetitions) {
      args.push_back(fs::absolute(runs_base + "/" + run->trace).lexically_normal().string());
      pooled.push_back(run->plan.id);
    }
    args.push_back("--out");
    args.push_back(fs::absolute(out_dir + "/" + model_rel).string());
    if (!cpu_probe.empty()) {
      args.push_back("--cpu-probe");
      args.push_back(cpu_probe);
    }
    auto outcome = RunChild(args, "", out_dir + "/models/" + cal + ".calibrate.log", 600);
    if (!outcome.ok() || outcome->exit_code != 0) {
      warnings->push_back(fmt::format("calibration from case {} failed ({}); see models/{}.calibrate.log", cal,
                                      ChildFailure(outcome), cal));
      continue;
    }
    model_of_case[cal] = model_rel;
    nlohmann::json info = {{"run", chosen->plan.id},
                           {"trace", chosen->trace},
                           {"model", model_rel},
                           {"chosen_as", "median train throughput of the case's repetitions"},
                           {"repetitions", pooled}};
    if (!cpu_probe.empty()) info["cpu_probe"] = cpu_probe;
    auto model_json = ReadJsonFile(out_dir + "/" + model_rel);
    if (model_json.ok() && model_json->contains("self_check")) info["self_check"] = (*model_json)["self_check"];
    if (model_json.ok() && model_json->contains("warnings")) info["warnings"] = (*model_json)["warnings"];
    input->calibration[cal] = info;
  }
  return model_of_case;
}

// Where the CPU probe's dataset is: the cases' own, or OUT/probe-data when the spec asks for another.
std::string ProbeDataDir(const ValidateOptions& options) {
  if (options.spec.cpu_probe.dataset_args.empty()) return options.env.dataset_dir;
  return fs::absolute(options.out_dir + "/probe-data").lexically_normal().string();
}

// The dataset the CPU probe replays: the cases' own, or (calibration.cpu_probe.dataset_args) another
// bench dataset built here into OUT/probe-data, so that the probe measures no case's configuration.
Result<std::string> ProbeDataset(const ValidateOptions& options) {
  const auto& dataset_args = options.spec.cpu_probe.dataset_args;
  const std::string dir = ProbeDataDir(options);
  if (dataset_args.empty()) return dir;
  std::error_code ec;
  fs::remove_all(dir, ec);
  std::vector<std::string> args = {options.env.python, "-m", "simreplay_capture.bench", "make-dataset", "--out", dir};
  for (const std::string& a : dataset_args) args.push_back(a == "{data}" ? options.env.dataset_dir : a);
  auto outcome = RunChild(args, options.env.capture_path, options.out_dir + "/probe-data.log", 600);
  if (!outcome.ok() || outcome->exit_code != 0 || !fs::exists(dir + "/dataset.json")) {
    return Status::Internal(
        fmt::format("building the probe's dataset failed ({}); see probe-data.log", ChildFailure(outcome)));
  }
  return dir;
}

// The CPU contention probe of the spec's calibration.cpu_probe: run here (after the real runs, so the
// page cache is as warm as in them) into OUT/probe-cpu.json, or reused from the ingested directory.
// Returns its absolute path, or "" when not asked for or when it failed (a warning says so: the models
// then fall back to the assumed curve, which the calibrate logs state).
std::string CpuProbeFor(const ValidateOptions& options, std::vector<std::string>* warnings) {
  const ExperimentSpec& spec = options.spec;
  if (!spec.cpu_probe.enabled) return "";
  if (!options.ingest_dir.empty()) {
    const std::string recorded = options.ingest_dir + "/probe-cpu.json";
    if (fs::exists(recorded)) return fs::absolute(recorded).lexically_normal().string();
    warnings->push_back("calibration.cpu_probe: no probe-cpu.json in the ingested directory: contention curve assumed");
    return "";
  }
  const std::string path = fs::absolute(options.out_dir + "/probe-cpu.json").lexically_normal().string();
  fs::remove(path);
  auto probe_data = ProbeDataset(options);
  if (!probe_data.ok()) {
    warnings->push_back(fmt::format("calibration.cpu_probe: {}: contention curve assumed", probe_data.status().message()));
    return "";
  }
  const BenchConfig& base = spec.base;
  std::vector<std::string> args = {options.env.python,
                                   "-m",
                                   "simreplay_capture.probe_cpu",
                                   "--bench-data",
                                   *probe_data,
                                   "--format",
                                   base.format,
                                   "--image-size",
                                   std::to_string(spec.run.image_size),
                                   "--frames",
                                   std::to_string(spec.run.frames),
                                   "--batch-size",
                                   std::to_string(base.batch_size),
                                   "--prefetch-factor",
                                   std::to_string(base.prefetch_factor),
                                   "--seed",
                                   std::to_string(spec.run.seed),
                                   "--seconds-per-point",
                                   fmt::format("{}", spec.cpu_probe.seconds_per_point),
                                   "--rounds",
                                   std::to_string(spec.cpu_probe.rounds),
                                   "--max-total-s",
                                   fmt::format("{}", spec.cpu_probe.max_total_s),
                                   "--max-workers",
                                   std::to_string(spec.cpu_probe.max_workers),
                                   "--out",
                                   path};
  // Screened like a run: a probe taken while the host delivered under the bound is repeated once, and
  // a warning says so when the repeat is under it too (the curve is then used, flagged).
  double wait_budget_s = options.host_screen.wait_budget_s / 5;
  Result<ChildOutcome> outcome = Status::Internal("not run");
  double share = -1;
  for (int attempt = 1; attempt <= 2; ++attempt) {
    const HostCapacity before = ScreenHost(options.host_screen, &wait_budget_s);
    outcome =
        RunChild(args, options.env.capture_path, options.out_dir + "/probe-cpu.log", spec.cpu_probe.max_total_s + 120);
    const HostCapacity after = options.host_screen.screen();
    share = MeanDeliveredShare(before, after);
    if (!outcome.ok() || outcome->exit_code != 0 || !WindowBelowBound(share)) break;
  }
  if (WindowBelowBound(share)) {
    warnings->push_back(fmt::format("calibration.cpu_probe: the host delivered {:.0f}% of its cores around the probe "
                                    "and its repeat (bound {:.0f}%): its curve was measured on a degraded host",
                                    100 * share, 100 * kMinDeliveredShare));
  }
  if (!outcome.ok() || outcome->exit_code != 0 || !fs::exists(path)) {
    warnings->push_back(
        fmt::format("calibration.cpu_probe failed ({}); see probe-cpu.log: contention curve assumed",
                    ChildFailure(outcome)));
    return "";
  }
  return path;
}

// Which dataset and worker counts the probe at `probe_path` measured (its points[].workers).
CpuProbeProvenance ReadProbeProvenance(const ValidateOptions& options, const std::string& probe_path) {
  CpuProbeProvenance p;
  p.used = true;
  p.other_dataset = !options.spec.cpu_probe.dataset_args.empty();
  p.dataset = ProbeDataDir(options);
  auto json = ReadJsonFile(probe_path);
  if (json.ok() && json->contains("points") && (*json)["points"].is_array()) {
    for (const auto& point : (*json)["points"]) {
      if (!point.contains("workers") || !point["workers"].is_number_integer()) continue;
      const int k = point["workers"].get<int>();
      if (std::find(p.workers.begin(), p.workers.end(), k) == p.workers.end()) p.workers.push_back(k);
    }
  }
  std::sort(p.workers.begin(), p.workers.end());
  return p;
}

// Predicts every case from the model of the case PredictedFrom names.
void PredictCases(const ValidateOptions& options, const std::map<std::string, std::string>& model_of_case,
                  const PredictOptions& predict_options, AnalysisInput* input, std::vector<std::string>* warnings) {
  const ExperimentSpec& spec = options.spec;
  for (const auto& c : spec.cases) {
    const std::string& from = PredictedFrom(spec, c.name);
    auto model = model_of_case.find(from);
    if (model == model_of_case.end()) {
      input->prediction_errors[c.name] = fmt::format("no model calibrated from case {}", from);
      continue;
    }
    auto pred = PredictCase(spec, c, options.out_dir + "/" + model->second, predict_options);
    if (!pred.ok()) {
      input->prediction_errors[c.name] = pred.status().message();
      warnings->push_back(fmt::format("case {}: prediction failed: {}", c.name, pred.status().message()));
      continue;
    }
    pred->model_path = model->second;
    pred->calibrated_from = from;
    input->predictions[c.name] = std::move(*pred);
  }
}

}  // namespace

Result<std::vector<RunRecord>> ExecuteRuns(const ValidateOptions& options) {
  const ExperimentSpec& spec = options.spec;
  const RunEnvironment& env = options.env;
  const std::string& out_dir = options.out_dir;
  if (env.dataset_dir.empty() && spec.run.command.empty()) {
    return Status::InvalidArgument(options.spec_path + ": no dataset: give 'dataset' in the spec or --data DIR");
  }
  if (spec.run.command.empty() && !fs::exists(env.dataset_dir + "/dataset.json")) {
    return Status::NotFound(env.dataset_dir + "/dataset.json: not a bench dataset (run make-dataset first)");
  }
  if (spec.run.command.empty() && env.capture_path.empty()) {
    return Status::NotFound("simreplay_capture not found: pass --capture-path or set SIMREPLAY_CAPTURE_PATH");
  }
  std::vector<RunRecord> runs;
  const auto plan = PlanRuns(spec);
  double wait_budget_s = options.host_screen.wait_budget_s;
  HostCapacity screen = ScreenHost(options.host_screen, &wait_budget_s);
  for (size_t i = 0; i < plan.size(); ++i) {
    const auto& p = plan[i];
    const ExperimentCase* c = FindCase(spec, p.case_name);
    RunRecord rec;
    rec.plan = p;
    rec.sequence = static_cast<int>(i);
    rec.trace = "runs/" + p.id + ".jsonl.gz";
    rec.summary = "runs/" + p.id + ".summary.json";
    rec.log = "runs/" + p.id + ".log";
    fs::remove(out_dir + "/" + rec.trace);
    fs::remove(out_dir + "/" + rec.summary);
    rec.command = BuildCommand(spec, *c, p, env, fs::absolute(out_dir + "/" + rec.trace).string(),
                               fs::absolute(out_dir + "/" + rec.summary).string());
    // A run under more stolen CPU than kStealBound, or on a host delivering less than kMinDeliveredShare
    // of its cores, is repeated once; still over: recorded, not scored.
    for (rec.attempts = 1;; ++rec.attempts) {
      if (HostBelowBound(screen) || rec.attempts > 1) screen = ScreenHost(options.host_screen, &wait_budget_s);
      rec.host_before = screen;
      rec.started_utc = UtcNow();
      rec.loadavg_before = LoadAverage1();
      rec.cpu_mhz_before = MeanCpuMhz();
      const CpuTimes before = ReadCpuTimes();
      auto outcome = RunChild(rec.command, env.capture_path, out_dir + "/" + rec.log, spec.run.timeout_s);
      rec.steal_fraction = StealFraction(before, ReadCpuTimes());
      rec.loadavg_after = LoadAverage1();
      rec.cpu_mhz_after = MeanCpuMhz();
      if (!outcome.ok()) return outcome.status();
      rec.exit_code = outcome->exit_code;
      rec.timed_out = outcome->timed_out;
      rec.wall_s = outcome->wall_s;
      // The screen after this run is the one before the next.
      screen = rec.host_after = options.host_screen.screen();
      rec.noise_reason = NoiseReason(rec);
      rec.over_noise_bound = !rec.noise_reason.empty();
      if (!rec.over_noise_bound || rec.attempts == 2) break;
    }
    runs.push_back(rec);
    SIMREPLAY_RETURN_IF_ERROR(WriteRunIndex(out_dir, runs));
    if (options.on_run) options.on_run(i + 1, plan.size(), rec, RunOutcome(rec, out_dir));
  }
  return runs;
}

void ReadMeasurements(const std::vector<RunRecord>& runs, const std::string& runs_base, AnalysisInput* input,
                      std::vector<std::string>* warnings) {
  for (const auto& run : runs) {
    if (run.exit_code != 0) {
      warnings->push_back(fmt::format("run {} failed (exit {}{}): left out; log {}", run.plan.id, run.exit_code,
                                      run.timed_out ? ", timed out" : "", run.log));
      continue;
    }
    if (run.plan.discarded) continue;
    if (run.over_noise_bound) {
      if (run.noise_reason == "host_capacity") {
        warnings->push_back(fmt::format("run {}: the host delivered {:.0f}% of its {} cores around it and its repeat "
                                        "(bound {:.0f}%): not scored",
                                        run.plan.id, 100 * run.HostDeliveredShare(), run.host_after.cores,
                                        100 * kMinDeliveredShare));
      } else {
        warnings->push_back(fmt::format("run {}: {:.1f}% of the host's CPU was stolen during it and its repeat "
                                        "(bound {:.0f}%): not scored",
                                        run.plan.id, 100 * run.steal_fraction, 100 * kStealBound));
      }
      continue;
    }
    const TraceFacts* facts = nullptr;
    if (run.plan.kind == "train") {
      auto f = ReadTraceFacts(runs_base + "/" + run.trace);
      if (!f.ok()) {
        warnings->push_back(fmt::format("run {}: trace unreadable: {}", run.plan.id, f.status().message()));
      } else {
        facts = &(input->facts[run.plan.id] = std::move(*f));
      }
    }
    auto m = ReadRunMetrics(runs_base + "/" + run.summary, run.plan.kind, facts);
    if (!m.ok()) {
      warnings->push_back(fmt::format("run {}: {}", run.plan.id, m.status().message()));
      continue;
    }
    input->metrics[run.plan.id] = std::move(*m);
  }
}

namespace {

// The measured train throughput of a successful, read train run of the case; nullptr otherwise.
const double* MeasuredTrainThroughput(const RunRecord& run, const AnalysisInput& input, const std::string& case_name) {
  if (run.plan.discarded || run.plan.case_name != case_name || run.plan.kind != "train") return nullptr;
  auto it = input.metrics.find(run.plan.id);
  if (it == input.metrics.end() || !input.facts.count(run.plan.id)) return nullptr;
  auto tp = it->second.values.find(kTrainThroughput);
  return tp == it->second.values.end() ? nullptr : &tp->second;
}

}  // namespace

const RunRecord* CalibrationRun(const std::vector<RunRecord>& runs, const AnalysisInput& input,
                                const std::string& case_name) {
  std::vector<std::pair<double, const RunRecord*>> candidates;
  for (const auto& run : runs) {
    if (const double* tp = MeasuredTrainThroughput(run, input, case_name)) candidates.push_back({*tp, &run});
  }
  if (candidates.empty()) return nullptr;
  std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second->sequence < b.second->sequence;
  });
  return candidates[(candidates.size() - 1) / 2].second;
}

std::vector<const RunRecord*> CalibrationRuns(const std::vector<RunRecord>& runs, const AnalysisInput& input,
                                              const std::string& case_name) {
  const RunRecord* chosen = CalibrationRun(runs, input, case_name);
  if (chosen == nullptr) return {};
  std::vector<const RunRecord*> out = {chosen};
  for (const auto& run : runs) {
    if (&run != chosen && MeasuredTrainThroughput(run, input, case_name) != nullptr) out.push_back(&run);
  }
  return out;
}

Result<ValidateOutcome> RunValidation(const ValidateOptions& options) {
  const ExperimentSpec& spec = options.spec;
  const std::string& out_dir = options.out_dir;
  SIMREPLAY_RETURN_IF_ERROR(MakeDirectories(out_dir + "/runs"));
  SIMREPLAY_RETURN_IF_ERROR(MakeDirectories(out_dir + "/models"));
  ValidateOutcome outcome;

  std::vector<RunRecord> runs;
  std::string runs_base = out_dir;  // directory the run paths are relative to
  if (!options.ingest_dir.empty()) {
    auto read = ReadRunIndex(options.ingest_dir);
    if (!read.ok()) return read.status();
    runs = std::move(*read);
    runs_base = options.ingest_dir;
  } else {
    auto executed = ExecuteRuns(options);
    if (!executed.ok()) return executed.status();
    runs = std::move(*executed);
  }

  AnalysisInput input;
  input.spec = &spec;
  input.runs = runs;
  ReadMeasurements(runs, runs_base, &input, &outcome.warnings);
  // Expensive page faults make each configuration's churn its own, which the model takes from the
  // captured one (docs/modelling.md, "Page-fault churn"): say so beside the numbers (the median over the
  // runs' screens).
  const std::vector<double> fault_us = ScreenedFaultCostsUs(runs);
  if (!fault_us.empty()) {
    HostCapacity typical;
    typical.fresh_page_touch_us = Median(fault_us);  // as validation.json's noise reports it
    const std::string hint = FaultCostHint(typical);
    if (!hint.empty()) outcome.warnings.push_back("host screen: " + hint);
  }
  const std::vector<std::string> manifest_differences = RunManifestDifferences(runs, input.facts);
  if (!manifest_differences.empty() && !options.allow_manifest_diff) {
    return Status::InvalidArgument(fmt::format(
        "{}/runs.json: {} run(s) differ from the others in what matters ({}{}): they cannot be compared (simreplay "
        "diff-manifest names every difference; --allow-manifest-diff compares them anyway, recorded in "
        "validation.json)",
        runs_base, manifest_differences.size(), manifest_differences.front(),
        manifest_differences.size() > 1 ? "; ..." : ""));
  }
  const std::string cpu_probe = CpuProbeFor(options, &outcome.warnings);
  const auto model_of_case = CalibrateCases(options, runs, runs_base, cpu_probe, &input, &outcome.warnings);
  PredictOptions predict_options;
  predict_options.dataset_samples = options.env.dataset_dir.empty() ? 0 : DatasetSamples(options.env.dataset_dir);
  PredictCases(options, model_of_case, predict_options, &input, &outcome.warnings);

  input.environment = {{"python", options.env.python},
                       {"capture_path", options.env.capture_path},
                       {"dataset_dir", options.env.dataset_dir},
                       {"dataset_samples", predict_options.dataset_samples},
                       {"runs_from", options.ingest_dir.empty() ? "this invocation" : "ingested"}};
  if (!cpu_probe.empty()) {
    input.environment["cpu_probe"] = cpu_probe;
    input.cpu_probe = ReadProbeProvenance(options, cpu_probe);
    input.environment["cpu_probe_dataset"] = input.cpu_probe.dataset;
    input.environment["cpu_probe_workers"] = input.cpu_probe.workers;
  }
  if (!manifest_differences.empty()) input.environment["manifest_differences_allowed"] = manifest_differences;
  input.warnings = outcome.warnings;
  outcome.document = Analyze(input);
  SIMREPLAY_RETURN_IF_ERROR(WriteFileAtomically(out_dir + "/validation.json", outcome.document.dump(1) + "\n"));
  SIMREPLAY_RETURN_IF_ERROR(WriteFileAtomically(out_dir + "/report.md", RenderMarkdownReport(outcome.document)));
  return outcome;
}

}  // namespace simreplay::validation
