// Restart as a sum of parts with provenance; a one-node preflight's restart is measured only at its
// own scale.
#include "plan/restart_model.h"

#include <gtest/gtest.h>

namespace simreplay::plan {
namespace {

const SourcedValue kRead{60, "input", "checkpoint bytes / read bandwidth"};

TEST(RestartModel, SumOfPartsWithInitialisationGrowingWithRanks) {
  const RestartSpec spec = DefaultRestart();
  // 87 s detection + 300 s rescheduling + 20 s x (ranks / 1024) + 60 s read.
  Restart small = ComputeRestart(spec, 8, 1, kRead, std::nullopt);
  ASSERT_EQ(small.parts.size(), 4u);
  EXPECT_EQ(small.parts[0].name, "detection");
  EXPECT_EQ(small.parts[2].name, "process_group_init");
  EXPECT_NEAR(small.total_s(), 87 + 300 + 20.0 * 8 / 1024 + 60, 1e-9);
  EXPECT_NEAR(ComputeRestart(spec, 65536, 8192, kRead, std::nullopt).total_s(), 87 + 300 + 1280 + 60, 1e-9);
  EXPECT_FALSE(small.measured());
  EXPECT_EQ(small.parts[3].seconds.status, "input");
  // SPARe's quadratic growth when asked for: 20 s x 4^2 at 4,096 ranks.
  RestartSpec quadratic = spec;
  quadratic.init_exponent.value = 2;
  EXPECT_NEAR(ProcessGroupInitS(quadratic, 4096), 320, 1e-9);
}

TEST(RestartModel, OneNodePreflightIsExtrapolatedForOtherSizes) {
  const RestartSpec spec = DefaultRestart();
  const MeasuredRestart measured{420, 1, "preflight p.json"};
  // Its own scale (one node, one rank): the measured part is measured; detection and rescheduling
  // are not measured by a preflight.
  Restart same = ComputeRestart(spec, 1, 1, kRead, measured);
  ASSERT_EQ(same.parts.size(), 3u);
  EXPECT_EQ(same.parts[2].name, "measured_restart");
  EXPECT_EQ(same.parts[2].seconds.status, "measured");
  EXPECT_NEAR(same.total_s(), 87 + 300 + 420, 1e-9);
  // 16 nodes x 8: the measured 420 s extrapolated by the initialisation rule's growth
  // 20 x (128 - 1) / 1024 = 2.48 s, and labelled so.
  Restart big = ComputeRestart(spec, 128, 16, kRead, measured);
  ASSERT_EQ(big.parts.size(), 4u);
  EXPECT_EQ(big.parts[2].seconds.status, "measured (1 node, 1 rank), extrapolated");
  EXPECT_EQ(big.parts[3].name, "process_group_init_growth");
  EXPECT_NEAR(big.parts[3].seconds.value, 20.0 * 127 / 1024, 1e-12);
  EXPECT_FALSE(big.measured());
}

TEST(RestartModel, FixedFigureOfOlderPlansReplacesTheFirstThreeParts) {
  RestartSpec spec = DefaultRestart();
  spec.fixed_s = SourcedValue{900, "input", "plan file"};
  Restart r = ComputeRestart(spec, 1024, 128, kRead, std::nullopt);
  ASSERT_EQ(r.parts.size(), 2u);
  EXPECT_DOUBLE_EQ(r.total_s(), 960);
  EXPECT_EQ(r.parts[0].seconds.status, "input");
}

}  // namespace
}  // namespace simreplay::plan
