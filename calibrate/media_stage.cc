#include <algorithm>
#include <map>
#include <vector>

#include "calibrate/media_probe.h"
#include "calibrate/stages.h"
#include "common/quantile.h"

namespace simreplay::calibrate {

// The shapes each media format was captured at, next to its cost regressions (extra.formats.media.
// <format>.shape): what the media what-ifs (models/media_synth.h) need to synthesise samples of
// another shape. Bytes scale with decoded pixels by the captured bytes per pixel (the median over the
// format's samples: robust to one odd file); the ranges bound what the regressions measured.
Status DescribeMediaShapes(const CalibrationInput& in, CalibrationDraft* d) {
  struct Shapes {
    std::vector<double> bytes_per_pixel;
    int64_t samples = 0;
    int64_t min_w = 0, max_w = 0, min_h = 0, max_h = 0, min_f = 0, max_f = 0;
  };
  std::map<std::string, Shapes> by_format;
  int64_t total = 0;
  for (const auto& t : in.traces) {
    for (const auto& s : t.samples) {
      Shapes& sh = by_format[s.format];
      const int64_t frames = std::max<int64_t>(1, s.frames);
      const double pixels = static_cast<double>(s.width) * static_cast<double>(s.height) * static_cast<double>(frames);
      if (sh.samples == 0) {
        sh.min_w = sh.max_w = s.width;
        sh.min_h = sh.max_h = s.height;
        sh.min_f = sh.max_f = frames;
      }
      sh.min_w = std::min(sh.min_w, s.width), sh.max_w = std::max(sh.max_w, s.width);
      sh.min_h = std::min(sh.min_h, s.height), sh.max_h = std::max(sh.max_h, s.height);
      sh.min_f = std::min(sh.min_f, frames), sh.max_f = std::max(sh.max_f, frames);
      ++sh.samples;
      ++total;
      if (pixels > 0 && s.read_bytes > 0) sh.bytes_per_pixel.push_back(static_cast<double>(s.read_bytes) / pixels);
    }
  }
  for (const auto& [format, sh] : by_format) {
    nlohmann::json shape = {{"samples", sh.samples},
                            {"share", total > 0 ? static_cast<double>(sh.samples) / static_cast<double>(total) : 0.0},
                            {"width", {sh.min_w, sh.max_w}},
                            {"height", {sh.min_h, sh.max_h}},
                            {"frames", {sh.min_f, sh.max_f}}};
    if (sh.bytes_per_pixel.empty()) {
      shape["bytes_per_pixel"] = nullptr;
      d->warnings.push_back("media " + format + ": no samples with both a decoded shape and read bytes: " +
                            "its bytes cannot be scaled with pixels in media what-ifs");
    } else {
      shape["bytes_per_pixel"] = QuantileNearestRank(sh.bytes_per_pixel, 0.5);
    }
    d->media[format]["shape"] = shape;
  }
  if (in.media_probe) {
    // The probe reshapes the cost fits the costs stage made; its level comes from these rows, in the
    // same intrinsic CPU seconds (recorded x the trace's intrinsic scale, calibrate/cost_stage.cc).
    std::vector<MediaTraceRow> rows;
    for (size_t ti = 0; ti < in.traces.size(); ++ti) {
      const double scale = d->contention[ti].intrinsic_scale;
      for (const auto& s : in.traces[ti].samples) {
        MediaTraceRow r;
        r.media = s.format;
        r.frames = static_cast<double>(std::max<int64_t>(1, s.frames));
        r.pixels = static_cast<double>(s.width) * static_cast<double>(s.height) * r.frames;
        r.decode_s = s.decode_ns * kNs * scale;
        r.augment_s = s.augment_ns * kNs * scale;
        r.unsplit = s.unsplit;
        rows.push_back(r);
      }
    }
    nlohmann::json quality = nlohmann::json::object();
    SIMREPLAY_RETURN_IF_ERROR(ApplyMediaProbe(*in.media_probe, rows, &d->media, &quality, &d->warnings));
    d->quality["media_probe"] = {{"file", in.media_probe->file}, {"stages", quality}};
  }
  return Status::Ok();
}

}  // namespace simreplay::calibrate
