// The calibrator's stages. Calibrate (calibrate/calibrator.h) reads the traces and the probe, then runs
// CalibrationStages() in order; each stage fits one component of the model from the traces, records
// each parameter's provenance, its fit quality under draft->quality[<component>], and any warnings.
//
// Adding a component (a network fit, say): write `Status FitX(const CalibrationInput&,
// CalibrationDraft*)` in calibrate/x_stage.cc (or its own header), put a row in the table in
// calibrate/stages.cc before "formats", and test it on synthetic TraceData (tests/calibrate/).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/busy_cores.h"
#include "calibrate/contention.h"
#include "calibrate/cpu_probe.h"
#include "calibrate/media_probe.h"
#include "calibrate/storage_probe.h"
#include "calibrate/trace_data.h"
#include "common/status.h"
#include "models/format_model.h"
#include "models/model_params.h"

namespace simreplay::calibrate {

struct CalibrateOptions;

// What every stage reads. traces.front() is the primary trace (the one the model replays).
struct CalibrationInput {
  const CalibrateOptions* options = nullptr;
  std::vector<TraceData> traces;
  std::optional<ProbeDocument> probe;  // --probe, read by ReadProbeFile
  std::optional<CpuProbe> cpu_probe;   // --cpu-probe, read by ReadCpuProbeFile
  std::optional<MediaProbe> media_probe;  // --media-probe, read by ReadMediaProbeFile
  const TraceData& primary() const { return traces.front(); }
};

// What the stages write, and what later stages read from earlier ones.
struct CalibrationDraft {
  models::ModelParams model;
  nlohmann::json quality = nlohmann::json::object();  // component -> fit quality (model extra.fit_quality)
  std::vector<std::string> warnings;
  // cpu: per trace, in trace order. The costs stage divides recorded times by intrinsic_scale.
  std::vector<ContentionEstimate> contention;
  std::vector<BusyCoreEstimate> busy_cores;
  // cpu: per trace, how much contention its cpu_ns contains (the busy-core slowdown its threads ran
  // under, other processes' included for the intrinsic scale): the gpu stage takes it out of the loop
  // thread's host CPU too, since the simulator applies the slowdown of the configuration it predicts.
  std::vector<double> cpu_ns_inflation;
  bool as_captured = false;  // --cpu-scale as-captured
  // costs: per media format, the stage regressions (written under extra.formats.media).
  nlohmann::json media = nlohmann::json::object();
  // storage: the container formats, with the captured container's read cost fitted.
  models::FormatParams formats;
  // gpu: true when the step time was fitted over several batch sizes.
  bool gpu_batch_size_fitted = false;
};

using StageFn = Status (*)(const CalibrationInput&, CalibrationDraft*);
struct CalibrationStage {
  std::string_view name;
  StageFn fit;
};

// cpu (contention, scale, main loop, worker lifecycle, collate, pin), costs, storage, memory, pcie,
// gpu, collectives, formats (formats, measured range and provenance in model.extra).
const std::vector<CalibrationStage>& CalibrationStages();

Status FitCpu(const CalibrationInput& in, CalibrationDraft* draft);
Status FitCosts(const CalibrationInput& in, CalibrationDraft* draft);
// media: captured shapes and bytes per pixel per media format, and with --media-probe the decode/augment
// fits reshaped by the probe (calibrate/media_stage.cc, calibrate/media_probe.h).
Status DescribeMediaShapes(const CalibrationInput& in, CalibrationDraft* draft);
Status FitStorage(const CalibrationInput& in, CalibrationDraft* draft);
Status FitMemory(const CalibrationInput& in, CalibrationDraft* draft);
Status FitPcie(const CalibrationInput& in, CalibrationDraft* draft);
Status FitGpu(const CalibrationInput& in, CalibrationDraft* draft);
Status FitCollectives(const CalibrationInput& in, CalibrationDraft* draft);
Status DescribeFormatsAndRange(const CalibrationInput& in, CalibrationDraft* draft);

// The captured configurations the self-check replays (calibrate/self_check.cc): one per trace, with
// that trace's own worker_cost_scale of the kind the model holds.
struct CapturedRun;
std::vector<CapturedRun> CapturedRuns(const CalibrationInput& in, const CalibrationDraft& d);

// Helpers shared by the stages.
// Records a parameter's provenance (model extra "provenance" per parameter, docs/model-format.md).
void SetProvenance(models::ModelParams* model, const std::string& name, bool assumed, const std::string& source);
// {count, mean, p50, p90, min, max} (nearest-rank quantiles: common/quantile.h), or null when empty.
nlohmann::json QuantileSummary(const std::vector<double>& values);
// Arithmetic mean; 0 when empty.
double MeanOf(const std::vector<double>& values);

}  // namespace simreplay::calibrate
