#include "models/page_fault_churn.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace simreplay::models {

nlohmann::json PageFaultFit::ToJson() const {
  return {{"samples", samples},
          {"faults_per_sample", faults_per_sample},
          {"fault_cost_s", fault_cost_s},
          {"fault_cost_se_s", fault_cost_se_s},
          {"no_fault_cpu_s", no_fault_cpu_s},
          {"r2", r2},
          {"cpu_share", cpu_share},
          {"measured", measured},
          {"note", note}};
}

PageFaultFit FitPageFaultChurn(const std::vector<FaultSample>& samples) {
  PageFaultFit f;
  f.samples = static_cast<int64_t>(samples.size());
  if (samples.empty()) {
    f.note = "no sample with both cpu_ns and minflt recorded";
    return f;
  }
  const double n = static_cast<double>(samples.size());
  double mean_x = 0, mean_y = 0;
  for (const auto& s : samples) {
    mean_x += s.faults;
    mean_y += s.cpu_s;
  }
  mean_x /= n;
  mean_y /= n;
  f.faults_per_sample = mean_x;
  double sxx = 0, sxy = 0, syy = 0;
  for (const auto& s : samples) {
    sxx += (s.faults - mean_x) * (s.faults - mean_x);
    sxy += (s.faults - mean_x) * (s.cpu_s - mean_y);
    syy += (s.cpu_s - mean_y) * (s.cpu_s - mean_y);
  }
  if (f.samples < kMinFaultSamples) {
    f.note = fmt::format("{} samples with cpu_ns and minflt: at least {} are needed", f.samples, kMinFaultSamples);
    return f;
  }
  if (sxx <= 0 || syy <= 0) {
    f.note = "the samples' page faults (or CPU) do not vary: the cost of a fault cannot be told";
    return f;
  }
  const double slope = sxy / sxx;
  const double rss = std::max(0.0, syy - slope * sxy);
  f.fault_cost_se_s = std::sqrt(rss / (n - 2) / sxx);
  f.r2 = 1 - rss / syy;
  if (!(slope > 2 * f.fault_cost_se_s)) {
    f.note = fmt::format("CPU does not grow with page faults beyond noise (slope {:.3g} s +- {:.2g})", slope,
                         f.fault_cost_se_s);
    return f;
  }
  f.measured = true;
  f.fault_cost_s = slope;
  f.no_fault_cpu_s = mean_y - slope * mean_x;
  f.cpu_share = std::clamp(slope * mean_x / mean_y, 0.0, 0.95);
  f.note = fmt::format("{:.0f} page faults per sample at {:.1f} us each: {:.0f}% of the samples' CPU (R^2 {:.2f})",
                       mean_x, slope * 1e6, 100 * f.cpu_share, f.r2);
  return f;
}

}  // namespace simreplay::models
