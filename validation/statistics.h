// Statistics for A/B validation: order statistics, a seeded percentile bootstrap (so a report is a
// pure function of its measurements), and rank agreement (Kendall tau-b). Plain functions on vectors;
// no I/O. Empty inputs are programmer errors (SIMREPLAY_CHECK) except where stated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace simreplay::validation {

double Mean(const std::vector<double>& values);
// Median: the linear (type 7) quantile at 0.5 (common/quantile.h). REQUIRES: non-empty.
double Median(const std::vector<double>& values);
// Sample standard deviation (n - 1); 0 for fewer than two values.
double StdDev(const std::vector<double>& values);

enum class Statistic { kMedian, kMean };

struct Interval {
  double low = 0;
  double high = 0;
  bool Contains(double x) const { return x >= low && x <= high; }
};

struct BootstrapOptions {
  int resamples = 2000;      // bootstrap replicates
  uint64_t seed = 1;         // the same seed and values give the same interval
  double confidence = 0.95;  // two-sided, percentile method
};

// Percentile bootstrap interval of `statistic` over `values`. With one value the interval is that
// value (no spread can be estimated; the report says so). REQUIRES: non-empty.
Interval BootstrapInterval(const std::vector<double>& values, Statistic statistic, const BootstrapOptions& options);

// Paired bootstrap of the relative change median_i(b_i / a_i) - 1 (pairs resampled together, so slow
// drift of the machine that hits both members of a pair cancels). REQUIRES: equal sizes, non-empty,
// a_i > 0. `point` receives the statistic on the original pairs.
Interval PairedRatioInterval(const std::vector<double>& a, const std::vector<double>& b,
                             const BootstrapOptions& options, double* point);

// Kendall's tau-b between two rankings given as values (ties handled by the tau-b correction).
// Returns 1 for identical orders, -1 for reversed ones, 0 when either side is constant or has < 2 items.
double KendallTauB(const std::vector<double>& x, const std::vector<double>& y);

// Index of the largest value (the first one on ties). REQUIRES: non-empty.
size_t ArgMax(const std::vector<double>& values);

}  // namespace simreplay::validation
