#include "models/media_synth.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "common/json_fields.h"
#include "common/random.h"

namespace simreplay::models {

namespace {

Status ParseRange(const nlohmann::json& range, const char* key, double* lo, double* hi, const JsonFields& f) {
  if (!range.contains(key)) return Status::Ok();
  const auto& r = range[key];
  if (!r.is_array() || r.size() != 2 || !r[0].is_number() || !r[1].is_number())
    return f.Error(std::string("range.") + key + " must be [min, max]");
  *lo = r[0].get<double>();
  *hi = r[1].get<double>();
  return Status::Ok();
}

Result<StageCostFit> ParseStageFit(const nlohmann::json& j, const std::string& where) {
  JsonFields f(j, where);
  if (!j.is_object()) return f.Error("must be an object");
  StageCostFit fit;
  fit.present = true;
  if (!j.contains("coefficients_s_per_unit") || !j["coefficients_s_per_unit"].is_object())
    return f.Error("missing object 'coefficients_s_per_unit'");
  JsonFields c(j["coefficients_s_per_unit"], where + ": coefficients_s_per_unit");
  // Slopes are never negative (calibrate drops them); the intercept may be.
  SIMREPLAY_RETURN_IF_ERROR(c.GetOptionalDouble("intercept", &fit.intercept_s, JsonFields::Sign::kAny));
  SIMREPLAY_RETURN_IF_ERROR(c.GetOptionalDouble("bytes", &fit.s_per_byte));
  SIMREPLAY_RETURN_IF_ERROR(c.GetOptionalDouble("pixels", &fit.s_per_pixel));
  SIMREPLAY_RETURN_IF_ERROR(c.GetOptionalDouble("frames", &fit.s_per_frame));
  fit.intercept_only = fit.s_per_byte <= 0 && fit.s_per_pixel <= 0 && fit.s_per_frame <= 0;
  if (j.contains("range")) {
    const auto& r = j["range"];
    if (!r.is_object()) return f.Error("'range' must be an object");
    SIMREPLAY_RETURN_IF_ERROR(ParseRange(r, "bytes", &fit.bytes_min, &fit.bytes_max, f));
    SIMREPLAY_RETURN_IF_ERROR(ParseRange(r, "pixels", &fit.pixels_min, &fit.pixels_max, f));
    SIMREPLAY_RETURN_IF_ERROR(ParseRange(r, "frames", &fit.frames_min, &fit.frames_max, f));
  }
  if (j.contains("residual_ratio_quantiles")) {
    const auto& q = j["residual_ratio_quantiles"];
    if (!q.is_array()) return f.Error("'residual_ratio_quantiles' must be an array");
    for (const auto& v : q) {
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
        return f.Error("'residual_ratio_quantiles' must hold finite numbers >= 0");
      fit.residual_ratio_quantiles.push_back(v.get<double>());
    }
    if (!std::is_sorted(fit.residual_ratio_quantiles.begin(), fit.residual_ratio_quantiles.end()))
      return f.Error("'residual_ratio_quantiles' must be non-decreasing");
  }
  if (j.contains("residual_ratio_bin_means")) {
    const auto& m = j["residual_ratio_bin_means"];
    const auto& q = fit.residual_ratio_quantiles;
    if (!m.is_array() || q.size() < 2 || m.size() != q.size() - 1)
      return f.Error("'residual_ratio_bin_means' must be an array with one entry fewer than residual_ratio_quantiles");
    for (size_t i = 0; i < m.size(); ++i) {
      if (!m[i].is_number() || !(m[i].get<double>() >= q[i]) || !(m[i].get<double>() <= q[i + 1]))
        return f.Error(fmt::format("'residual_ratio_bin_means'[{}] must lie between the quantiles around it", i));
      fit.residual_ratio_bin_means.push_back(m[i].get<double>());
    }
  }
  return fit;
}

struct Shape {
  int64_t width = 0, height = 0, frames = 0;
  bool operator==(const Shape& o) const { return width == o.width && height == o.height && frames == o.frames; }
};

double Pixels(const Shape& s) {
  return static_cast<double>(s.width) * static_cast<double>(s.height) *
         static_cast<double>(std::max<int64_t>(1, s.frames));
}

// Per media: the synthesised feature range, for one extrapolation warning each.
struct Extent {
  double pixels_min = INFINITY, pixels_max = -INFINITY, frames_min = INFINITY, frames_max = -INFINITY;
  void Add(double pixels, double frames) {
    pixels_min = std::min(pixels_min, pixels), pixels_max = std::max(pixels_max, pixels);
    frames_min = std::min(frames_min, frames), frames_max = std::max(frames_max, frames);
  }
};

}  // namespace

double DrawResidualRatio(const StageCostFit& fit, double u_bin, double u_within) {
  const auto& q = fit.residual_ratio_quantiles;
  if (q.empty()) return 1.0;
  if (q.size() == 1) return q[0];
  const size_t bins = q.size() - 1;
  const size_t i = std::min(bins - 1, static_cast<size_t>(u_bin * static_cast<double>(bins)));
  const double lo = q[i], width = q[i + 1] - lo;
  if (width <= 0) return lo;
  // Mean of lo + width t^a over t in [0, 1] is lo + width / (a + 1).
  double a = 1;
  if (fit.residual_ratio_bin_means.size() == bins) {
    const double excess = fit.residual_ratio_bin_means[i] - lo;
    if (excess <= 0) return lo;
    if (excess >= width) return q[i + 1];
    a = width / excess - 1;
  }
  return lo + width * std::pow(u_within, a);
}

Result<std::map<std::string, MediaCostModel>> ParseMediaCostModels(const nlohmann::json& media,
                                                                   const std::string& where) {
  std::map<std::string, MediaCostModel> out;
  if (!media.is_object()) return Status::InvalidArgument(where + ": formats.media must be an object");
  for (const auto& [name, mj] : media.items()) {
    const std::string w = where + ": formats.media." + name;
    if (!mj.is_object()) return Status::InvalidArgument(w + ": must be an object");
    MediaCostModel m;
    if (mj.contains("stages") && mj["stages"].is_object()) {
      const auto& st = mj["stages"];
      for (auto [key, dst] : {std::pair{"read", &m.read}, {"decode", &m.decode}, {"augment", &m.augment}}) {
        if (!st.contains(key)) continue;
        auto fit = ParseStageFit(st[key], w + ".stages." + key);
        if (!fit.ok()) return fit.status();
        *dst = *fit;
      }
    }
    if (mj.contains("shape") && mj["shape"].is_object()) {
      JsonFields s(mj["shape"], w + ".shape");
      if (s.Has("bytes_per_pixel"))
        SIMREPLAY_RETURN_IF_ERROR(s.GetOptionalDouble("bytes_per_pixel", &m.bytes_per_pixel));
    }
    out[name] = m;
  }
  return out;
}

// A feature varied enough to fit a slope on: a range under 25% gives a slope dominated by noise (a clip
// set whose widths differ by 2% once gave 0.27 us per pixel with a -52 ms intercept).
bool Varied(double lo, double hi) { return lo > 0 ? hi > 1.25 * lo : hi > 0; }

bool ScalesProportionally(const StageCostFit& fit, bool read_stage) {
  if (read_stage) return fit.s_per_byte <= 0 || !Varied(fit.bytes_min, fit.bytes_max);
  const bool no_slope = fit.s_per_pixel <= 0 && fit.s_per_frame <= 0;
  return no_slope || (!Varied(fit.pixels_min, fit.pixels_max) && !Varied(fit.frames_min, fit.frames_max));
}

double PredictStageS(const StageCostFit& fit, double bytes, double pixels, double frames, bool read_stage) {
  if (!fit.present) return 0;
  if (ScalesProportionally(fit, read_stage)) {
    // The calibrating data never varied the work (bytes for a read; pixels and frames for CPU stages),
    // so the fit cannot say how the cost grows with it: assume it proportional, anchored at the
    // measured mid-point, with the regression evaluated at the equivalent measured-size sample.
    const double ref = read_stage ? (fit.bytes_min + fit.bytes_max) / 2 : (fit.pixels_min + fit.pixels_max) / 2;
    const double x = read_stage ? bytes : pixels;
    const double scale = ref > 0 && x > 0 ? x / ref : 1.0;
    const double at_ref = read_stage ? fit.intercept_s + fit.s_per_byte * bytes / scale
                                     : fit.intercept_s + fit.s_per_byte * bytes / scale + fit.s_per_pixel * ref +
                                           fit.s_per_frame * (fit.frames_min + fit.frames_max) / 2;
    return std::max(0.0, at_ref) * scale;
  }
  double v = fit.intercept_s + fit.s_per_byte * bytes;
  if (!read_stage) v += fit.s_per_pixel * pixels + fit.s_per_frame * frames;
  return std::max(0.0, v);
}

Status SynthesizeMedia(const std::map<std::string, MediaCostModel>& models,
                       const std::map<std::string, MediaShapeSpec>& spec, double worker_cost_scale, uint64_t seed,
                       std::vector<MediaSample>* samples, std::vector<std::string>* warnings,
                       std::vector<std::string>* extrapolated) {
  if (spec.empty() || samples->empty()) return Status::Ok();
  for (const auto& [name, s] : spec) {
    if (!models.count(name)) {
      return Status::InvalidArgument(
          fmt::format("data.media: '{}' has no cost regression in the model (never captured, or the model was "
                      "calibrated before media shapes were recorded)",
                      name));
    }
  }
  Rng rng(Rng::DeriveSeed(seed, 0x6D656469));  // "medi": a stream of its own
  const size_t n = samples->size();

  // 1. Media assignment.
  bool shares_given = false;
  for (const auto& [name, s] : spec) shares_given |= s.share >= 0;
  std::vector<std::string> media(n);
  for (size_t i = 0; i < n; ++i) media[i] = (*samples)[i].media;
  if (shares_given) {
    double total = 0;
    for (const auto& [name, s] : spec) {
      if (s.share < 0) return Status::InvalidArgument("data.media: give 'share' for every media or for none");
      total += s.share;
    }
    if (std::abs(total - 1) > 1e-6)
      return Status::InvalidArgument(fmt::format("data.media: shares must sum to 1, found {:.6g}", total));
    // Largest remainder: floor(share x n), then one more to the largest fractions (ties: name order).
    std::map<std::string, int64_t> target;
    std::vector<std::pair<double, std::string>> fractions;
    int64_t assigned = 0;
    for (const auto& [name, s] : spec) {
      const double exact = s.share * static_cast<double>(n);
      target[name] = static_cast<int64_t>(std::floor(exact));
      assigned += target[name];
      fractions.push_back({-(exact - std::floor(exact)), name});
    }
    std::stable_sort(fractions.begin(), fractions.end());
    for (size_t k = 0; assigned < static_cast<int64_t>(n); ++k, ++assigned)
      ++target[fractions[k % fractions.size()].second];
    // Surplus rows (a seeded shuffle of each media's rows, in media name order) go to the deficits.
    std::map<std::string, std::vector<size_t>> rows;
    for (size_t i = 0; i < n; ++i) rows[media[i]].push_back(i);
    std::vector<size_t> released;
    for (auto& [name, idx] : rows) {
      const int64_t keep = target.count(name) ? target[name] : 0;
      for (size_t k = idx.size(); k > 1; --k) std::swap(idx[k - 1], idx[rng.Below(k)]);
      for (size_t k = static_cast<size_t>(std::max<int64_t>(0, keep)); k < idx.size(); ++k) released.push_back(idx[k]);
      target[name] = keep - std::min<int64_t>(keep, static_cast<int64_t>(idx.size()));  // rows still wanted
    }
    std::sort(released.begin(), released.end());
    for (size_t k = released.size(); k > 1; --k) std::swap(released[k - 1], released[rng.Below(k)]);
    size_t next = 0;
    for (auto& [name, want] : target) {
      for (; want > 0 && next < released.size(); --want) media[released[next++]] = name;
    }
  }

  // Recorded shapes of each media, in trace order (the base shape of rows that changed media).
  std::map<std::string, std::vector<size_t>> pool;
  for (size_t i = 0; i < n; ++i) pool[(*samples)[i].media].push_back(i);
  std::map<std::string, size_t> pool_next;
  std::map<std::string, Extent> extents;
  std::set<std::string> noted;
  auto note_once = [&](const std::string& text) {
    if (noted.insert(text).second) warnings->push_back(text);
  };

  std::vector<MediaSample> out = *samples;
  for (size_t i = 0; i < n; ++i) {
    const MediaSample& rec = (*samples)[i];
    const std::string& m = media[i];
    const bool same_media = m == rec.media;
    auto spec_it = spec.find(m);
    const MediaShapeSpec shape_spec = spec_it == spec.end() ? MediaShapeSpec{} : spec_it->second;
    const MediaSample* base = &rec;
    if (!same_media) {
      auto p = pool.find(m);
      if (p == pool.end()) {
        return Status::InvalidArgument("data.media: '" + m + "' has no recorded samples in the trace to take its " +
                                       "shape from: give width, height and frames");
      }
      base = &(*samples)[p->second[pool_next[m]++ % p->second.size()]];
    }
    Shape before{rec.width, rec.height, rec.frames};
    Shape after{base->width, base->height, base->frames};
    if (shape_spec.width > 0)
      after.width = shape_spec.width;
    else
      after.width = static_cast<int64_t>(std::llround(static_cast<double>(after.width) * shape_spec.scale));
    if (shape_spec.height > 0)
      after.height = shape_spec.height;
    else
      after.height = static_cast<int64_t>(std::llround(static_cast<double>(after.height) * shape_spec.scale));
    if (shape_spec.frames > 0) after.frames = shape_spec.frames;
    if (same_media && after == before) continue;  // unchanged: the recorded costs stand

    const MediaCostModel& model = models.at(m);
    if (model.bytes_per_pixel <= 0) {
      return Status::InvalidArgument("data.media: the model has no bytes_per_pixel for '" + m +
                                     "' (recalibrate with this version): its bytes cannot be scaled with pixels");
    }
    MediaSample s = *base;
    s.media = m;
    s.width = after.width, s.height = after.height, s.frames = after.frames;
    const double pixels = Pixels(after), frames = static_cast<double>(std::max<int64_t>(1, after.frames));
    const double bytes = model.bytes_per_pixel * pixels;
    s.read_bytes = static_cast<int64_t>(std::llround(bytes));
    const double base_frames = static_cast<double>(std::max<int64_t>(1, base->frames));
    s.out_bytes = static_cast<int64_t>(std::llround(static_cast<double>(base->out_bytes) * frames / base_frames));
    extents[m].Add(pixels, frames);
    struct StageRef {
      const StageCostFit* fit;
      double MediaSample::*cost;
      bool read;
    };
    for (const StageRef& st :
         {StageRef{&model.read, &MediaSample::read_s, true}, StageRef{&model.decode, &MediaSample::decode_s, false},
          StageRef{&model.augment, &MediaSample::augment_s, false}}) {
      if (!st.fit->present) continue;
      if (ScalesProportionally(*st.fit, st.read)) {
        note_once("assumed: media " + m + ": the calibrating samples never varied the " +
                  (st.read ? std::string("read bytes") : std::string("decoded pixels or frames")) +
                  " enough to fit a slope; that stage's cost is taken as proportional to them");
      }
      const double to = PredictStageS(*st.fit, bytes, pixels, frames, st.read);
      if (same_media) {
        const double from = PredictStageS(*st.fit, static_cast<double>(rec.read_bytes), Pixels(before),
                                          static_cast<double>(std::max<int64_t>(1, rec.frames)), st.read);
        s.*st.cost = from > 0 ? rec.*st.cost * to / from : to;
      } else {
        // Regression and residual are intrinsic CPU seconds for decode/augment, recorded seconds for read.
        if (st.fit->residual_ratio_bin_means.empty() && st.fit->residual_ratio_quantiles.size() > 1) {
          note_once("media " + m +
                    ": the model has no residual_ratio_bin_means (calibrated before 2026-12-07): "
                    "synthesised costs draw linearly between quantiles, which overstates a heavy tail; recalibrate");
        }
        const double u_bin = rng.Unit();
        const double ratio = DrawResidualRatio(*st.fit, u_bin, rng.Unit());
        s.*st.cost = to * ratio / (st.read ? 1.0 : std::max(1e-12, worker_cost_scale));
      }
    }
    out[i] = s;
  }
  for (const auto& [m, e] : extents) {
    const StageCostFit& d = models.at(m).decode;
    if (!d.present) continue;
    const double tol = 1e-9;
    if (e.pixels_min < d.pixels_min * (1 - tol) || e.pixels_max > d.pixels_max * (1 + tol)) {
      warnings->push_back(fmt::format(
          "extrapolating: media {} at {:.4g}..{:.4g} decoded pixels per sample, outside the measured {:.4g}..{:.4g}; "
          "measure the curve at these sizes with `python3 -m simreplay_capture.probe_media` and "
          "`simreplay calibrate --media-probe` (docs/probe-format.md)",
          m, e.pixels_min, e.pixels_max, d.pixels_min, d.pixels_max));
      if (extrapolated != nullptr) extrapolated->push_back("data.media." + m + ".pixels");
    }
    if (e.frames_min < d.frames_min - tol || e.frames_max > d.frames_max + tol) {
      warnings->push_back(fmt::format(
          "extrapolating: media {} at {:g}..{:g} frames, outside the measured {:g}..{:g}; measure the curve at these "
          "frame counts with `python3 -m simreplay_capture.probe_media` and `simreplay calibrate --media-probe` "
          "(docs/probe-format.md)",
          m, e.frames_min, e.frames_max, d.frames_min, d.frames_max));
      if (extrapolated != nullptr) extrapolated->push_back("data.media." + m + ".frames");
    }
  }
  *samples = std::move(out);
  return Status::Ok();
}

}  // namespace simreplay::models
