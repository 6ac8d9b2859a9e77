#include "calibrate/busy_cores.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "calibrate/cost_regression.h"

namespace simreplay::calibrate {

nlohmann::json BusyCoreEstimate::ToJson() const {
  return {{"slowdown", slowdown},
          {"mean_overlap", mean_overlap},
          {"samples", samples},
          {"measured", measured},
          {"note", note}};
}

std::vector<double> SampleOverlaps(const std::vector<BusyCoreSample>& samples, int cores) {
  // Sweep line: the step function "samples running" and its running integral at every boundary.
  std::vector<std::pair<double, int>> edges;
  for (const auto& s : samples) {
    edges.push_back({s.start_s, +1});
    edges.push_back({s.start_s + s.duration_s, -1});
  }
  std::sort(edges.begin(), edges.end());
  std::vector<double> times, integral;  // integral of the running count up to times[i]
  double acc = 0, last = edges.empty() ? 0 : edges.front().first;
  int running = 0;
  for (const auto& [t, delta] : edges) {
    acc += running * (t - last);
    last = t;
    running += delta;
    times.push_back(t);
    integral.push_back(acc);
  }
  auto integral_at = [&](double t) {
    size_t i = static_cast<size_t>(std::upper_bound(times.begin(), times.end(), t) - times.begin());
    if (i == 0) return 0.0;
    // Between boundaries the count is constant: recover it from the next segment's slope.
    double base = integral[i - 1];
    if (i < times.size() && times[i] > times[i - 1]) {
      base += (integral[i] - integral[i - 1]) * (t - times[i - 1]) / (times[i] - times[i - 1]);
    }
    return base;
  };
  std::vector<double> overlaps;
  overlaps.reserve(samples.size());
  for (const auto& s : samples) {
    if (s.duration_s <= 0 || cores < 2) {
      overlaps.push_back(0);
      continue;
    }
    double others = integral_at(s.start_s + s.duration_s) - integral_at(s.start_s) - s.duration_s;
    overlaps.push_back(std::clamp(others / (s.duration_s * (cores - 1)), 0.0, 1.0));
  }
  return overlaps;
}

BusyCoreEstimate EstimateBusyCoreSlowdown(const std::vector<BusyCoreSample>& samples, int cores) {
  BusyCoreEstimate e;
  e.samples = static_cast<int64_t>(samples.size());
  std::vector<double> overlap = SampleOverlaps(samples, cores);
  double mean = 0, sq = 0;
  for (double o : overlap) mean += o;
  mean = overlap.empty() ? 0 : mean / static_cast<double>(overlap.size());
  for (double o : overlap) sq += (o - mean) * (o - mean);
  const double sd = overlap.size() > 1 ? std::sqrt(sq / static_cast<double>(overlap.size() - 1)) : 0;
  e.mean_overlap = mean;
  if (cores < 2 || samples.size() < 50 || sd < 0.1) {
    e.note = fmt::format("not measured ({} samples with cpu_ns, {} cores, overlap sd {:.2f}): assumed 0",
                         samples.size(), cores, sd);
    return e;
  }
  std::map<std::string, std::vector<size_t>> by_format;
  for (size_t i = 0; i < samples.size(); ++i) by_format[samples[i].format].push_back(i);
  double weighted = 0, weight = 0;
  for (const auto& [format, rows] : by_format) {
    if (rows.size() < 20) continue;
    Eigen::MatrixXd x(static_cast<Eigen::Index>(rows.size()), 2);
    Eigen::VectorXd y(static_cast<Eigen::Index>(rows.size()));
    for (size_t r = 0; r < rows.size(); ++r) {
      x(static_cast<Eigen::Index>(r), 0) = samples[rows[r]].pixels;
      x(static_cast<Eigen::Index>(r), 1) = overlap[rows[r]];
      y[static_cast<Eigen::Index>(r)] = samples[rows[r]].cpu_s;
    }
    // Least squares (a Huber k so large that no point is down-weighted): the overlap effect is a shift
    // of the whole distribution, which robust weights would mostly discard.
    auto fit = FitHuber(x, y, {"pixels", "overlap"}, "busy-core slowdown of " + format, 1e12);
    if (!fit.ok() || !fit->used[2]) continue;
    double base = 0;
    for (size_t r : rows) base += fit->coefficients[0] + fit->coefficients[1] * samples[r].pixels;
    base /= static_cast<double>(rows.size());
    if (base <= 0) continue;
    weighted += fit->coefficients[2] / base * static_cast<double>(rows.size());
    weight += static_cast<double>(rows.size());
  }
  if (weight == 0) {
    e.note = "no format with 20+ samples gave a positive overlap slope: assumed 0";
    return e;
  }
  e.slowdown = std::clamp(weighted / weight, 0.0, 1.0);
  e.measured = true;
  e.note = fmt::format("Huber fit of cpu_ns on pixels and overlap per format, {} samples, mean overlap {:.2f}",
                       samples.size(), mean);
  return e;
}

}  // namespace simreplay::calibrate
