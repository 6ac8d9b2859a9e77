#include "calibrate/format_model.h"

#include <algorithm>

namespace simreplay::calibrate {

Result<RobustFit> FitContainerReads(const std::vector<double>& read_bytes, const std::vector<double>& read_s,
                                    const std::string& container, const std::string& source,
                                    models::FormatParams* params) {
  Eigen::MatrixXd x(static_cast<Eigen::Index>(read_bytes.size()), 1);
  Eigen::VectorXd y(static_cast<Eigen::Index>(read_s.size()));
  for (size_t i = 0; i < read_bytes.size(); ++i) {
    x(static_cast<Eigen::Index>(i), 0) = read_bytes[i];
    y[static_cast<Eigen::Index>(i)] = read_s[i];
  }
  auto fit = FitHuber(x, y, {"bytes"}, source + ": read cost of format " + container);
  if (!fit.ok()) return fit.status();
  auto& c = params->containers[container];
  if (fit->used[1] && fit->coefficients[1] > 0) {
    c.open_s = 0;
    c.samples_per_open = 1;
    c.per_read_latency_s = std::max(0.0, fit->coefficients[0]);
    c.bandwidth_bytes_per_s = 1.0 / fit->coefficients[1];
    c.assumed = false;
    c.source = "fit of read times in " + source;
  }
  return fit;
}

}  // namespace simreplay::calibrate
