// `simreplay validate` as a library call: plans and executes the real runs of an experiment (or reads
// the runs an earlier invocation recorded), reads what each measured, calibrates a model from the
// median-throughput run of each calibrating case (by running `simreplay calibrate` as a child),
// predicts every case from a model calibrated on another case, analyses, and writes
// OUT/validation.json and OUT/report.md (docs/validation-format.md). The CLI only parses flags.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "validation/analysis.h"
#include "validation/experiment_spec.h"
#include "validation/runner.h"

namespace simreplay::validation {

// The host screen around real runs and the CPU probe (validation/host_capacity.h): how a screen is
// taken, how long to wait between screens of a host under the bound, and how much waiting one
// validation may spend in all (on a host that stays degraded the runs then go ahead, are repeated once
// and are not scored: bounded time, honest result). Tests inject a screen; no timing in them.
struct HostScreenPolicy {
  std::function<HostCapacity()> screen = [] { return MeasureHostCapacity(0.1); };
  double wait_step_s = 5;
  double wait_budget_s = 120;
};

struct ValidateOptions {
  ExperimentSpec spec;    // loaded, with the command line's overrides applied
  std::string spec_path;  // for messages
  std::string out_dir;    // created if missing
  // Non-empty: re-analyse the runs recorded in ingest_dir/runs.json instead of running anything.
  std::string ingest_dir;
  RunEnvironment env;  // dataset_dir absolute, or empty when the spec's command needs none
  // The simreplay executable that calibrates (`SIMREPLAY calibrate TRACE --out MODEL`).
  std::string simreplay_executable;
  // Compare runs whose manifests differ in what matters (validation/run_manifests.h); recorded in
  // validation.json's environment.manifest_differences_allowed. Refused (InvalidArgument) otherwise.
  bool allow_manifest_diff = false;
  // Called after each real run with its 1-based position, the total and a one-line outcome; may be empty.
  std::function<void(size_t index, size_t total, const RunRecord& run, const std::string& outcome)> on_run;
  HostScreenPolicy host_screen;
};

struct ValidateOutcome {
  nlohmann::json document;  // validation.json as written
  std::vector<std::string> warnings;
};

// Errors: bad input (no dataset, missing capture package, unreadable run index) as InvalidArgument or
// NotFound; I/O errors writing OUT. A failed real run is not an error here: it is recorded, and the
// document's completeness check fails (validation.json "completeness").
Result<ValidateOutcome> RunValidation(const ValidateOptions& options);

// The stages RunValidation chains, exposed for tests.
// Real runs in PlanRuns order; runs.json is rewritten after each one.
Result<std::vector<RunRecord>> ExecuteRuns(const ValidateOptions& options);
// Metrics and trace facts of every successful measured run (paths relative to runs_base); what could
// not be read is a warning and is missing from the input (completeness then fails).
void ReadMeasurements(const std::vector<RunRecord>& runs, const std::string& runs_base, AnalysisInput* input,
                      std::vector<std::string>* warnings);
// The train run a case calibrates from: the median train throughput of its measured repetitions
// (the lower middle one for an even count; ties by execution order). nullptr when none succeeded.
const RunRecord* CalibrationRun(const std::vector<RunRecord>& runs, const AnalysisInput& input,
                                const std::string& case_name);
// Every successful measured train run of the case, the one CalibrationRun chooses first (the trace
// that replays), the others in execution order: calibrate pools the repetitions' cost level.
std::vector<const RunRecord*> CalibrationRuns(const std::vector<RunRecord>& runs, const AnalysisInput& input,
                                              const std::string& case_name);

}  // namespace simreplay::validation
