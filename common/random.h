// The project's one seeded random generator: SplitMix64 (Steele, Lea and Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014; reference code: Vigna, prng.di.unimi.it/splitmix64.c).
// Chosen because its output is fixed by its definition on every platform and compiler (std::
// distributions are not), which keeps outputs byte-identical across machines. Used by the simulator
// (cache hits, step-time noise), the validation bootstrap and the storage probe's seeds.
#pragma once

#include <cmath>
#include <cstdint>

namespace simreplay {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += kGolden);
    return Mix(z);
  }
  // Uniform in [0, 1).
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Integer in [0, n) by modulo (bias below n / 2^64; the simulator's draws). REQUIRES: n > 0.
  uint64_t Below(uint64_t n) { return Next() % n; }
  // Uniform integer in [0, n) by rejection (no modulo bias; the bootstrap's draws). REQUIRES: n >= 1.
  uint64_t UniformIndex(uint64_t n) {
    // Largest multiple of n that fits: draws at or above it are rejected.
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t r;
    do {
      r = Next();
    } while (r >= limit);
    return r % n;
  }
  // Standard normal (Box-Muller, one value per call).
  double Normal() {
    double u1 = Unit();
    double u2 = Unit();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  // A fixed uniform [0, 1) value for (key, seed): the same sample always hits or misses the cache.
  static double HashUnit(uint64_t key, uint64_t seed) {
    return static_cast<double>(Mix(key * kGolden ^ seed) >> 11) * 0x1.0p-53;
  }
  // A well-mixed seed for the independent stream `salt` of `seed`: the first output of
  // Rng(seed + salt x golden ratio), i.e. Mix(seed + (salt + 1) x golden ratio).
  static uint64_t DeriveSeed(uint64_t seed, uint64_t salt) { return Mix(seed + kGolden * (salt + 1)); }

 private:
  static constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;
  static uint64_t Mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  uint64_t state_;
};

}  // namespace simreplay
