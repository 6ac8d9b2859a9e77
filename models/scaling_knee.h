// The scaling knee: the one definition `plan` (per GPU type and sharding) and `what-if` (a sweep over
// cluster.nodes) share. Against the smallest cluster measured, linear scaling means every added GPU
// adds that cluster's throughput per GPU; an added GPU's marginal fraction of linear is
//   (throughput_i - throughput_{i-1}) / (gpus_i - gpus_{i-1}) / (throughput_0 / gpus_0),
// and the knee is the first point whose GPUs, added since the previous point, buy less than a fraction
// (default 0.5) of that. Efficiency is throughput per GPU over the smallest cluster's.
#pragma once

#include <cstdint>
#include <vector>

namespace simreplay::models {

inline constexpr double kDefaultKneeFraction = 0.5;

struct ScalingSample {
  int64_t gpus = 1;
  double throughput_samples_per_s = 0;
};

struct ScalingPoint {
  int64_t gpus = 0;
  double throughput_samples_per_s = 0;
  double efficiency = 1;         // per-GPU throughput / the smallest cluster's
  double marginal_fraction = 1;  // added throughput per added GPU / the smallest cluster's per-GPU throughput
};

// The curve, sorted by GPU count (stable: equal counts keep their order and a marginal fraction of 1).
// Efficiencies and fractions stay 1 when the smallest cluster's throughput is not positive.
std::vector<ScalingPoint> ComputeScaling(const std::vector<ScalingSample>& samples);

// Index of the knee in `curve` (the first point with marginal_fraction < knee_fraction), or -1.
int FindKnee(const std::vector<ScalingPoint>& curve, double knee_fraction);

}  // namespace simreplay::models
