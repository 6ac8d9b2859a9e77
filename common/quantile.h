// The project's quantile definitions (docs/statistics.md). One is the default; the other is named for
// the places that must return an observed value.
//
//  - QuantileLinear (Hyndman and Fan's type 7, numpy's and R's default): linear interpolation between
//    the order statistics at position q x (n - 1). Used for everything reported about a distribution:
//    the simulator's p50/p95/p99, the validation medians and bootstrap intervals.
//  - QuantileNearestRank (Hyndman and Fan's type 1, the inverse of the empirical CDF): the value at
//    rank ceil(p x n). Used where the result must be one of the observations: calibration parameters
//    that stand for a real process or sample (median worker PSS, median ready wait), the residual
//    ratios the simulator resamples, and the storage probe's latency percentiles.
//
// Both copy and sort their input; p and q are clamped to [0, 1].
#pragma once

#include <vector>

namespace simreplay {

// REQUIRES: !values.empty().
double QuantileLinear(std::vector<double> values, double q);
// REQUIRES: !values.empty().
double QuantileNearestRank(std::vector<double> values, double p);

// The middle value, or the mean of the two middle values; 0 for no values.
double Median(std::vector<double> values);

// Sorted-input variants, for callers that take several quantiles of one sorted vector.
// REQUIRES: sorted ascending and non-empty.
double SortedQuantileLinear(const std::vector<double>& sorted, double q);
double SortedQuantileNearestRank(const std::vector<double>& sorted, double p);

}  // namespace simreplay
