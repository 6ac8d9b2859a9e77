#include "calibrate/calibrator.h"

#include "calibrate/stages.h"
#include "common/paths.h"

namespace simreplay::calibrate {

Result<CalibrationResult> Calibrate(const CalibrateOptions& options) {
  if (options.traces.empty()) return Status::InvalidArgument("calibrate: no trace given");
  if (options.storage_mode != "recorded" && options.storage_mode != "model") {
    return Status::InvalidArgument("storage mode must be \"recorded\" or \"model\", found \"" + options.storage_mode +
                                   "\"");
  }
  CalibrationInput in;
  in.options = &options;
  for (const auto& path : options.traces) {
    auto t = ReadTrace(path);
    if (!t.ok()) return t.status();
    SIMREPLAY_RETURN_IF_ERROR(ValidateTrace(&*t));
    in.traces.push_back(std::move(*t));
  }
  if (!options.probe_path.empty()) {
    auto probe = ReadProbeFile(options.probe_path);
    if (!probe.ok()) return probe.status();
    in.probe = std::move(*probe);
  }
  if (!options.cpu_probe_path.empty()) {
    auto cpu_probe = ReadCpuProbeFile(options.cpu_probe_path);
    if (!cpu_probe.ok()) return cpu_probe.status();
    in.cpu_probe = std::move(*cpu_probe);
  }
  if (!options.media_probe_path.empty()) {
    auto media_probe = ReadMediaProbeFile(options.media_probe_path);
    if (!media_probe.ok()) return media_probe.status();
    in.media_probe = std::move(*media_probe);
  }

  CalibrationDraft draft;
  draft.model.trace_path =
      PathRelativeToFile(in.primary().path, options.model_path.empty() ? "model.json" : options.model_path);
  draft.model.storage.mode = options.storage_mode;
  for (const auto& t : in.traces) {
    for (const auto& w : t.warnings) draft.warnings.push_back(w);
    if (!t.has_footer)
      draft.warnings.push_back(t.path + ": no footer: the capture was killed or is still running (prefix used)");
  }
  for (const CalibrationStage& stage : CalibrationStages()) SIMREPLAY_RETURN_IF_ERROR(stage.fit(in, &draft));
  draft.model.extra["fit_quality"] = draft.quality;
  draft.model.extra["warnings"] = draft.warnings;

  CalibrationResult result;
  result.captured = CapturedRuns(in, draft);
  result.model = std::move(draft.model);
  result.warnings = std::move(draft.warnings);
  return result;
}

}  // namespace simreplay::calibrate
