// The error band of predicted training throughput against real runs: the one home of the figure that
// plans widen their days by and that diagnose, tune and what-if put around every predicted gain.
// Relative errors (predicted - measured) / measured of configurations predicted from another
// configuration's trace (docs/validation.md).
#pragma once

#include <string>

namespace simreplay::models {

struct ErrorBand {
  double error_low = -0.208;
  double error_high = 0.131;
  std::string source =
      "docs/validation.md, the two quiet suite runs of 2026-12-01 (commits 76c8f82 and 28e4ca7): train "
      "throughput errors -20.8% to +13.1% (held-out and development cases)";
  // Where the band was measured, so nobody reads it as holding beyond that: what every use must say.
  std::string scope =
      "one 2-core host; the accelerator step emulated (a sleep of the stated step time: no GPU); single-node "
      "cases of 1 rank, and the multi-node cases' 2-4 emulated nodes in network namespaces on that host; "
      "predictions of larger clusters, other machines or real GPU steps lie outside it";
};

// A predicted value's interval [value x (1 + low), value x (1 + high)]: the measured value lies there
// when the prediction errs as the validated ones did. The prediction overestimates by up to `high`,
// so the real value can be as low as value / (1 + high); symmetric for `low`.
// The smallest predicted gain any output (diagnose, tune, what-if) calls worth acting on: below it a
// change is reported, never recommended (docs/advice.md).
inline constexpr double kMinActionableGain = 0.05;

inline double BandLow(const ErrorBand& b, double predicted) { return predicted / (1 + b.error_high); }
inline double BandHigh(const ErrorBand& b, double predicted) { return predicted / (1 + b.error_low); }

}  // namespace simreplay::models
