// PreparePoint's warnings: oversubscription is counted over every rank on the node.
#include "sim/point_runner.h"

#include <algorithm>
#include <string>

#include <gtest/gtest.h>

namespace simreplay::sim {
namespace {

Result<PreparedPoint> Prepare(int gpus, int workers, int cores, bool pin) {
  const std::string dir = std::string(SIMREPLAY_SOURCE_DIR) + "/examples/quickstart";
  nlohmann::json j = {{"model", "model.json"},
                      {"loader", {{"num_workers", workers}, {"batch_size", 8}, {"pin_memory", pin}}},
                      {"hardware", {{"cpu_cores", cores}, {"gpus", gpus}}},
                      {"train", {{"steps", 4}}}};
  auto s = scenarios::ParseScenario(j, dir + "/scenario.json", dir);
  EXPECT_TRUE(s.ok()) << s.status().message();
  CostCache cache;
  return PreparePoint(*s, &cache);
}

bool Warns(const PreparedPoint& p, const std::string& what) {
  return std::any_of(p.warnings.begin(), p.warnings.end(),
                     [&](const std::string& w) { return w.find(what) != std::string::npos; });
}

// 8 ranks x (8 workers + main) = 72 processes on 64 cores: oversubscribed, though one rank's 9 are
// not. The quickstart model has no measured contention curve, so the prediction rests on an assumed
// one and must say so.
TEST(PreparePoint, OversubscriptionCountsEveryRankOnTheNode) {
  auto eight = Prepare(8, 8, 64, false);
  ASSERT_TRUE(eight.ok()) << eight.status().message();
  EXPECT_TRUE(Warns(*eight, "CPU contention curve assumed: 8 ranks x (8 workers + main process) on 64 cores"));
  auto one = Prepare(1, 8, 64, false);
  ASSERT_TRUE(one.ok());
  EXPECT_FALSE(Warns(*one, "CPU contention curve assumed"));
  // 8 ranks x (7 workers + main) = 64 processes fit; their 8 pin threads do not.
  auto pinned = Prepare(8, 7, 64, true);
  ASSERT_TRUE(pinned.ok());
  EXPECT_TRUE(Warns(*pinned, "CPU contention curve assumed: 8 ranks x (7 workers + main process + pin thread)"));
  auto unpinned = Prepare(8, 7, 64, false);
  ASSERT_TRUE(unpinned.ok());
  EXPECT_FALSE(Warns(*unpinned, "CPU contention curve assumed"));
}

}  // namespace
}  // namespace simreplay::sim
