#include "common/quantile.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "common/check.h"

namespace simreplay {

double SortedQuantileLinear(const std::vector<double>& sorted, double q) {
  SIMREPLAY_CHECK(!sorted.empty());
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

double SortedQuantileNearestRank(const std::vector<double>& sorted, double p) {
  SIMREPLAY_CHECK(!sorted.empty());
  const double rank = std::ceil(std::clamp(p, 0.0, 1.0) * static_cast<double>(sorted.size()));
  const size_t i = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return sorted[std::min(i, sorted.size() - 1)];
}

double QuantileLinear(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return SortedQuantileLinear(values, q);
}

double QuantileNearestRank(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  return SortedQuantileNearestRank(values, p);
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  return (upper + *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
}

}  // namespace simreplay
