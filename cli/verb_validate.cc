// simreplay validate EXPERIMENT.json --out DIR [--reps N] [--warmup-runs N] [--data DIR] [--ingest DIR]
//   [--no-pipeline-runs] [--python PATH]: runs (or ingests) real A/B runs of the bench pipeline, calibrates
// from one case, predicts every case from a model calibrated on another, and writes DIR/validation.json
// (docs/validation-format.md) + DIR/report.md. Exit 4 when a requested check fails (thresholds in the
// spec, correctness of the delivered samples).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/cli_util.h"
#include "cli/verb_registry.h"
#include "common/atomic_file.h"
#include "common/json_fields.h"
#include "validation/analysis.h"
#include "validation/experiment_spec.h"
#include "validation/measurement.h"
#include "validation/predictor.h"
#include "validation/report_writer.h"
#include "validation/runner.h"

namespace simreplay::cli {
namespace {

namespace fs = std::filesystem;
using namespace simreplay::validation;  // NOLINT: a verb's .cc file, not a header

std::string UtcNow() {
  std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buffer;
}

Status WriteRunIndex(const std::string& out_dir, const std::vector<RunRecord>& runs) {
  nlohmann::json j = {{"schema", "simreplay.validation-runs/1"}, {"runs", nlohmann::json::array()}};
  for (const auto& r : runs) j["runs"].push_back(r.ToJson());
  return WriteFileAtomically(out_dir + "/runs.json", j.dump(1) + "\n");
}

Result<std::vector<RunRecord>> ReadRunIndex(const std::string& dir) {
  auto json = ReadJsonFile(dir + "/runs.json");
  if (!json.ok()) return json.status();
  if (!json->contains("runs") || !(*json)["runs"].is_array()) {
    return Status::InvalidArgument(dir + "/runs.json: expected an object with a 'runs' array");
  }
  std::vector<RunRecord> runs;
  for (size_t i = 0; i < (*json)["runs"].size(); ++i) {
    auto r = RunRecordFromJson((*json)["runs"][i], fmt::format("{}/runs.json: runs[{}]", dir, i));
    if (!r.ok()) return r.status();
    runs.push_back(std::move(*r));
  }
  return runs;
}

int64_t DatasetSamples(const std::string& dataset_dir) {
  auto json = ReadJsonFile(dataset_dir + "/dataset.json");
  if (!json.ok() || !json->contains("samples") || !(*json)["samples"].is_array()) return 0;
  return static_cast<int64_t>((*json)["samples"].size());
}

int RunValidate(int argc, char** argv) {
  CLI::App app{
      "Validate predictions against real runs: A/B runs of the bench pipeline (or any command that writes a\n"
      "capture trace and a bench-style summary), interleaved repetitions, bootstrap intervals, correctness of the\n"
      "delivered samples, predicted vs measured. Writes DIR/validation.json and DIR/report.md.\n"
      "The accelerator step is emulated (sleep) in every run and prediction."};
  app.name(argv[0]);
  std::string spec_path, out_dir, ingest_dir, data_dir, python = "/usr/bin/python3", capture_path;
  int reps = -1, warmup_runs = -1;
  bool no_pipeline = false;
  app.add_option("experiment", spec_path, "experiment spec JSON (docs/validation-format.md)")->required();
  app.add_option("--out", out_dir, "output directory (created if missing)")->required();
  app.add_option("--reps", reps, "measured repetitions per case and kind (overrides the spec; A/B default 5)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--warmup-runs", warmup_runs, "discarded runs per case before the measured ones (overrides the spec)")
      ->check(CLI::Range(0, 100));
  app.add_option("--data", data_dir, "bench dataset directory (make-dataset output; overrides the spec's 'dataset')");
  app.add_option("--ingest", ingest_dir, "re-analyse the runs recorded in DIR/runs.json instead of running anything");
  app.add_flag("--no-pipeline-runs", no_pipeline, "skip the pipeline-only runs");
  app.add_option("--python", python, "Python interpreter for the bench");
  app.add_option("--capture-path", capture_path,
                 "directory holding simreplay_capture (default: found next to this binary)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  const std::string verb = "simreplay validate";
  auto loaded = LoadExperimentSpec(spec_path);
  if (!loaded.ok()) return Fail(verb, loaded.status());
  ExperimentSpec spec = std::move(*loaded);
  if (reps > 0) spec.repetitions = reps;
  if (warmup_runs >= 0) spec.warmup_runs = warmup_runs;
  if (no_pipeline) spec.pipeline_only_runs = false;
  if (!data_dir.empty()) spec.dataset_dir = data_dir;
  Status s = MakeDirectories(out_dir + "/runs");
  if (s.ok()) s = MakeDirectories(out_dir + "/models");
  if (!s.ok()) return Fail(verb, s);

  RunEnvironment env;
  env.python = python;
  env.capture_path = capture_path.empty() ? FindCapturePath() : capture_path;
  env.dataset_dir = spec.dataset_dir.empty() ? "" : fs::absolute(spec.dataset_dir).lexically_normal().string();
  std::vector<std::string> warnings;

  // --- Real runs (or the runs of an earlier invocation).
  std::vector<RunRecord> runs;
  std::string runs_base = out_dir;  // directory the run paths are relative to
  if (!ingest_dir.empty()) {
    auto read = ReadRunIndex(ingest_dir);
    if (!read.ok()) return Fail(verb, read.status());
    runs = std::move(*read);
    runs_base = ingest_dir;
  } else {
    if (env.dataset_dir.empty() && spec.run.command.empty()) {
      return Fail(verb, Status::InvalidArgument(spec_path + ": no dataset: give 'dataset' in the spec or --data DIR"));
    }
    if (spec.run.command.empty() && !fs::exists(env.dataset_dir + "/dataset.json")) {
      return Fail(verb,
                  Status::NotFound(env.dataset_dir + "/dataset.json: not a bench dataset (run make-dataset first)"));
    }
    if (env.capture_path.empty()) {
      return Fail(verb,
                  Status::NotFound("simreplay_capture not found: pass --capture-path or set SIMREPLAY_CAPTURE_PATH"));
    }
    auto plan = PlanRuns(spec);
    const bool tty = StderrIsTty();
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
      rec.started_utc = UtcNow();
      rec.loadavg_before = LoadAverage1();
      auto outcome = RunChild(rec.command, env.capture_path, out_dir + "/" + rec.log, spec.run.timeout_s);
      rec.loadavg_after = LoadAverage1();
      if (!outcome.ok()) return Fail(verb, outcome.status());
      rec.exit_code = outcome->exit_code;
      rec.timed_out = outcome->timed_out;
      rec.wall_s = outcome->wall_s;
      runs.push_back(rec);
      s = WriteRunIndex(out_dir, runs);
      if (!s.ok()) return Fail(verb, s);
      std::string what = rec.exit_code != 0 ? fmt::format("FAILED (exit {}{}; see {})", rec.exit_code,
                                                          rec.timed_out ? ", timed out" : "", rec.log)
                                            : "ok";
      if (rec.exit_code == 0) {
        auto m = ReadRunMetrics(out_dir + "/" + rec.summary, p.kind, nullptr);
        if (m.ok()) {
          for (const auto& [k, v] : m->values) {
            if (k == kTrainThroughput || k == kPipelineThroughput) what = fmt::format("{:.1f} samples/s", v);
          }
        }
      }
      std::fprintf(stderr, "%s[%zu/%zu] %-28s %s (%.1f s, load %.2f)%s", tty ? "\r\033[K" : "", i + 1, plan.size(),
                   p.id.c_str(), what.c_str(), rec.wall_s, rec.loadavg_after, tty ? "" : "\n");
    }
    if (tty) std::fputc('\n', stderr);
  }

  // --- Measurements.
  AnalysisInput input;
  input.spec = &spec;
  input.runs = runs;
  for (const auto& run : runs) {
    if (run.exit_code != 0) {
      warnings.push_back(fmt::format("run {} failed (exit {}{}): left out; log {}", run.plan.id, run.exit_code,
                                     run.timed_out ? ", timed out" : "", run.log));
      continue;
    }
    if (run.plan.discarded) continue;
    const TraceFacts* facts = nullptr;
    if (run.plan.kind == "train") {
      auto f = ReadTraceFacts(runs_base + "/" + run.trace);
      if (!f.ok()) {
        warnings.push_back(fmt::format("run {}: trace unreadable: {}", run.plan.id, f.status().message()));
      } else {
        facts = &(input.facts[run.plan.id] = std::move(*f));
      }
    }
    auto m = ReadRunMetrics(runs_base + "/" + run.summary, run.plan.kind, facts);
    if (!m.ok()) {
      warnings.push_back(fmt::format("run {}: {}", run.plan.id, m.status().message()));
      continue;
    }
    input.metrics[run.plan.id] = std::move(*m);
  }

  // --- Calibration: the median-throughput train run of each calibrating case, through `simreplay calibrate`.
  std::map<std::string, std::string> model_of_case;
  for (const std::string& cal : {spec.calibrate_from, spec.calibrate_alternate}) {
    std::vector<std::pair<double, const RunRecord*>> candidates;
    for (const auto& run : runs) {
      if (run.plan.discarded || run.plan.case_name != cal || run.plan.kind != "train") continue;
      auto it = input.metrics.find(run.plan.id);
      if (it == input.metrics.end() || !input.facts.count(run.plan.id)) continue;
      candidates.push_back({it->second.values.at(kTrainThroughput), &run});
    }
    if (candidates.empty()) {
      warnings.push_back(fmt::format("case {}: no successful train run to calibrate from", cal));
      continue;
    }
    std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second->sequence < b.second->sequence;
    });
    const RunRecord* chosen = candidates[(candidates.size() - 1) / 2].second;
    std::string model_rel = "models/" + cal + ".json";
    std::string trace_abs = fs::absolute(runs_base + "/" + chosen->trace).lexically_normal().string();
    std::vector<std::string> args = {SelfExecutable(), "calibrate", trace_abs, "--out",
                                     fs::absolute(out_dir + "/" + model_rel).string()};
    auto outcome = RunChild(args, "", out_dir + "/models/" + cal + ".calibrate.log", 600);
    if (!outcome.ok() || outcome->exit_code != 0) {
      warnings.push_back(
          fmt::format("calibration from case {} failed ({}); see models/{}.calibrate.log", cal,
                      outcome.ok() ? fmt::format("exit {}", outcome->exit_code) : outcome.status().message(), cal));
      continue;
    }
    model_of_case[cal] = model_rel;
    nlohmann::json info = {{"run", chosen->plan.id},
                           {"trace", chosen->trace},
                           {"model", model_rel},
                           {"chosen_as", "median train throughput of the case's repetitions"}};
    auto model_json = ReadJsonFile(out_dir + "/" + model_rel);
    if (model_json.ok() && model_json->contains("self_check")) info["self_check"] = (*model_json)["self_check"];
    if (model_json.ok() && model_json->contains("warnings")) info["warnings"] = (*model_json)["warnings"];
    input.calibration[cal] = info;
  }

  // --- Predictions: every case from a model calibrated on another case.
  PredictOptions options;
  options.dataset_samples = env.dataset_dir.empty() ? 0 : DatasetSamples(env.dataset_dir);
  for (const auto& c : spec.cases) {
    std::string from = c.name == spec.calibrate_from ? spec.calibrate_alternate : spec.calibrate_from;
    auto model = model_of_case.find(from);
    if (model == model_of_case.end()) {
      input.prediction_errors[c.name] = fmt::format("no model calibrated from case {}", from);
      continue;
    }
    auto pred = PredictCase(spec, c, out_dir + "/" + model->second, options);
    if (!pred.ok()) {
      input.prediction_errors[c.name] = pred.status().message();
      warnings.push_back(fmt::format("case {}: prediction failed: {}", c.name, pred.status().message()));
      continue;
    }
    pred->model_path = model->second;
    pred->calibrated_from = from;
    input.predictions[c.name] = std::move(*pred);
  }

  input.environment = {{"python", env.python},
                       {"capture_path", env.capture_path},
                       {"dataset_dir", env.dataset_dir},
                       {"dataset_samples", options.dataset_samples},
                       {"runs_from", ingest_dir.empty() ? "this invocation" : "ingested"}};
  input.warnings = warnings;
  nlohmann::json doc = Analyze(input);
  s = WriteFileAtomically(out_dir + "/validation.json", doc.dump(1) + "\n");
  if (s.ok()) s = WriteFileAtomically(out_dir + "/report.md", RenderMarkdownReport(doc));
  if (!s.ok()) return Fail(verb, s);
  std::fputs(RenderSuiteTable(doc).c_str(), stdout);
  for (const auto& w : warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  std::printf("accelerator: emulated (every step a sleep; no GPU)\nwrote %s/validation.json and %s/report.md\n",
              out_dir.c_str(), out_dir.c_str());
  if (ChecksFailed(doc)) {
    std::fprintf(
        stderr, "%s: a requested check failed (%s)\n", verb.c_str(),
        !doc["correctness"].value("pass", false) ? "correctness of delivered samples" : "prediction-error thresholds");
    return kExitCheckFailed;
  }
  return kExitOk;
}

}  // namespace

SIMREPLAY_REGISTER_VERB("validate",
                        "A/B runs of real pipelines: measured (bootstrap CIs) vs predicted, report + CI thresholds",
                        RunValidate);

}  // namespace simreplay::cli
