// The media probe (`python3 -m simreplay_capture.probe_media`, docs/probe-format.md "Media probe"): the
// user's own decode and augment costs at several image scales and clip lengths, and the per-media cost
// fit calibrate makes from it.
//
// Why: a trace sees each medium at the one size it is stored at, so a per-pixel slope fitted on it is
// extrapolated by a media what-if (images twice as wide, clips twice as long) and was 10-30% off on real
// runs (docs/validation-log.md, "What-if runs"). The probe measures the same files at 0.5x..2x, so the
// fixed part (per-sample overhead: opening the codec, Python, the crop's output) and the per-pixel part
// are fitted separately over the range the what-if asks about.
//
// The fit, per (media, stage) of decode / augment (getitem for pipelines without stages):
//   shape: Huber fit of the probe's times on [pixels, frames] (calibrate/cost_regression.h),
//   level: the trace's: every coefficient x k, k = median over the trace's samples of this media of
//          observed intrinsic cost / shape prediction (the probe runs one sample at a time in one process,
//          the trace under the loader's contention: only the shape is taken from the probe),
//   residuals: the trace's observed / fitted ratios, range: the probe's and the trace's together.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace simreplay::calibrate {

inline constexpr const char* kMediaProbeSchema = "simreplay.probe-media/1";

struct MediaProbePoint {
  std::string media;  // "jpeg", "mp4", ... (the pipeline's sc.note(format=...))
  double scale = 1, frames_scale = 1;
  double pixels = 0;  // width x height x max(1, frames)
  double frames = 1;
  double read_bytes = 0;
  double decode_s = 0, augment_s = 0;
  bool split = true;  // false: decode_s is the whole __getitem__ (no sc.stage() in the pipeline)
};

struct MediaProbe {
  std::string file;
  std::vector<MediaProbePoint> points;
};

// Reads a simreplay.probe-media/1 document. InvalidArgument naming the file and field on a wrong schema,
// a missing or non-finite field, a negative time or an empty point list.
Result<MediaProbe> ReadMediaProbeFile(const std::string& path);

// One sample of a trace as the anchoring sees it: features and the observed intrinsic cost per stage.
struct MediaTraceRow {
  std::string media;
  double pixels = 0, frames = 1;
  double decode_s = 0, augment_s = 0;  // intrinsic CPU seconds (getitem: in decode_s when unsplit)
  bool unsplit = false;
};

// Replaces decode / augment (or getitem) of every probed media in `media_json` (calibrate's
// formats.media: {"jpeg": {"stages": {...}}, ...}) by the probe-shaped, trace-anchored fit above.
// Writes what it did per media and stage into *quality and notes into *warnings.
Status ApplyMediaProbe(const MediaProbe& probe, const std::vector<MediaTraceRow>& trace_rows, nlohmann::json* media_json,
                       nlohmann::json* quality, std::vector<std::string>* warnings);

}  // namespace simreplay::calibrate
