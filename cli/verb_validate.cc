// simreplay validate EXPERIMENT.json --out DIR [--reps N] [--warmup-runs N] [--data DIR] [--ingest DIR]
//   [--no-pipeline-runs] [--python PATH]: runs (or ingests) real A/B runs of the bench pipeline, calibrates
// from one case, predicts every case from a model calibrated on another, and writes DIR/validation.json
// (docs/validation-format.md) + DIR/report.md. Exit 4 when a requested check fails (thresholds in the
// spec, correctness of the delivered samples, completeness of the runs). The work is
// validation/orchestrator.h; this file parses flags and prints.
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/cli_util.h"
#include "cli/verb_registry.h"
#include "common/json_fields.h"
#include "validation/analysis.h"
#include "validation/experiment_spec.h"
#include "validation/orchestrator.h"
#include "validation/report_writer.h"
#include "validation/runner.h"

namespace simreplay::cli {
namespace {

namespace fs = std::filesystem;

// A multi-node suite (schema simreplay.multinode-suite/1, docs/validation.md "Multi-node cases"): the
// namespaces, shaped NICs and torchrun ranks are driven by validation/suite/multinode.py, which validate
// runs with the same options (its output on this terminal) and whose verdict it returns: 0 pass, 4 a
// gate or correctness check failed, 77 skipped (not root, as ctest's SKIP_RETURN_CODE), 1 otherwise.
constexpr int kExitSkippedNotRoot = 77;
int RunMultiNodeSuite(const std::string& verb, const std::string& spec_path, const std::string& out_dir,
                      const std::string& ingest_dir, const std::string& data_dir, const std::string& python,
                      const std::string& capture_path, int reps) {
  const char* env = std::getenv("SIMREPLAY_MULTINODE_SCRIPT");
  const std::string script = env != nullptr && *env != '\0'
                                 ? std::string(env)
                                 : (fs::path(capture_path).parent_path() / "validation" / "suite" / "multinode.py").string();
  if (capture_path.empty() || !fs::exists(script)) {
    return Fail(verb, Status::NotFound("the multi-node suite driver validation/suite/multinode.py was not found (set "
                                       "SIMREPLAY_MULTINODE_SCRIPT or --capture-path)"));
  }
  if (!ingest_dir.empty() && fs::absolute(ingest_dir).lexically_normal() != fs::absolute(out_dir).lexically_normal()) {
    std::fprintf(stderr, "%s: a multi-node suite re-analyses the runs in --out: give --ingest the same directory\n",
                 verb.c_str());
    return kExitUsage;
  }
  std::vector<std::string> args = {python, script, "--spec", fs::absolute(spec_path).string(), "--out", out_dir,
                                   "--bin", validation::SelfExecutable()};
  if (reps > 0) args.insert(args.end(), {"--reps", std::to_string(reps)});
  if (!data_dir.empty()) args.insert(args.end(), {"--data", data_dir});
  if (!ingest_dir.empty()) args.push_back("--ingest");
  auto run = RunInTerminal(args);
  if (!run.ok()) return Fail(verb, run.status());
  const int code = *run;
  if (code == 0 || code == kExitCheckFailed) return code;
  if (code == kExitSkippedNotRoot) {
    std::fprintf(stderr, "%s: the multi-node suite needs root (network namespaces, tc): skipped (exit 77)\n",
                 verb.c_str());
    return code;
  }
  std::fprintf(stderr, "%s: the multi-node suite failed (exit %d)\n", verb.c_str(), code);
  return kExitFailure;
}

bool IsMultiNodeSuite(const std::string& spec_path) {
  auto json = ReadJsonFile(spec_path);
  return json.ok() && json->is_object() && json->value("schema", std::string()) == "simreplay.multinode-suite/1";
}

int RunValidate(int argc, char** argv) {
  CLI::App app{
      "Validate predictions against real runs: A/B runs of the bench pipeline (or any command that writes a\n"
      "capture trace and a bench-style summary), interleaved repetitions, bootstrap intervals, correctness of the\n"
      "delivered samples, predicted vs measured. Writes DIR/validation.json and DIR/report.md.\n"
      "A multi-node suite spec (simreplay.multinode-suite/1) runs real DDP ranks across network namespaces\n"
      "(validation/suite/multinode.py, as root): DIR/multinode.json and DIR/report.md.\n"
      "The bench's step is emulated (a sleep) unless the spec's run.command runs it on a GPU; the report's\n"
      "accelerator label says which, from the traces."};
  app.name(argv[0]);
  std::string spec_path, out_dir, ingest_dir, data_dir, python = "/usr/bin/python3", capture_path;
  int reps = -1, warmup_runs = -1;
  bool no_pipeline = false, allow_manifest_diff = false;
  app.add_option("experiment", spec_path, "experiment spec JSON (docs/validation-format.md)")->required();
  app.add_option("--out", out_dir, "output directory (created if missing)")->required();
  app.add_option("--reps", reps, "measured repetitions per case and kind (overrides the spec; A/B default 5)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--warmup-runs", warmup_runs, "discarded runs per case before the measured ones (overrides the spec)")
      ->check(CLI::Range(0, 100));
  app.add_option("--data", data_dir, "bench dataset directory (make-dataset output; overrides the spec's 'dataset')");
  app.add_option("--ingest", ingest_dir, "re-analyse the runs recorded in DIR/runs.json instead of running anything");
  app.add_flag("--no-pipeline-runs", no_pipeline, "skip the pipeline-only runs");
  bool no_host_screen = false;
  app.add_flag("--no-host-screen", no_host_screen,
               "do not screen the host's delivered cores around each run (runs.json records none; nothing is "
               "repeated for it): for tests, and for one-core hosts where the screen cannot see anything");
  app.add_flag("--allow-manifest-diff", allow_manifest_diff,
               "compare runs whose trace manifests differ in what matters (docs/manifest.md; refused otherwise; "
               "recorded in validation.json's environment)");
  app.add_option("--python", python, "Python interpreter for the bench");
  app.add_option("--capture-path", capture_path,
                 "directory holding simreplay_capture (default: found next to this binary)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  const std::string verb = "simreplay validate";
  if (IsMultiNodeSuite(spec_path)) {
    return RunMultiNodeSuite(verb, spec_path, out_dir, ingest_dir, data_dir, python,
                             capture_path.empty() ? validation::FindCapturePath() : capture_path, reps);
  }
  auto loaded = validation::LoadExperimentSpec(spec_path);
  if (!loaded.ok()) return Fail(verb, loaded.status());
  validation::ValidateOptions options;
  options.spec = std::move(*loaded);
  if (reps > 0) options.spec.repetitions = reps;
  if (warmup_runs >= 0) options.spec.warmup_runs = warmup_runs;
  if (no_pipeline) options.spec.pipeline_only_runs = false;
  if (!data_dir.empty()) options.spec.dataset_dir = data_dir;
  options.spec_path = spec_path;
  options.out_dir = out_dir;
  options.ingest_dir = ingest_dir;
  options.allow_manifest_diff = allow_manifest_diff;
  options.env.python = python;
  options.env.capture_path = capture_path.empty() ? validation::FindCapturePath() : capture_path;
  options.env.dataset_dir =
      options.spec.dataset_dir.empty() ? "" : fs::absolute(options.spec.dataset_dir).lexically_normal().string();
  options.simreplay_executable = validation::SelfExecutable();
  if (no_host_screen) options.host_screen.screen = [] { return validation::HostCapacity{}; };
  const bool tty = StderrIsTty();
  options.on_run = [tty](size_t i, size_t total, const validation::RunRecord& rec, const std::string& what) {
    const std::string host = rec.host_after.cores > 0
                                 ? fmt::format(", host {:.2f}/{} cores", rec.HostDeliveredShare() * rec.host_after.cores,
                                               rec.host_after.cores)
                                 : "";
    const std::string noise = rec.attempts > 1 ? fmt::format(", {} attempts", rec.attempts) : "";
    std::fprintf(stderr, "%s[%zu/%zu] %-28s %s (%.1f s, load %.2f%s%s)%s", tty ? "\r\033[K" : "", i, total,
                 rec.plan.id.c_str(), what.c_str(), rec.wall_s, rec.loadavg_after, host.c_str(), noise.c_str(),
                 tty ? "" : "\n");
    if (tty && i == total) std::fputc('\n', stderr);
  };

  auto outcome = validation::RunValidation(options);
  if (!outcome.ok()) return Fail(verb, outcome.status());
  const nlohmann::json& doc = outcome->document;
  std::fputs(validation::RenderSuiteTable(doc).c_str(), stdout);
  for (const auto& w : outcome->warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  std::printf("accelerator: %s (%s)\nwrote %s/validation.json and %s/report.md\n",
              doc.value("accelerator", "emulated").c_str(), doc.value("accelerator_note", "").c_str(), out_dir.c_str(),
              out_dir.c_str());
  if (validation::ChecksFailed(doc)) {
    std::fprintf(stderr, "%s: a requested check failed (%s)\n", verb.c_str(), validation::FailedChecks(doc).c_str());
    return kExitCheckFailed;
  }
  return kExitOk;
}

}  // namespace

SIMREPLAY_REGISTER_VERB("validate",
                        "A/B runs of real pipelines: measured (bootstrap CIs) vs predicted, report + CI thresholds",
                        RunValidate);

}  // namespace simreplay::cli
