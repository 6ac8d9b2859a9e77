#include "models/scaling_knee.h"

#include <algorithm>

namespace simreplay::models {

std::vector<ScalingPoint> ComputeScaling(const std::vector<ScalingSample>& samples) {
  std::vector<ScalingPoint> curve;
  for (const auto& s : samples) curve.push_back({s.gpus, s.throughput_samples_per_s});
  std::stable_sort(curve.begin(), curve.end(),
                   [](const ScalingPoint& a, const ScalingPoint& b) { return a.gpus < b.gpus; });
  if (curve.empty() || curve[0].throughput_samples_per_s <= 0 || curve[0].gpus <= 0) return curve;
  const double per_gpu0 = curve[0].throughput_samples_per_s / static_cast<double>(curve[0].gpus);
  for (size_t i = 0; i < curve.size(); ++i) {
    auto& c = curve[i];
    c.efficiency = c.throughput_samples_per_s / static_cast<double>(c.gpus) / per_gpu0;
    if (i == 0 || c.gpus == curve[i - 1].gpus) continue;
    c.marginal_fraction = (c.throughput_samples_per_s - curve[i - 1].throughput_samples_per_s) /
                          static_cast<double>(c.gpus - curve[i - 1].gpus) / per_gpu0;
  }
  return curve;
}

int FindKnee(const std::vector<ScalingPoint>& curve, double knee_fraction) {
  for (size_t i = 1; i < curve.size(); ++i) {
    if (curve[i].marginal_fraction < knee_fraction) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace simreplay::models
