// The host screen: its JSON round trip and bad input, what it reports about this host, and that it sees
// foreign load. The last check is about timing, so it asserts only the direction with a wide margin
// (foreign spinners on half the cores leave about 2/3 of the cores to the screen; other tests running
// beside it can only lower that further), and takes the lowest of three screens.
#include "validation/host_capacity.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace simreplay::validation {
namespace {

int AffinityCores() {
  cpu_set_t set;
  EXPECT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  return CPU_COUNT(&set);
}

TEST(HostCapacity, ReportsTheCoresThisProcessMayUseAndAShareBetweenZeroAndOne) {
  const HostCapacity h = MeasureHostCapacity(0.01);
  EXPECT_EQ(h.cores, AffinityCores());
  EXPECT_GT(h.single_core_s, 0);
  EXPECT_GT(h.all_cores_s, 0);
  EXPECT_GT(h.delivered_cores, 0);
  EXPECT_LE(h.delivered_cores, h.cores);
  EXPECT_DOUBLE_EQ(h.delivered_share(), h.delivered_cores / h.cores);
  EXPECT_GT(h.fresh_page_touch_us, 0);
}

TEST(HostCapacity, JsonRoundTripsAndBadScreensAreRefused) {
  HostCapacity h;
  h.cores = 4;
  h.single_core_s = 0.1;
  h.all_cores_s = 0.125;
  h.delivered_cores = 3.2;
  h.fresh_page_touch_us = 11.5;
  auto back = HostCapacityFromJson(h.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->ToJson(), h.ToJson());
  EXPECT_DOUBLE_EQ(h.ToJson()["delivered_share"].get<double>(), 0.8);
  EXPECT_EQ(HostCapacity{}.delivered_share(), 0);  // not screened
  for (const char* bad : {R"({"cores": 2, "single_core_s": 0.1, "all_cores_s": 0.1})",
                          R"({"cores": -1, "single_core_s": 0.1, "all_cores_s": 0.1, "delivered_cores": 0})",
                          R"({"cores": 2, "single_core_s": -0.1, "all_cores_s": 0.1, "delivered_cores": 1})",
                          R"({"cores": 2, "single_core_s": 0.1, "all_cores_s": 0.1, "delivered_cores": 2.5})",
                          R"({"cores": "2", "single_core_s": 0.1, "all_cores_s": 0.1, "delivered_cores": 1})",
                          R"([1, 2])"}) {
    auto r = HostCapacityFromJson(nlohmann::json::parse(bad));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("host screen"), std::string::npos) << r.status().message();
  }
}

// A window is judged on the mean of the screens on either side; an unscreened side (--no-host-screen)
// makes it unknown (-1), never "under the bound".
TEST(HostCapacity, MeanShareOfAWindowIsUnknownWhenASideWasNotScreened) {
  HostCapacity full, low;
  full.cores = low.cores = 2;
  full.single_core_s = low.single_core_s = 0.1;
  full.all_cores_s = 0.1;
  full.delivered_cores = 2;
  low.all_cores_s = 0.2;
  low.delivered_cores = 1;
  EXPECT_DOUBLE_EQ(MeanDeliveredShare(full, low), 0.75);
  EXPECT_EQ(MeanDeliveredShare(HostCapacity{}, low), -1);
  EXPECT_EQ(MeanDeliveredShare(full, HostCapacity{}), -1);
}

// The hint names the fault cost and the A/B to try, only when faults are expensive.
TEST(HostCapacity, FaultCostHintSpeaksOnlyWhenFaultsAreExpensive) {
  HostCapacity h;
  h.fresh_page_touch_us = 12.3;
  const std::string hint = FaultCostHint(h);
  EXPECT_NE(hint.find("12.3 us"), std::string::npos) << hint;
  EXPECT_NE(hint.find("MALLOC_TRIM_THRESHOLD_"), std::string::npos) << hint;
  h.fresh_page_touch_us = 0.4;
  EXPECT_EQ(FaultCostHint(h), "");
  EXPECT_EQ(FaultCostHint(HostCapacity{}), "");  // not measured
}

TEST(HostCapacity, SeesCoresTakenByForeignThreads) {
  const int cores = AffinityCores();
  if (cores < 2) GTEST_SKIP() << "one core: running alone and on every core are the same thing";
  std::atomic<bool> stop{false};
  std::vector<std::thread> spinners;
  for (int i = 0; i < std::max(1, cores / 2); ++i) {
    spinners.emplace_back([&stop] {
      volatile unsigned long x = 0;
      while (!stop.load(std::memory_order_relaxed)) x = x + 1;
    });
  }
  double lowest = 1;
  for (int i = 0; i < 3; ++i) lowest = std::min(lowest, MeasureHostCapacity(0.05).delivered_share());
  stop = true;
  for (auto& t : spinners) t.join();
  EXPECT_LT(lowest, kMinDeliveredShare);
}

}  // namespace
}  // namespace simreplay::validation
