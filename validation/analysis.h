// Turns the measurements of an experiment and the simulator's predictions into validation.json
// (docs/validation-format.md, schema "simreplay.validation/1"): per-case medians with seeded bootstrap
// intervals, predicted vs measured errors, ranking agreement, correctness checks, A/B gains with
// deployment and rollback checks, observed bottlenecks (measured) kept apart from hypotheses (the
// simulator's verdicts), and the CI thresholds. A pure function of its input: the same measurements
// give a byte-identical document.
#pragma once

#include <algorithm>

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "validation/experiment_spec.h"
#include "validation/measurement.h"
#include "validation/predictor.h"
#include "validation/runner.h"

namespace simreplay::validation {

inline constexpr const char* kValidationSchema = "simreplay.validation/1";

// What the CPU contention probe measured, so every case can say whether its prediction used a
// measurement of its own configuration (a probe of the cases' own dataset at its worker count).
struct CpuProbeProvenance {
  bool used = false;
  bool other_dataset = false;  // calibration.cpu_probe.dataset_args: another bench dataset
  std::string dataset;         // the directory the probe replayed
  std::vector<int> workers;    // the worker counts it measured
  bool InSample(int num_workers) const {
    return used && !other_dataset && std::find(workers.begin(), workers.end(), num_workers) != workers.end();
  }
};

struct AnalysisInput {
  const ExperimentSpec* spec = nullptr;
  std::vector<RunRecord> runs;                            // every executed run, warm-up included
  std::map<std::string, RunMetrics> metrics;              // by run id (measured runs that succeeded)
  std::map<std::string, TraceFacts> facts;                // by run id (train runs whose trace was read)
  std::map<std::string, Prediction> predictions;          // by case name
  std::map<std::string, std::string> prediction_errors;   // case -> why it could not be predicted
  nlohmann::json calibration = nlohmann::json::object();  // case -> {trace, model, self_check}
  nlohmann::json environment = nlohmann::json::object();  // python, capture path, dataset, data volume
  CpuProbeProvenance cpu_probe;
  std::vector<std::string> warnings;
};

nlohmann::json Analyze(const AnalysisInput& input);

// Relative error in % of `predicted` against `measured` (fractions: difference in percentage points).
double PredictionError(const std::string& metric, double predicted, double measured);

// True when validation.json says a requested check failed (thresholds when enabled, correctness).
bool ChecksFailed(const nlohmann::json& validation);
// Which requested checks failed, for the one-line message of the CLI ("" when none).
std::string FailedChecks(const nlohmann::json& validation);

}  // namespace simreplay::validation
