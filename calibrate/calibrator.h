// `simreplay calibrate`: one or more traces (captured, imported from Kineto, or both) and an optional
// storage probe -> the model file the simulator reads (docs/model-format.md), with each parameter's
// provenance and assumed flag, fit quality per component, the measured range, and a self-check that
// simulates each captured configuration and compares it with what was measured.
//
// Library code: no SimGrid here (calibrate/ may not depend on sim/). The self-check gets the simulator
// as a function (the CLI passes sim::SimulateScenario).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/contention.h"
#include "calibrate/trace_data.h"
#include "common/status.h"
#include "models/model_params.h"
#include "scenarios/scenario.h"

namespace simreplay::calibrate {

struct CalibrateOptions {
  std::vector<std::string> traces;  // the first one is the trace the model replays
  std::string probe_path;           // optional simreplay.probe/1 document
  // Optional simreplay.probe-cpu/1 document (simreplay_capture.probe_cpu): the measured contention
  // curve sets cpu.busy_core_slowdown and cpu.oversubscription_overhead (calibrate/cpu_probe.h).
  std::string cpu_probe_path;
  // Optional simreplay.probe-media/1 document (simreplay_capture.probe_media): each probed media's
  // decode/augment cost shape over image scales and clip lengths (calibrate/media_probe.h).
  std::string media_probe_path;
  std::string model_path;                 // where the model will be written ("trace" is made relative to it)
  std::string storage_mode = "recorded";  // storage.mode written to the model: recorded | model
  // cpu.worker_cost_scale written to the model: "intrinsic" (default) removes the contention the
  // capture ran under, so the simulator applies the predicted configuration's own; "as-captured" keeps
  // the slowdown from load outside the loader (predicts a machine as loaded as during the capture).
  // Identical when nothing else ran during the capture. docs/model-format.md, "Contention".
  std::string cpu_scale = "intrinsic";
  // cpu.busy_core_slowdown: < 0 estimates it from the first trace (calibrate/busy_cores.h); >= 0 sets it.
  double busy_core_slowdown = -1;
};

// One captured configuration the self-check replays.
struct CapturedRun {
  std::string trace;             // path as given
  nlohmann::json scenario;       // scenario JSON without "model" (see SelfCheck)
  double worker_cost_scale = 1;  // this trace's scale of the kind the model holds (--cpu-scale)
  ContentionEstimate contention;
  MeasuredSummary measured;
  std::string skip_reason;  // non-empty: cannot be self-checked (no batches, ...)
};

struct CalibrationResult {
  models::ModelParams model;  // model.extra holds fit_quality, provenance, formats, warnings, measured_range
  std::vector<CapturedRun> captured;
  std::vector<std::string> warnings;  // also in model.extra["warnings"]
};

// Reads every trace and the probe, then runs the stages of calibrate/stages.h in order. Errors:
// InvalidArgument/Corruption naming FILE[:LINE] for bad input (empty trace, nothing measured, contradictory fields);
// low-confidence fits are not errors but are flagged in fit_quality and listed in warnings.
Result<CalibrationResult> Calibrate(const CalibrateOptions& options);

// Simulates one scenario and returns result.json (sim::SimulateScenario in the CLI).
using SimulateFn = std::function<Result<nlohmann::json>(const scenarios::Scenario&)>;

// Runs each captured configuration through `simulate` with the calibrated model (written to a
// temporary file under `temp_dir`, with that trace's own worker_cost_scale of the --cpu-scale kind) and
// returns the "self_check" object: predicted vs measured throughput, GPU idle and mean data wait.
Result<nlohmann::json> SelfCheck(const CalibrationResult& result, const std::string& temp_dir,
                                 const SimulateFn& simulate);

// A plain-text table of a self_check object.
std::string FormatSelfCheckTable(const nlohmann::json& self_check);

}  // namespace simreplay::calibrate
