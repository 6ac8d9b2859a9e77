// Robust regression of per-sample stage costs (seconds) on sample features (bytes read, decoded
// pixels, frames), by Huber iteratively reweighted least squares with Eigen, plus the empirical
// distribution of what the regression does not explain. Used per (format, stage) by the calibrator so
// that costs can be synthesised for samples and formats the trace did not hold:
//   cost = max(0, c0 + c1 * bytes + c2 * pixels + c3 * frames) * ratio,  ratio ~ residual quantiles.
//
// Contract of every fit: slopes are never negative (a feature whose slope comes out negative is
// dropped and the fit redone, so extrapolating to larger samples never predicts a cheaper one);
// features that are constant or collinear in the data are dropped (their effect sits in the
// intercept) and marked unused; a fit on fewer samples than kMinConfidentSamples, or with a poor R^2,
// is flagged low_confidence with the reasons, never silently trusted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include "common/status.h"

namespace simreplay::calibrate {

inline constexpr double kHuberK = 1.345;  // 95% efficiency under Gaussian noise
inline constexpr int64_t kMinConfidentSamples = 20;
// Probabilities at which the residual ratio observed / predicted is tabulated (0, 0.05, ..., 1).
const std::vector<double>& ResidualQuantileProbs();

// The empirical distribution of the residual ratios observed / predicted, as synthesised samples draw
// from it: `quantiles` at ResidualQuantileProbs() and `bin_means`, the mean ratio of the observations
// between each pair of neighbouring quantiles (by rank: bin i holds the ranks [i n / B, (i+1) n / B) of
// B = quantiles - 1 bins). The means keep a heavy tail's weight: one sample 190x its prediction is the
// maximum, and a draw that interpolated linearly from the 95th percentile up to it made the top 5% of
// the synthesised samples average half of that (docs/modelling.md, "Synthesised samples").
struct ResidualRatios {
  std::vector<double> quantiles, bin_means;
  void AddTo(nlohmann::json* fit_json) const;  // residual_ratio_quantiles, residual_ratio_bin_means
};
ResidualRatios SummarizeResidualRatios(std::vector<double> ratios);

struct RobustFit {
  std::vector<std::string> feature_names;        // "intercept" first, then the regressors, in column order
  std::vector<double> coefficients;              // seconds per unit of each feature (0 where unused)
  std::vector<bool> used;                        // false: dropped (constant, collinear or negative slope)
  std::vector<double> feature_min, feature_max;  // measured range of each regressor (intercept: 1, 1)
  int64_t samples = 0;
  double r2 = 0;       // 1 - SSE / SST on the raw (unweighted) data; 0 when SST is 0 and SSE > 0
  double mape = 0;     // mean |observed - predicted| / observed over observations > 0
  double sigma_s = 0;  // robust residual scale (1.4826 x MAD), seconds
  double mean_s = 0;   // mean observation, seconds
  int iterations = 0;
  bool converged = false;
  ResidualRatios residual_ratios;  // observed / predicted (empty when no prediction was > 0)
  bool low_confidence = false;
  std::vector<std::string> reasons;  // why low_confidence

  // Prediction for one sample; `x` holds the regressors (no intercept), in column order.
  double Predict(const std::vector<double>& x) const;
  nlohmann::json ToJson() const;
};

// Fits y ~ intercept + X by Huber IRLS. X is n x p (p may be 0), y has n finite entries >= 0.
// InvalidArgument when n == 0, sizes disagree or an entry is not finite; `where` names the data.
Result<RobustFit> FitHuber(const Eigen::MatrixXd& x, const Eigen::VectorXd& y,
                           const std::vector<std::string>& regressor_names, const std::string& where,
                           double huber_k = kHuberK, int max_iterations = 100);

}  // namespace simreplay::calibrate
