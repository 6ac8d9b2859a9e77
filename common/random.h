// The one random generator of a simulation point: SplitMix64, chosen because its output is fixed by
// its definition on every platform and compiler (std:: distributions are not), which keeps outputs
// byte-identical across machines.
#pragma once

#include <cmath>
#include <cstdint>

namespace simreplay::sim {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    return Mix(z);
  }
  // Uniform in [0, 1).
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n). REQUIRES: n > 0.
  uint64_t Below(uint64_t n) { return Next() % n; }
  // Standard normal (Box-Muller, one value per call).
  double Normal() {
    double u1 = Unit();
    double u2 = Unit();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  // A fixed uniform [0, 1) value for (key, seed): the same sample always hits or misses the cache.
  static double HashUnit(uint64_t key, uint64_t seed) {
    return static_cast<double>(Mix(key * 0x9E3779B97F4A7C15ULL ^ seed) >> 11) * 0x1.0p-53;
  }

 private:
  static uint64_t Mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  uint64_t state_;
};

}  // namespace simreplay::sim
