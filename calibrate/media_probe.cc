#include "calibrate/media_probe.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "calibrate/cost_regression.h"
#include "common/json_fields.h"
#include "common/quantile.h"

namespace simreplay::calibrate {

Result<MediaProbe> ReadMediaProbeFile(const std::string& path) {
  auto json = ReadJsonFile(path);
  if (!json.ok()) return json.status();
  const nlohmann::json& j = *json;
  if (!j.is_object()) return Status::InvalidArgument(path + ": expected a JSON object");
  if (!j.contains("schema") || j["schema"] != kMediaProbeSchema) {
    return Status::InvalidArgument(fmt::format("{}: schema: expected \"{}\", found {}", path, kMediaProbeSchema,
                                               j.value("schema", nlohmann::json()).dump()));
  }
  if (!j.contains("points") || !j["points"].is_array() || j["points"].empty())
    return Status::InvalidArgument(path + ": points: expected a non-empty array");
  MediaProbe probe;
  probe.file = path;
  for (size_t i = 0; i < j["points"].size(); ++i) {
    const auto& p = j["points"][i];
    JsonFields f(p, fmt::format("{}: points[{}]", path, i));
    if (!p.is_object()) return f.Error("expected an object");
    MediaProbePoint pt;
    int64_t width = 0, height = 0, frames = 1;
    SIMREPLAY_RETURN_IF_ERROR(f.GetString("media", &pt.media));
    SIMREPLAY_RETURN_IF_ERROR(f.GetInt("width", &width));
    SIMREPLAY_RETURN_IF_ERROR(f.GetInt("height", &height));
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("frames", &frames));
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalDouble("scale", &pt.scale));
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalDouble("frames_scale", &pt.frames_scale));
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalDouble("read_bytes", &pt.read_bytes));
    SIMREPLAY_RETURN_IF_ERROR(f.GetDouble("decode_s", &pt.decode_s));
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalDouble("augment_s", &pt.augment_s));
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalBool("split", &pt.split));
    if (width > (1 << 20) || height > (1 << 20) || frames > (1 << 24))
      return f.Error("width, height or frames out of range (width/height <= 2^20, frames <= 2^24)");
    pt.frames = static_cast<double>(std::max<int64_t>(1, frames));
    pt.pixels = static_cast<double>(width) * static_cast<double>(height) * pt.frames;
    probe.points.push_back(pt);
  }
  return probe;
}

namespace {

struct ProbeStageSpec {
  const char* stage;
  double MediaProbePoint::*probe_cost;
  double MediaTraceRow::*trace_cost;
  bool split;  // which points and rows the stage is fitted on
};

// [min, max] of the probe points and trace rows together.
std::pair<double, double> UnionRange(const std::vector<double>& a, const std::vector<double>& b) {
  double lo = INFINITY, hi = -INFINITY;
  for (const auto* v : {&a, &b}) {
    for (double x : *v) lo = std::min(lo, x), hi = std::max(hi, x);
  }
  return {lo, hi};
}

}  // namespace

Status ApplyMediaProbe(const MediaProbe& probe, const std::vector<MediaTraceRow>& trace_rows, nlohmann::json* media_json,
                       nlohmann::json* quality, std::vector<std::string>* warnings) {
  std::set<std::string> probed;
  for (const auto& p : probe.points) probed.insert(p.media);
  const ProbeStageSpec specs[] = {{"decode", &MediaProbePoint::decode_s, &MediaTraceRow::decode_s, true},
                                  {"augment", &MediaProbePoint::augment_s, &MediaTraceRow::augment_s, true},
                                  {"getitem", &MediaProbePoint::decode_s, &MediaTraceRow::decode_s, false}};
  for (const std::string& media : probed) {
    if (!media_json->contains(media)) {
      warnings->push_back(fmt::format("media probe {}: media '{}' is not in the trace: its points are not used",
                                      probe.file, media));
      continue;
    }
    nlohmann::json& stages = (*media_json)[media]["stages"];
    for (const ProbeStageSpec& spec : specs) {
      if (!stages.contains(spec.stage)) continue;
      std::vector<double> px, fr, y;
      std::set<double> scales;
      for (const auto& p : probe.points) {
        if (p.media != media || p.split != spec.split) continue;
        px.push_back(p.pixels), fr.push_back(p.frames), y.push_back(p.*spec.probe_cost);
        scales.insert(p.scale * 1000 + p.frames_scale);
      }
      const std::string what = media + "/" + spec.stage;
      if (px.size() < 3 || scales.size() < 2) {
        warnings->push_back(fmt::format("media probe {}: {}: {} point(s) at {} scale(s); the trace's fit is kept",
                                        probe.file, what, px.size(), scales.size()));
        continue;
      }
      const Eigen::Index n = static_cast<Eigen::Index>(y.size());
      Eigen::MatrixXd x(n, 2);
      Eigen::VectorXd yv(n);
      for (Eigen::Index i = 0; i < n; ++i) {
        x(i, 0) = px[static_cast<size_t>(i)], x(i, 1) = fr[static_cast<size_t>(i)], yv[i] = y[static_cast<size_t>(i)];
      }
      auto fit = FitHuber(x, yv, {"pixels", "frames"}, "media probe " + probe.file + " " + what);
      if (!fit.ok()) return fit.status();
      // The trace's level: median observed / probe-shaped prediction over the trace's samples.
      std::vector<double> ratios, t_px, t_fr;
      std::vector<std::pair<double, double>> rows;  // (observed, shape prediction)
      for (const auto& r : trace_rows) {
        if (r.media != media || r.unsplit == spec.split) continue;
        t_px.push_back(r.pixels), t_fr.push_back(r.frames);
        const double pred = fit->Predict({r.pixels, r.frames});
        if (pred > 0) rows.push_back({r.*spec.trace_cost, pred});
      }
      double level = 1;
      for (const auto& [obs, pred] : rows) ratios.push_back(obs / pred);
      if (!ratios.empty()) level = Median(ratios);
      if (!(level > 0) || !std::isfinite(level)) {
        warnings->push_back(fmt::format("media probe {}: {}: the trace's level relative to the probe is {}: the "
                                        "trace's fit is kept",
                                        probe.file, what, level));
        continue;
      }
      RobustFit scaled = *fit;
      for (auto& c : scaled.coefficients) c *= level;
      nlohmann::json out = scaled.ToJson();
      // Residuals and error as the trace sees the anchored fit (what synthesised samples draw from).
      std::vector<double> resid;
      double ape = 0;
      for (const auto& [obs, pred] : rows) {
        resid.push_back(obs / (pred * level));
        if (obs > 0) ape += std::abs(obs - pred * level) / obs;
      }
      if (resid.empty()) resid.push_back(1.0);
      SummarizeResidualRatios(std::move(resid)).AddTo(&out);
      const auto [plo, phi] = UnionRange(px, t_px);
      const auto [flo, fhi] = UnionRange(fr, t_fr);
      out["range"]["pixels"] = {plo, phi};
      out["range"]["frames"] = {flo, fhi};
      out["method"] = "media_probe_huber_anchored";
      out["probe"] = {{"file", probe.file},
                      {"points", fit->samples},
                      {"r2", fit->r2},
                      {"mape", fit->mape},
                      {"pixels", {*std::min_element(px.begin(), px.end()), *std::max_element(px.begin(), px.end())}},
                      {"coefficients_s_per_unit_unscaled", fit->ToJson()["coefficients_s_per_unit"]}};
      out["trace_anchor"] = {{"samples", rows.size()},
                             {"level", level},
                             {"mape", rows.empty() ? 0.0 : ape / static_cast<double>(rows.size())}};
      if (rows.empty()) {
        warnings->push_back(fmt::format("assumed: media probe {}: {}: no trace sample to anchor the level on: the "
                                        "probe's own single-process level is used",
                                        probe.file, what));
      }
      (*quality)[what] = {{"probe_points", fit->samples},
                          {"probe_r2", fit->r2},
                          {"level_from_trace", level},
                          {"trace_samples", rows.size()},
                          {"fixed_s", scaled.coefficients[0]},
                          {"s_per_pixel", scaled.coefficients[1]},
                          {"s_per_frame", scaled.coefficients[2]}};
      stages[spec.stage] = out;
    }
  }
  return Status::Ok();
}

}  // namespace simreplay::calibrate
