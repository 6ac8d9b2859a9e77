// Media what-ifs: per-sample costs for another media mix or shape (images at 512 px instead of 224,
// clips of 16 frames instead of 8, twice the video share), synthesised from the per-media cost
// regressions calibrate fits (calibrate/cost_regression.h: cost = c0 + c1 bytes + c2 pixels + c3 frames
// per stage, plus the distribution of observed / predicted) and the captured bytes per decoded pixel.
// Plain C++ with no replay/ dependency: sim/media_replay.h applies it to a replay::SampleCostTable.
//
// For each sample (row of the recorded cost table), in order:
//   1. Media. Without shares the row keeps its recorded media. With shares, rows move between media
//      only as far as the target counts require (largest-remainder rounding of share x rows): surplus
//      rows of a media are picked by a seeded shuffle and handed to the media short of rows.
//   2. Shape. The base shape is the row's own recorded one, or, for a row that changed media, the next
//      recorded shape of the new media (cycled in trace order). width/height/frames of the spec replace
//      it; `scale` multiplies width and height. pixels = width x height x max(1, frames); bytes =
//      bytes_per_pixel x pixels.
//   3. Costs per stage (read, decode, augment). A row whose media and shape are unchanged keeps its
//      recorded costs. A row of the same media with a new shape keeps its own deviation from the
//      regression: cost' = recorded x f(x') / f(x). A row that changed media gets
//      f(x') x r / worker_cost_scale, r drawn from the stage's residual quantiles (seeded, linear
//      between the tabulated probabilities), the division turning intrinsic CPU seconds back into
//      the recorded seconds the simulator replays.
//   f(x) is the regression, except when the fit has no slope on the work itself (pixels or frames for
//   decode/augment, bytes for a read) or the calibrating samples never varied it by more than 25% (e.g.
//   every clip had 4 frames of nearly one size: a slope fitted on 2% of range is noise): then
//   f(x) = f(x at the measured mid-point) x pixels / pixels_measured (read: bytes / bytes_measured),
//   cost proportional to work, flagged as assumed.
// Shapes outside the measured range of the regressions are flagged as extrapolation.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace simreplay::models {

// One stage's regression as calibrate writes it (docs/model-format.md, formats.media).
struct StageCostFit {
  bool present = false;
  double intercept_s = 0;
  double s_per_byte = 0, s_per_pixel = 0, s_per_frame = 0;
  bool intercept_only = true;  // no feature kept its slope
  // Measured range of each feature: [min, max] of bytes, pixels, frames (read: bytes only).
  double bytes_min = 0, bytes_max = 0, pixels_min = 0, pixels_max = 0, frames_min = 0, frames_max = 0;
  std::vector<double> residual_ratio_quantiles;  // observed / predicted at 0, 0.05, ..., 1
  // The mean observed ratio between neighbouring quantiles (one fewer entry); empty in models calibrated
  // before 2026-12-07, whose draws interpolate linearly and overstate a heavy tail.
  std::vector<double> residual_ratio_bin_means;
};

// One residual ratio for a synthesised sample: a bin between neighbouring quantiles, uniformly, then a
// point inside it on q_i + (q_i+1 - q_i) t^a, t uniform, with a set so the bin's mean is its observed
// mean (a = 1, linear, without bin means). 1 when no quantiles are given.
double DrawResidualRatio(const StageCostFit& fit, double u_bin, double u_within);

struct MediaCostModel {
  StageCostFit read, decode, augment;
  double bytes_per_pixel = 0;  // captured median read bytes per decoded pixel; 0: unknown
};

// What a scenario asks for one media format (`data.media.<name>`). 0 / < 0: as captured.
struct MediaShapeSpec {
  double share = -1;  // fraction of samples; < 0: not given
  int64_t width = 0, height = 0, frames = 0;
  double scale = 1;  // multiplies the base width and height (when width/height are not given)
};

// One recorded sample as the synthesis sees it.
struct MediaSample {
  std::string media;
  int64_t width = 0, height = 0, frames = 0;
  int64_t read_bytes = 0, out_bytes = 0;
  double read_s = 0, decode_s = 0, augment_s = 0;
};

// Parses extra.formats.media of a model file: {"jpeg": {"stages": {...}, "shape": {...}}, ...}.
Result<std::map<std::string, MediaCostModel>> ParseMediaCostModels(const nlohmann::json& media,
                                                                   const std::string& where);

// Whether the fit has no slope on the work itself, so that PredictStageS scales proportionally.
bool ScalesProportionally(const StageCostFit& fit, bool read_stage);
// The regression's prediction for one sample (the proportional rule above when it applies).
// `read_stage`: the read fit, whose only feature is bytes.
double PredictStageS(const StageCostFit& fit, double bytes, double pixels, double frames, bool read_stage);

// Rewrites `samples` in place for `spec` (see the header comment). `worker_cost_scale` is the model's
// (intrinsic / recorded CPU seconds); `warnings` collects extrapolation and assumption notes (each once);
// `extrapolated` (optional) names each media shape outside the measured range, typed for the planner's
// interval widening ("data.media.<media>.pixels", "data.media.<media>.frames").
// InvalidArgument when a media in the spec has no cost model, shares do not sum to 1, or a media
// needs bytes scaled without a captured bytes_per_pixel.
Status SynthesizeMedia(const std::map<std::string, MediaCostModel>& models,
                       const std::map<std::string, MediaShapeSpec>& spec, double worker_cost_scale, uint64_t seed,
                       std::vector<MediaSample>* samples, std::vector<std::string>* warnings,
                       std::vector<std::string>* extrapolated = nullptr);

}  // namespace simreplay::models
