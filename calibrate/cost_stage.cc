#include "calibrate/stages.h"

#include <array>
#include <map>

#include "calibrate/cost_regression.h"
#include "replay/manifest.h"

namespace simreplay::calibrate {

Status FitCosts(const CalibrationInput& in, CalibrationDraft* d) {
  const std::vector<TraceData>& traces = in.traces;
  std::vector<std::string>& warnings = d->warnings;
  nlohmann::json& media_json = d->media;
  nlohmann::json regression_q = nlohmann::json::object();
  struct Rows {
    std::vector<std::array<double, 3>> x;
    std::vector<double> read, decode, augment, getitem;
    std::vector<std::array<double, 3>> x_unsplit;
  };
  std::map<std::string, Rows> by_format;
  for (size_t ti = 0; ti < traces.size(); ++ti) {
    const double scale = d->contention[ti].intrinsic_scale;
    for (const auto& s : traces[ti].samples) {
      std::array<double, 3> x = {static_cast<double>(s.read_bytes),
                                 static_cast<double>(s.width * s.height * std::max<int64_t>(1, s.frames)),
                                 static_cast<double>(s.frames)};
      Rows& r = by_format[s.format];
      if (s.unsplit) {
        r.x_unsplit.push_back(x);
        r.getitem.push_back(s.decode_ns * kNs * scale);
      } else {
        r.x.push_back(x);
        r.read.push_back(s.read_ns * kNs);
        r.decode.push_back(s.decode_ns * kNs * scale);
        r.augment.push_back(s.augment_ns * kNs * scale);
      }
    }
  }
  auto fit_stage = [&](const std::string& format, const char* stage, const std::vector<std::array<double, 3>>& xs,
                       const std::vector<double>& ys, bool bytes_only, nlohmann::json* out) {
    if (ys.empty()) return;
    const Eigen::Index n = static_cast<Eigen::Index>(ys.size());
    Eigen::MatrixXd x(n, bytes_only ? 1 : 3);
    Eigen::VectorXd y(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      for (Eigen::Index j = 0; j < x.cols(); ++j) x(i, j) = xs[static_cast<size_t>(i)][static_cast<size_t>(j)];
      y[i] = ys[static_cast<size_t>(i)];
    }
    std::vector<std::string> names =
        bytes_only ? std::vector<std::string>{"bytes"} : std::vector<std::string>{"bytes", "pixels", "frames"};
    auto fit = FitHuber(x, y, names, "format " + format + " stage " + stage);
    if (!fit.ok()) {
      warnings.push_back(fit.status().message());
      return;
    }
    (*out)[stage] = fit->ToJson();
    regression_q[format + "." + stage] = {
        {"samples", fit->samples}, {"r2", fit->r2}, {"mape", fit->mape}, {"low_confidence", fit->low_confidence}};
    if (fit->low_confidence) {
      std::string why;
      for (const auto& r : fit->reasons) why += (why.empty() ? "" : "; ") + r;
      warnings.push_back("low confidence: cost of " + format + "/" + stage + ": " + why);
    }
  };
  for (const auto& [format, rows] : by_format) {
    nlohmann::json stages = nlohmann::json::object();
    fit_stage(format, "read", rows.x, rows.read, true, &stages);
    fit_stage(format, "decode", rows.x, rows.decode, false, &stages);
    fit_stage(format, "augment", rows.x, rows.augment, false, &stages);
    fit_stage(format, "getitem", rows.x_unsplit, rows.getitem, false, &stages);
    media_json[format] = {{"samples", rows.x.size() + rows.x_unsplit.size()},
                          {"units",
                           "decode/augment/getitem: intrinsic CPU seconds (recorded x the trace's "
                           "worker_cost_scale); read: recorded seconds"},
                          {"stages", stages}};
  }
  d->quality["cost_regression"] = regression_q;
  return Status::Ok();
}

}  // namespace simreplay::calibrate
