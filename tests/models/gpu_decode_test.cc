#include "models/gpu_decode.h"

#include <gtest/gtest.h>

namespace simreplay::models {
namespace {

TEST(GpuDecode, MovesDecodeToTheGpuAndCarriesEncodedBytes) {
  GpuDecodeCosts c;  // 20 us + 1 ns/pixel + 50 us/frame (clips); parse 1 ns/byte on the CPU
  std::vector<GpuDecodeSample> s = {{1000, 500, 1, 100000}, {320, 240, 8, 30000}};
  ApplyGpuDecode(c, 2.0, &s);
  // Image: 20e-6 + 1e-9 x 5e5 = 520 us; CPU 1e-9 x 1e5 = 100 us intrinsic -> 50 us recorded (scale 2).
  EXPECT_NEAR(s[0].gpu_s, 520e-6, 1e-12);
  EXPECT_NEAR(s[0].cpu_s, 50e-6, 1e-12);
  EXPECT_EQ(s[0].h2d_bytes, 100000);
  // Clip: 320 x 240 x 8 = 614400 pixels: 20e-6 + 614.4e-6 + 8 x 50e-6 = 1034.4 us.
  EXPECT_NEAR(s[1].gpu_s, 1034.4e-6, 1e-12);
}

}  // namespace
}  // namespace simreplay::models
