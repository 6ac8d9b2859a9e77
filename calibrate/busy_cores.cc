#include "calibrate/busy_cores.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include <Eigen/Dense>

namespace simreplay::calibrate {

nlohmann::json BusyCoreEstimate::ToJson() const {
  return {{"slowdown", slowdown},
          {"mean_overlap", mean_overlap},
          {"samples", samples},
          {"measured", measured},
          {"note", note}};
}

namespace {

// Per sample: the time-integral of the other samples running during it (0 for a sample without duration).
std::vector<double> OthersRunning(const std::vector<BusyCoreSample>& samples) {
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
  std::vector<double> others;
  others.reserve(samples.size());
  for (const auto& s : samples) {
    others.push_back(s.duration_s <= 0 ? 0.0
                                       : integral_at(s.start_s + s.duration_s) - integral_at(s.start_s) - s.duration_s);
  }
  return others;
}

}  // namespace

std::vector<double> SampleConcurrency(const std::vector<BusyCoreSample>& samples) {
  std::vector<double> concurrency = OthersRunning(samples);
  for (size_t i = 0; i < samples.size(); ++i) {
    concurrency[i] = samples[i].duration_s <= 0 ? 1.0 : 1.0 + std::max(0.0, concurrency[i] / samples[i].duration_s);
  }
  return concurrency;
}

std::vector<double> SampleOverlaps(const std::vector<BusyCoreSample>& samples, int cores) {
  const std::vector<double> others = OthersRunning(samples);
  std::vector<double> overlaps;
  overlaps.reserve(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    const auto& s = samples[i];
    if (s.duration_s <= 0 || cores < 2) {
      overlaps.push_back(0);
      continue;
    }
    overlaps.push_back(std::clamp(others[i] / (s.duration_s * (cores - 1)), 0.0, 1.0));
  }
  return overlaps;
}

BusyCoreEstimate EstimateBusyCoreSlowdown(const std::vector<BusyCoreSample>& samples, int cores) {
  BusyCoreEstimate e;
  const std::vector<double> overlap = SampleOverlaps(samples, cores);  // every sample is another's overlap
  std::vector<size_t> fitted;
  for (size_t i = 0; i < samples.size(); ++i) {
    if (!samples[i].warmup) fitted.push_back(i);
  }
  e.samples = static_cast<int64_t>(fitted.size());
  double mean = 0, sq = 0;
  for (size_t i : fitted) mean += overlap[i];
  mean = fitted.empty() ? 0 : mean / static_cast<double>(fitted.size());
  for (size_t i : fitted) sq += (overlap[i] - mean) * (overlap[i] - mean);
  const double sd = fitted.size() > 1 ? std::sqrt(sq / static_cast<double>(fitted.size() - 1)) : 0;
  e.mean_overlap = mean;
  const size_t left_out = samples.size() - fitted.size();
  const std::string warmup_note =
      left_out > 0 ? fmt::format(", {} samples of warm-up windows left out", left_out) : std::string();
  if (cores < 2 || fitted.size() < 50 || sd < 0.1) {
    e.note = fmt::format("not measured ({} samples with cpu_ns{}, {} cores, overlap sd {:.2f}): assumed 0",
                         fitted.size(), warmup_note, cores, sd);
    return e;
  }
  std::map<std::string, std::vector<size_t>> by_format;
  for (size_t i : fitted) by_format[samples[i].format].push_back(i);
  double weighted = 0, weight = 0;
  std::vector<std::string> rejected;
  for (const auto& [format, rows] : by_format) {
    if (rows.size() < 20) continue;
    // Ordinary least squares of cpu on [1, pixels, overlap], with the overlap slope's standard error:
    // the slope is kept only when it is positive and at least 3 standard errors from zero, because
    // sample-to-sample cost variation easily hides a 10% effect (measured: single-trace estimates
    // ranged from -0.12 to +0.33 where runs at different worker counts showed about 0.12).
    const auto n = static_cast<Eigen::Index>(rows.size());
    Eigen::MatrixXd x(n, 3);
    Eigen::VectorXd y(n);
    for (Eigen::Index r = 0; r < n; ++r) {
      const auto& sample = samples[rows[static_cast<size_t>(r)]];
      x(r, 0) = 1;
      x(r, 1) = sample.pixels * 1e-6;
      x(r, 2) = overlap[rows[static_cast<size_t>(r)]];
      y[r] = sample.cpu_s;
    }
    const Eigen::MatrixXd xtx = x.transpose() * x;
    Eigen::FullPivLU<Eigen::MatrixXd> lu(xtx);
    if (!lu.isInvertible()) continue;
    const Eigen::VectorXd coef = lu.solve(x.transpose() * y);
    const double sse = (y - x * coef).squaredNorm();
    const double sigma2 = sse / static_cast<double>(n - 3);
    const double se = std::sqrt(sigma2 * lu.inverse()(2, 2));
    const double base = (x.leftCols(2) * coef.head(2)).mean();
    if (base <= 0) continue;
    if (coef[2] <= 0 || se <= 0 || coef[2] / se < 3) {
      rejected.push_back(fmt::format("{}: {:.3f} +- {:.3f}", format, coef[2] / base, se / base));
      continue;
    }
    weighted += coef[2] / base * static_cast<double>(rows.size());
    weight += static_cast<double>(rows.size());
  }
  if (weight == 0) {
    std::string why;
    for (const auto& r : rejected) why += (why.empty() ? "" : ", ") + r;
    e.note = "no format with 20+ samples showed a significant slowdown" +
             (why.empty() ? std::string() : " (" + why + ")") + warmup_note + ": assumed 0";
    return e;
  }
  e.slowdown = std::clamp(weighted / weight, 0.0, 1.0);
  e.measured = true;
  e.note =
      fmt::format("least-squares fit of cpu_ns on pixels and overlap per format, {} samples, mean overlap {:.2f}{}",
                  fitted.size(), mean, warmup_note);
  return e;
}

}  // namespace simreplay::calibrate
