#include "common/random.h"

#include <set>

#include <gtest/gtest.h>

namespace simreplay {
namespace {

TEST(Rng, MatchesSplitMix64ReferenceOutput) {
  // Reference values of SplitMix64 seeded with 0 (Vigna's splitmix64.c).
  Rng r(0);
  EXPECT_EQ(r.Next(), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(r.Next(), 0x6E789E6AA1B965F4ull);
}

TEST(Rng, UniformIndexStaysInRangeAndIsSeeded) {
  Rng a(42), b(42);
  std::set<uint64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    uint64_t x = a.UniformIndex(5);
    EXPECT_LT(x, 5u);
    EXPECT_EQ(x, b.UniformIndex(5));
    seen.insert(x);
  }
  EXPECT_EQ(seen.size(), 5u);
}

TEST(Rng, DeriveSeedIsTheFirstOutputOfTheSaltedStream) {
  // DeriveSeed(s, k) = Mix(s + (k + 1) x golden) = Rng(s + k x golden).Next().
  const uint64_t golden = 0x9E3779B97F4A7C15ULL;
  EXPECT_EQ(Rng::DeriveSeed(7, 0), Rng(7).Next());
  EXPECT_EQ(Rng::DeriveSeed(7, 3), Rng(7 + 3 * golden).Next());
  EXPECT_NE(Rng::DeriveSeed(7, 1), Rng::DeriveSeed(7, 2));
}

TEST(Rng, UnitIsInUnitInterval) {
  Rng r(1);
  for (int i = 0; i < 1000; ++i) {
    double u = r.Unit();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}

}  // namespace
}  // namespace simreplay
