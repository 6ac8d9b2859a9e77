#include "calibrate/cost_regression.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "common/quantile.h"

namespace simreplay::calibrate {

const std::vector<double>& ResidualQuantileProbs() {
  static const std::vector<double> probs = [] {
    std::vector<double> p;
    for (int i = 0; i <= 20; ++i) p.push_back(i / 20.0);
    return p;
  }();
  return probs;
}

ResidualRatios SummarizeResidualRatios(std::vector<double> ratios) {
  ResidualRatios out;
  if (ratios.empty()) return out;
  std::sort(ratios.begin(), ratios.end());
  const auto& probs = ResidualQuantileProbs();
  for (double p : probs) out.quantiles.push_back(SortedQuantileNearestRank(ratios, p));
  const size_t n = ratios.size(), bins = probs.size() - 1;
  for (size_t b = 0; b < bins; ++b) {
    const size_t lo = b * n / bins, hi = (b + 1) * n / bins;
    if (hi > lo) {
      out.bin_means.push_back(std::accumulate(ratios.begin() + static_cast<std::ptrdiff_t>(lo),
                                              ratios.begin() + static_cast<std::ptrdiff_t>(hi), 0.0) /
                              static_cast<double>(hi - lo));
    } else {  // fewer observations than bins: the bin's middle
      out.bin_means.push_back(SortedQuantileNearestRank(ratios, (probs[b] + probs[b + 1]) / 2));
    }
    // Nearest-rank edges and rank bins can disagree by one observation: keep the mean inside its edges.
    out.bin_means.back() = std::clamp(out.bin_means.back(), out.quantiles[b], out.quantiles[b + 1]);
  }
  return out;
}

void ResidualRatios::AddTo(nlohmann::json* fit_json) const {
  (*fit_json)["residual_ratio_quantiles"] = quantiles;
  (*fit_json)["residual_ratio_bin_means"] = bin_means;
}

double RobustFit::Predict(const std::vector<double>& x) const {
  double v = coefficients.empty() ? 0 : coefficients[0];
  for (size_t j = 1; j < coefficients.size() && j - 1 < x.size(); ++j) v += coefficients[j] * x[j - 1];
  return std::max(0.0, v);
}

nlohmann::json RobustFit::ToJson() const {
  nlohmann::json coef = nlohmann::json::object(), range = nlohmann::json::object();
  for (size_t j = 0; j < feature_names.size(); ++j) {
    coef[feature_names[j]] = used[j] ? coefficients[j] : 0.0;
    if (j > 0) range[feature_names[j]] = {feature_min[j], feature_max[j]};
  }
  nlohmann::json unused = nlohmann::json::array();
  for (size_t j = 0; j < feature_names.size(); ++j) {
    if (!used[j]) unused.push_back(feature_names[j]);
  }
  nlohmann::json j = {{"method", "huber_irls"},
                      {"coefficients_s_per_unit", coef},
                      {"unused_features", unused},
                      {"samples", samples},
                      {"r2", r2},
                      {"mape", mape},
                      {"sigma_s", sigma_s},
                      {"mean_s", mean_s},
                      {"range", range},
                      {"iterations", iterations},
                      {"converged", converged},
                      {"low_confidence", low_confidence},
                      {"reasons", reasons}};
  residual_ratios.AddTo(&j);
  return j;
}

namespace {

// Weighted least squares on columns `cols` of the design (column 0 = intercept). Returns false when
// the system is rank deficient, with *dependent set to the design column to drop.
bool SolveWeighted(const Eigen::MatrixXd& design, const Eigen::VectorXd& y, const Eigen::VectorXd& w,
                   const std::vector<int>& cols, Eigen::VectorXd* beta, int* dependent) {
  const Eigen::Index n = design.rows();
  Eigen::MatrixXd a(n, static_cast<Eigen::Index>(cols.size()));
  for (size_t c = 0; c < cols.size(); ++c) a.col(static_cast<Eigen::Index>(c)) = design.col(cols[c]);
  Eigen::VectorXd sw = w.array().sqrt();
  Eigen::MatrixXd aw = sw.asDiagonal() * a;
  Eigen::VectorXd yw = sw.asDiagonal() * y;
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(aw);
  qr.setThreshold(1e-9);
  if (qr.rank() < static_cast<Eigen::Index>(cols.size())) {
    // The last pivoted column is the most dependent one; never drop the intercept.
    const auto& perm = qr.colsPermutation().indices();
    for (Eigen::Index k = static_cast<Eigen::Index>(cols.size()) - 1; k >= 0; --k) {
      int c = cols[static_cast<size_t>(perm[k])];
      if (c != 0) {
        *dependent = c;
        return false;
      }
    }
  }
  *beta = qr.solve(yw);
  return true;
}

}  // namespace

Result<RobustFit> FitHuber(const Eigen::MatrixXd& x, const Eigen::VectorXd& y,
                           const std::vector<std::string>& regressor_names, const std::string& where, double huber_k,
                           int max_iterations) {
  const Eigen::Index n = y.size();
  const Eigen::Index p = x.cols();
  if (n == 0) return Status::InvalidArgument(where + ": no observations to fit");
  if (x.rows() != n || static_cast<Eigen::Index>(regressor_names.size()) != p) {
    return Status::InvalidArgument(where + ": design and observations disagree in size");
  }
  for (Eigen::Index i = 0; i < n; ++i) {
    if (!std::isfinite(y[i]) || y[i] < 0) {
      return Status::InvalidArgument(
          fmt::format("{}: observation {} is {}, expected a finite value >= 0", where, i, y[i]));
    }
    for (Eigen::Index j = 0; j < p; ++j) {
      if (!std::isfinite(x(i, j)))
        return Status::InvalidArgument(fmt::format("{}: feature {} of observation {} is not finite", where,
                                                   regressor_names[static_cast<size_t>(j)], i));
    }
  }
  RobustFit fit;
  fit.feature_names.push_back("intercept");
  for (const auto& name : regressor_names) fit.feature_names.push_back(name);
  fit.samples = n;
  fit.feature_min.assign(static_cast<size_t>(p + 1), 1.0);
  fit.feature_max.assign(static_cast<size_t>(p + 1), 1.0);

  // Design: intercept + regressors scaled to max |value| 1 (conditioning); scale undone at the end.
  Eigen::MatrixXd design(n, p + 1);
  design.col(0).setOnes();
  std::vector<double> col_scale(static_cast<size_t>(p + 1), 1.0);
  std::vector<int> cols = {0};
  for (Eigen::Index j = 0; j < p; ++j) {
    double lo = x.col(j).minCoeff(), hi = x.col(j).maxCoeff();
    fit.feature_min[static_cast<size_t>(j + 1)] = lo;
    fit.feature_max[static_cast<size_t>(j + 1)] = hi;
    double s = std::max(std::abs(lo), std::abs(hi));
    col_scale[static_cast<size_t>(j + 1)] = s > 0 ? s : 1.0;
    design.col(j + 1) = x.col(j) / col_scale[static_cast<size_t>(j + 1)];
    if (hi - lo > 1e-12 * std::max(1.0, s)) cols.push_back(static_cast<int>(j + 1));  // constant: in intercept
  }

  Eigen::VectorXd beta, w = Eigen::VectorXd::Ones(n);
  while (true) {
    int dependent = -1;
    w.setOnes();
    if (!SolveWeighted(design, y, w, cols, &beta, &dependent)) {
      cols.erase(std::find(cols.begin(), cols.end(), dependent));
      continue;
    }
    fit.converged = false;
    fit.iterations = 0;
    bool rank_lost = false;
    for (int it = 0; it < max_iterations; ++it) {
      Eigen::MatrixXd a(n, static_cast<Eigen::Index>(cols.size()));
      for (size_t c = 0; c < cols.size(); ++c) a.col(static_cast<Eigen::Index>(c)) = design.col(cols[c]);
      Eigen::VectorXd r = y - a * beta;
      std::vector<double> rv(r.data(), r.data() + n);
      double med = Median(rv);
      for (auto& v : rv) v = std::abs(v - med);
      double sigma = 1.4826 * Median(rv);
      fit.sigma_s = sigma;
      fit.iterations = it + 1;
      if (!(sigma > 1e-15 * std::max(1.0, y.cwiseAbs().maxCoeff()))) {  // more than half fit exactly
        fit.converged = true;
        break;
      }
      for (Eigen::Index i = 0; i < n; ++i) {
        double u = std::abs(r[i]) / (huber_k * sigma);
        w[i] = u <= 1 ? 1.0 : 1.0 / u;
      }
      Eigen::VectorXd next;
      if (!SolveWeighted(design, y, w, cols, &next, &dependent)) {
        cols.erase(std::find(cols.begin(), cols.end(), dependent));
        rank_lost = true;
        break;
      }
      double change = (next - beta).cwiseAbs().maxCoeff();
      beta = next;
      if (change <= 1e-10 * std::max(beta.cwiseAbs().maxCoeff(), 1e-12)) {
        fit.converged = true;
        break;
      }
    }
    if (rank_lost) continue;
    // No negative slopes: drop the most negative one and refit.
    int worst = -1;
    double worst_value = 0;
    for (size_t c = 1; c < cols.size(); ++c) {
      if (beta[static_cast<Eigen::Index>(c)] < worst_value) {
        worst_value = beta[static_cast<Eigen::Index>(c)];
        worst = cols[c];
      }
    }
    if (worst < 0) break;
    cols.erase(std::find(cols.begin(), cols.end(), worst));
  }

  fit.coefficients.assign(static_cast<size_t>(p + 1), 0.0);
  fit.used.assign(static_cast<size_t>(p + 1), false);
  for (size_t c = 0; c < cols.size(); ++c) {
    fit.coefficients[static_cast<size_t>(cols[c])] =
        beta[static_cast<Eigen::Index>(c)] / col_scale[static_cast<size_t>(cols[c])];
    fit.used[static_cast<size_t>(cols[c])] = true;
  }

  // Quality on the raw data.
  double mean = y.mean(), sse = 0, sst = 0, ape = 0;
  int64_t ape_n = 0;
  std::vector<double> ratios;
  for (Eigen::Index i = 0; i < n; ++i) {
    std::vector<double> xi(static_cast<size_t>(p));
    for (Eigen::Index j = 0; j < p; ++j) xi[static_cast<size_t>(j)] = x(i, j);
    double pred = fit.Predict(xi);
    sse += (y[i] - pred) * (y[i] - pred);
    sst += (y[i] - mean) * (y[i] - mean);
    if (y[i] > 0) {
      ape += std::abs(y[i] - pred) / y[i];
      ++ape_n;
    }
    if (pred > 0) ratios.push_back(y[i] / pred);
  }
  fit.mean_s = mean;
  fit.r2 = sst > 0 ? 1 - sse / sst : (sse > 0 ? 0.0 : 1.0);
  fit.mape = ape_n > 0 ? ape / static_cast<double>(ape_n) : 0;
  fit.residual_ratios = SummarizeResidualRatios(std::move(ratios));
  if (n < kMinConfidentSamples) fit.reasons.push_back(fmt::format("only {} samples (< {})", n, kMinConfidentSamples));
  if (y.maxCoeff() <= 0) fit.reasons.push_back("every observation is zero");
  if (!fit.converged) fit.reasons.push_back("IRLS did not converge");
  if (fit.mape > 0.5) fit.reasons.push_back(fmt::format("poor fit: MAPE {:.2f}", fit.mape));
  fit.low_confidence = !fit.reasons.empty();
  return fit;
}

}  // namespace simreplay::calibrate
