#include "validation/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/check.h"
#include "common/quantile.h"
#include "common/random.h"

namespace simreplay::validation {

double Mean(const std::vector<double>& values) {
  SIMREPLAY_CHECK(!values.empty());
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

double Median(const std::vector<double>& values) { return QuantileLinear(values, 0.5); }

double StdDev(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  double m = Mean(values);
  double ss = 0;
  for (double v : values) ss += (v - m) * (v - m);
  return std::sqrt(ss / static_cast<double>(values.size() - 1));
}

namespace {

double Apply(const std::vector<double>& v, Statistic s) { return s == Statistic::kMedian ? Median(v) : Mean(v); }

Interval PercentileInterval(std::vector<double> replicates, double confidence) {
  double alpha = (1 - confidence) / 2;
  std::sort(replicates.begin(), replicates.end());
  return {SortedQuantileLinear(replicates, alpha), SortedQuantileLinear(replicates, 1 - alpha)};
}

}  // namespace

Interval BootstrapInterval(const std::vector<double>& values, Statistic statistic, const BootstrapOptions& options) {
  SIMREPLAY_CHECK(!values.empty());
  if (values.size() == 1) return {values[0], values[0]};
  Rng rng(options.seed);
  std::vector<double> replicates;
  replicates.reserve(static_cast<size_t>(std::max(1, options.resamples)));
  std::vector<double> draw(values.size());
  for (int r = 0; r < std::max(1, options.resamples); ++r) {
    for (double& d : draw) d = values[rng.UniformIndex(values.size())];
    replicates.push_back(Apply(draw, statistic));
  }
  return PercentileInterval(std::move(replicates), options.confidence);
}

Interval PairedRatioInterval(const std::vector<double>& a, const std::vector<double>& b,
                             const BootstrapOptions& options, double* point) {
  SIMREPLAY_CHECK(!a.empty() && a.size() == b.size());
  std::vector<double> ratio(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SIMREPLAY_CHECK(a[i] > 0);
    ratio[i] = b[i] / a[i] - 1;
  }
  if (point != nullptr) *point = Median(ratio);
  return BootstrapInterval(ratio, Statistic::kMedian, options);
}

double KendallTauB(const std::vector<double>& x, const std::vector<double>& y) {
  SIMREPLAY_CHECK(x.size() == y.size());
  const size_t n = x.size();
  if (n < 2) return 0;
  double concordant = 0, discordant = 0, ties_x = 0, ties_y = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      double dx = x[i] - x[j], dy = y[i] - y[j];
      if (dx == 0 && dy == 0) continue;  // tied in both: counts in neither denominator term
      if (dx == 0) {
        ties_x += 1;
      } else if (dy == 0) {
        ties_y += 1;
      } else if ((dx > 0) == (dy > 0)) {
        concordant += 1;
      } else {
        discordant += 1;
      }
    }
  }
  double denom = std::sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y));
  return denom == 0 ? 0 : (concordant - discordant) / denom;
}

size_t ArgMax(const std::vector<double>& values) {
  SIMREPLAY_CHECK(!values.empty());
  return static_cast<size_t>(std::max_element(values.begin(), values.end()) - values.begin());
}

}  // namespace simreplay::validation
