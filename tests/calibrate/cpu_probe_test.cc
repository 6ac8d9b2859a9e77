#include "calibrate/cpu_probe.h"

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace simreplay::calibrate {
namespace {

class TempDir {
 public:
  TempDir() {
    std::string pattern = ::testing::TempDir() + "cpu_probe_test.XXXXXX";
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    return p;
  }

 private:
  std::string path_;
};

TEST(ContentionFactor, ClosedForm) {
  // C = 2, s = 0.1, o = 0.2: f(1) = 1; f(2) = 1.1 (both cores busy); f(3) = 1.1 x (1 + 0.2 x 1/2) = 1.21;
  // f(4) = 1.1 x (1 + 0.2 x 2/2) = 1.32. One core: no shared-core term, f(2) = 1 + 0.2 x 1/1 = 1.2.
  EXPECT_DOUBLE_EQ(ContentionFactor(1, 2, 0.1, 0.2), 1.0);
  EXPECT_NEAR(ContentionFactor(2, 2, 0.1, 0.2), 1.1, 1e-12);
  EXPECT_NEAR(ContentionFactor(3, 2, 0.1, 0.2), 1.21, 1e-12);
  EXPECT_NEAR(ContentionFactor(4, 2, 0.1, 0.2), 1.32, 1e-12);
  EXPECT_NEAR(ContentionFactor(2, 1, 0.1, 0.2), 1.2, 1e-12);
  // Concurrency below one execution counts as one.
  EXPECT_DOUBLE_EQ(ContentionFactor(0.5, 2, 0.1, 0.2), 1.0);
}

std::vector<CurvePoint> Exact(double c0, double s, double o, int cores, int max_n) {
  std::vector<CurvePoint> pts;
  for (int n = 1; n <= max_n; ++n) pts.push_back({static_cast<double>(n), c0 * ContentionFactor(n, cores, s, o)});
  return pts;
}

TEST(FitContentionCurve, RecoversGridParametersExactly) {
  // Points made from c0 = 5 ms, s = 0.15, o = 0.3 on 2 cores (both on the 0.0025 grid): the fit returns
  // them with zero residual, and keeps the overhead (without it the fit is clearly worse).
  auto fit = FitContentionCurve(Exact(0.005, 0.15, 0.3, 2, 4), 2);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_NEAR(fit->slowdown, 0.15, 1e-9);
  EXPECT_NEAR(fit->overhead, 0.3, 1e-9);
  EXPECT_NEAR(fit->base_cost, 0.005, 1e-12);
  EXPECT_LT(fit->rms_log_error, 1e-9);
  EXPECT_TRUE(fit->overhead_kept);
  EXPECT_GT(fit->rms_log_error_without_overhead, 0.01);
}

TEST(FitContentionCurve, NoOverheadInTheDataKeepsNone) {
  // s = 0.1, o = 0: the unconstrained fit finds o = 0 and the overhead is not kept.
  auto fit = FitContentionCurve(Exact(0.004, 0.1, 0.0, 2, 4), 2);
  ASSERT_TRUE(fit.ok());
  EXPECT_NEAR(fit->slowdown, 0.1, 1e-9);
  EXPECT_EQ(fit->overhead, 0.0);
  EXPECT_FALSE(fit->overhead_kept);
}

TEST(FitContentionCurve, SmallOverheadWithinNoiseIsNotKept) {
  // o = 0.01 on 4 points: the fit without it is off by < 1% rms, so the data do not show it.
  auto fit = FitContentionCurve(Exact(0.004, 0.1, 0.01, 2, 4), 2);
  ASSERT_TRUE(fit.ok());
  EXPECT_FALSE(fit->overhead_kept);
  EXPECT_EQ(fit->overhead, 0.0);
  EXPECT_NEAR(fit->overhead_unconstrained, 0.01, 1e-9);
}

TEST(FitContentionCurve, EachRoundHasItsOwnLevel) {
  // Two rounds of k = 1..6 from s = 0.2, o = 0.1 on 2 cores, the second round's host 20% slower (every
  // cost x 1.2): per-round levels recover the curve exactly, and the F-test keeps the overhead.
  std::vector<CurvePoint> pts;
  for (int round = 0; round < 2; ++round) {
    for (int n = 1; n <= 6; ++n) {
      pts.push_back({static_cast<double>(n), (round ? 1.2 : 1.0) * 0.004 * ContentionFactor(n, 2, 0.2, 0.1), round});
    }
  }
  auto fit = FitContentionCurve(pts, 2);
  ASSERT_TRUE(fit.ok());
  EXPECT_NEAR(fit->slowdown, 0.2, 1e-9);
  EXPECT_NEAR(fit->overhead, 0.1, 1e-9);
  EXPECT_LT(fit->rms_log_error, 1e-9);
  EXPECT_TRUE(fit->overhead_kept);
  // Pooled into one round, the 20% step between rounds is noise the curve cannot explain.
  for (auto& p : pts) p.block = 0;
  auto pooled = FitContentionCurve(pts, 2);
  ASSERT_TRUE(pooled.ok());
  EXPECT_GT(pooled->rms_log_error, 0.05);
}

TEST(FitContentionCurve, OverheadWithinTheScatterIsNotKept) {
  // o = 0.03 under +-4% alternating scatter on 8 points: the F-test does not keep it.
  std::vector<CurvePoint> pts;
  for (int round = 0; round < 2; ++round) {
    for (int n = 1; n <= 4; ++n) {
      const double scatter = ((n + round) % 2 == 0) ? 1.04 : 0.96;
      pts.push_back({static_cast<double>(n), scatter * 0.004 * ContentionFactor(n, 2, 0.1, 0.03), round});
    }
  }
  auto fit = FitContentionCurve(pts, 2);
  ASSERT_TRUE(fit.ok());
  EXPECT_FALSE(fit->overhead_kept) << fit->note;
  EXPECT_EQ(fit->overhead, 0.0);
  EXPECT_LT(fit->overhead_f, fit->overhead_f_critical);
}

TEST(FitContentionCurve, RejectsTooFewLevelsAndBadCosts) {
  EXPECT_FALSE(FitContentionCurve({{1, 0.01}, {1, 0.011}}, 2).ok());
  EXPECT_FALSE(FitContentionCurve({{1, 0.01}, {2, -1}}, 2).ok());
  EXPECT_FALSE(FitContentionCurve({{1, 0.01}, {2, NAN}}, 2).ok());
  EXPECT_FALSE(FitContentionCurve({{1, 0.01}, {2, 0.02}}, 0).ok());
}

TEST(FitContentionCurve, IsDeterministic) {
  std::vector<CurvePoint> pts = {{1, 0.0051}, {2, 0.0056}, {3, 0.0063}, {4, 0.0069}, {1, 0.0050}, {4, 0.0071}};
  auto a = FitContentionCurve(pts, 2);
  auto b = FitContentionCurve(pts, 2);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->ToJson().dump(), b->ToJson().dump());
}

std::string ProbeDoc(const std::string& points) {
  return R"({"schema": "simreplay.probe-cpu/1", "host": {"cores": 2}, "points": [)" + points + "]}";
}

TEST(ReadCpuProbeFile, ReadsPointsAndDerivesCosts) {
  TempDir dir;
  const std::string path = dir.Write(
      "p.json", ProbeDoc(R"({"workers": 1, "wall_s": 2, "throughput_samples_per_s": 200, "getitem_cpu_s_mean": 0.004,
                           "getitem_wall_s_mean": 0.0045, "main_cpu_s": 0.2, "loadavg_1m": [0.5, 0.6]},
                          {"workers": 3, "round": 1, "wall_s": 2, "throughput_samples_per_s": 300,
                           "getitem_cpu_s_mean": 0.005, "getitem_wall_s_mean": 0.012, "main_cpu_s": 0.4})"));
  auto probe = ReadCpuProbeFile(path);
  ASSERT_TRUE(probe.ok()) << probe.status().message();
  EXPECT_EQ(probe->cores, 2);
  ASSERT_EQ(probe->points.size(), 2u);
  EXPECT_EQ(probe->points[1].round, 1);
  EXPECT_DOUBLE_EQ(probe->points[0].loadavg_1m, 0.5);
  // Usable cores: k = 1 -> min(1, 2 - 0.1) = 1 -> 1 / 200 = 5 ms; k = 3 -> min(3, 2 - 0.2) = 1.8 ->
  // 1.8 / 300 = 6 ms of core time per delivered sample.
  auto cost = ThroughputCostPoints(*probe);
  ASSERT_EQ(cost.size(), 2u);
  EXPECT_NEAR(cost[0].cost, 0.005, 1e-12);
  EXPECT_NEAR(cost[1].cost, 0.006, 1e-12);
  auto cpu = ThreadCpuPoints(*probe);
  EXPECT_NEAR(cpu[1].cost, 0.005, 1e-12);
  EXPECT_EQ(cpu[1].n, 3);
}

TEST(ReadCpuProbeFile, PageFaultsAndTheInlinePointAreOptional) {
  TempDir dir;
  const std::string point =
      R"({"workers": 1, "wall_s": 2, "throughput_samples_per_s": 200, "getitem_cpu_s_mean": 0.004,
          "getitem_wall_s_mean": 0.0045, "main_cpu_s": 0.2, "minflt_per_sample_mean": 57.5})";
  const std::string path =
      dir.Write("p.json", R"({"schema": "simreplay.probe-cpu/1", "host": {"cores": 2}, "points": [)" + point +
                              R"(], "inline": {"throughput_samples_per_s": 240, "getitem_cpu_s_mean": 0.003,
                                     "minflt_per_sample_mean": 43})" +
                              "}");
  auto probe = ReadCpuProbeFile(path);
  ASSERT_TRUE(probe.ok()) << probe.status().message();
  EXPECT_DOUBLE_EQ(probe->points[0].minflt_per_sample, 57.5);
  ASSERT_TRUE(probe->inline_point.has_value());
  EXPECT_DOUBLE_EQ(probe->inline_point->getitem_cpu_s, 0.003);
  EXPECT_DOUBLE_EQ(probe->inline_point->minflt_per_sample, 43);
  // Older probes: neither field.
  auto old = ReadCpuProbeFile(dir.Write("old.json", ProbeDoc(R"({"workers": 1, "wall_s": 2,
      "throughput_samples_per_s": 200, "getitem_cpu_s_mean": 0.004, "getitem_wall_s_mean": 0.0045, "main_cpu_s": 0.2})")));
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_EQ(old->points[0].minflt_per_sample, -1);
  EXPECT_FALSE(old->inline_point.has_value());
  // A negative count or a malformed inline point names the field.
  auto bad = ReadCpuProbeFile(
      dir.Write("bad.json", R"({"schema": "simreplay.probe-cpu/1", "host": {"cores": 2}, "points": [)" + point +
                                R"(], "inline": {"throughput_samples_per_s": 240, "getitem_cpu_s_mean": 0.003,
                                       "minflt_per_sample_mean": -1}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.json: inline.minflt_per_sample_mean"), std::string::npos)
      << bad.status().message();
  auto bad2 = ReadCpuProbeFile(dir.Write(
      "bad2.json",
      R"({"schema": "simreplay.probe-cpu/1", "host": {"cores": 2}, "points": [)" + point + R"(], "inline": 7})"));
  ASSERT_FALSE(bad2.ok());
  EXPECT_NE(bad2.status().message().find("bad2.json: inline: expected an object"), std::string::npos)
      << bad2.status().message();
}

TEST(ProbeFaultFactors, BringEachPointToTheReferenceFaultLevel) {
  // CPU per sample = 2 ms + 10 us per fault. Round 0's one-worker point fell into the few-fault regime
  // (50 faults: 2.5 ms), round 1's into the many-fault one (200: 4 ms), and the two-worker points sat at
  // 150 (3.5 ms). Brought to 150 faults, both rounds show the same concurrency effect; as measured,
  // the first round's contrast is 4.6 times the second's.
  CpuProbe probe;
  probe.cores = 2;
  auto point = [](int workers, int round, double faults, double concurrency) {
    CpuProbePoint p;
    p.workers = workers;
    p.round = round;
    p.wall_s = 2;
    p.minflt_per_sample = faults;
    p.getitem_cpu_s = (0.002 + 1e-5 * faults) * concurrency;
    p.throughput_samples_per_s = workers / p.getitem_cpu_s;
    return p;
  };
  probe.points = {point(1, 0, 50, 1.0), point(2, 0, 150, 1.3), point(1, 1, 200, 1.0), point(2, 1, 150, 1.3)};
  const std::vector<double> factors = ProbeFaultFactors(probe, 0.002, 1e-5, 150);
  ASSERT_EQ(factors.size(), 4u);
  EXPECT_NEAR(factors[0], 3.5 / 2.5, 1e-12);
  EXPECT_NEAR(factors[1], 1.0, 1e-12);
  EXPECT_NEAR(factors[2], 3.5 / 4.0, 1e-12);
  const auto cpu = ThreadCpuPoints(probe, factors);
  EXPECT_NEAR(cpu[1].cost / cpu[0].cost, 1.3, 1e-12);
  EXPECT_NEAR(cpu[3].cost / cpu[2].cost, 1.3, 1e-12);
  const auto raw = ThreadCpuPoints(probe);
  EXPECT_NEAR(raw[1].cost / raw[0].cost, 1.3 * 3.5 / 2.5, 1e-12);
  EXPECT_NEAR(raw[3].cost / raw[2].cost, 1.3 * 3.5 / 4.0, 1e-12);
  // The throughput curve's points scale alike; a point without a fault count keeps its cost.
  EXPECT_NEAR(ThroughputCostPoints(probe, factors)[0].cost, ThroughputCostPoints(probe)[0].cost * 3.5 / 2.5, 1e-15);
  probe.points[0].minflt_per_sample = -1;
  EXPECT_EQ(ProbeFaultFactors(probe, 0.002, 1e-5, 150)[0], 1.0);
}

TEST(ReadCpuProbeFile, ForeignLoadIsWhatTheHostSpentBesideTheProbe) {
  // Point 1: host 1.5 busy cores, probe (0.2 + 1.8) / 2 = 1.0 -> 0.5 foreign; point 2: host 2.0, probe
  // (0.4 + 3.2) / 2 = 1.8 -> 0.2 foreign; mean 0.35. Without the fields: -1.
  TempDir dir;
  const std::string path = dir.Write(
      "p.json", ProbeDoc(R"({"workers": 1, "wall_s": 2, "throughput_samples_per_s": 200, "getitem_cpu_s_mean": 0.004,
                           "getitem_wall_s_mean": 0.0045, "main_cpu_s": 0.2, "workers_cpu_s": 1.8, "host_busy_cores": 1.5},
                          {"workers": 2, "wall_s": 2, "throughput_samples_per_s": 300, "getitem_cpu_s_mean": 0.005,
                           "getitem_wall_s_mean": 0.012, "main_cpu_s": 0.4, "workers_cpu_s": 3.2, "host_busy_cores": 2.0})"));
  auto probe = ReadCpuProbeFile(path);
  ASSERT_TRUE(probe.ok()) << probe.status().message();
  EXPECT_NEAR(ProbeForeignBusyCores(*probe), 0.35, 1e-12);
  for (auto& p : probe->points) p.host_busy_cores = -1;
  EXPECT_EQ(ProbeForeignBusyCores(*probe), -1);
}

TEST(ReadCpuProbeFile, BadInputNamesFileAndField) {
  TempDir dir;
  struct Case {
    std::string text;
    std::string expect;
  };
  const std::string ok_point =
      R"({"workers": 1, "wall_s": 2, "throughput_samples_per_s": 200, "getitem_cpu_s_mean": 0.004,
          "getitem_wall_s_mean": 0.0045, "main_cpu_s": 0.2})";
  for (const Case& c : std::vector<Case>{
           {R"({"schema": "simreplay.probe-cpu/2", "host": {"cores": 2}, "points": []})", "schema"},
           {R"({"schema": "simreplay.probe-cpu/1", "host": {"cores": 0}, "points": [)" + ok_point + "]}", "host.cores"},
           {ProbeDoc(""), "points"},
           {ProbeDoc(R"({"workers": 0})"), "points[0].workers"},
           {ProbeDoc(R"({"workers": 1, "wall_s": 2, "throughput_samples_per_s": -5})"),
            "points[0].throughput_samples_per_s"},
           {ProbeDoc(R"({"workers": 1, "wall_s": 2, "throughput_samples_per_s": 5})"), "points[0].getitem_cpu_s_mean"},
           {ProbeDoc(ok_point + ","), "p.json:"},
           {ProbeDoc(R"({"workers": 1, "wall_s": 2, "throughput_samples_per_s": 200, "getitem_cpu_s_mean": 0.004,
                        "getitem_wall_s_mean": 0.0045, "main_cpu_s": 0.2, "wake_delay_s_mean": -0.001})"),
            "points[0].wake_delay_s_mean"},
           {R"({"schema": "simreplay.probe-cpu/1", "host": {"cores": 2}, "baseline_wake": 3, "points": [)" + ok_point +
                "]}",
            "baseline_wake"},
           {ProbeDoc(R"({"workers": 1, "wall_s": 2, "throughput_samples_per_s": 200, "getitem_cpu_s_mean": 0.004,
                        "getitem_wall_s_mean": 0.0045, "main_cpu_s": 0.2, "wake_delay_s_mean": 1e300})"),
            "points[0].wake_delay_s_mean"},
           {"[1, 2]", "(document)"},
       }) {
    const std::string path = dir.Write("p.json", c.text);
    auto probe = ReadCpuProbeFile(path);
    ASSERT_FALSE(probe.ok()) << c.text;
    EXPECT_NE(probe.status().message().find(path.substr(0, path.size() - 6)), std::string::npos)
        << probe.status().message();
    EXPECT_NE(probe.status().message().find(c.expect), std::string::npos) << probe.status().message();
  }
}

// Points at k = 1..4 on 2 cores and the baseline: d = 0.1 ms + 0.3 ms x max(0, k + 1 - 2), exactly.
TEST(FitWakeDelay, RecoversBaseAndPerExcessRunnable) {
  CpuProbe probe;
  probe.file = "p.json";
  probe.cores = 2;
  probe.baseline_wake_delay_s = 0.0001;
  for (int k = 1; k <= 4; ++k) {
    CpuProbePoint p;
    p.workers = k;
    p.wake_delay_s = 0.0001 + 0.0003 * std::max(0, k + 1 - 2);
    probe.points.push_back(p);
  }
  auto fit = FitWakeDelay(probe);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_NEAR(fit->base_s, 0.0001, 1e-12);
  EXPECT_NEAR(fit->per_excess_s, 0.0003, 1e-12);
  EXPECT_NEAR(fit->rms_s, 0, 1e-12);
  EXPECT_EQ(fit->points, 5);
  // The simulator's use: 6 executions running beside the waking thread on 2 cores -> 5 excess.
  EXPECT_NEAR(fit->Delay(6, 2), 0.0001 + 5 * 0.0003, 1e-12);
  EXPECT_NEAR(fit->Delay(0, 2), 0.0001, 1e-12);
}

TEST(FitWakeDelay, NeedsTwoExcessLevelsAndNeverGoesNegative) {
  CpuProbe probe;
  probe.file = "p.json";
  probe.cores = 2;
  CpuProbePoint p;
  p.workers = 1;
  p.wake_delay_s = 0.0002;
  probe.points.push_back(p);
  auto none = FitWakeDelay(probe);  // one excess level (0), no baseline
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("p.json"), std::string::npos);
  // Delay falling with load (noise): the slope is clamped at 0 and the base is the mean.
  p.workers = 4;
  p.wake_delay_s = 0.0001;
  probe.points.push_back(p);
  auto flat = FitWakeDelay(probe);
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(flat->per_excess_s, 0);
  EXPECT_NEAR(flat->base_s, 0.00015, 1e-12);
}

TEST(ReadCpuProbeFile, ReadsWakeDelays) {
  TempDir dir;
  const std::string path = dir.Write(
      "p.json", R"({"schema": "simreplay.probe-cpu/1", "host": {"cores": 2}, "baseline_wake": {"delay_s_mean": 0.0002},
                    "points": [{"workers": 3, "wall_s": 2, "throughput_samples_per_s": 300, "getitem_cpu_s_mean": 0.005,
                                "getitem_wall_s_mean": 0.012, "main_cpu_s": 0.4, "wake_delay_s_mean": 0.0008}]})");
  auto probe = ReadCpuProbeFile(path);
  ASSERT_TRUE(probe.ok()) << probe.status().message();
  EXPECT_DOUBLE_EQ(probe->baseline_wake_delay_s, 0.0002);
  EXPECT_DOUBLE_EQ(probe->points[0].wake_delay_s, 0.0008);
  // Older probes have neither: -1, and no fit.
  const std::string old = dir.Write(
      "q.json", ProbeDoc(R"({"workers": 1, "wall_s": 2, "throughput_samples_per_s": 200, "getitem_cpu_s_mean": 0.004,
                           "getitem_wall_s_mean": 0.0045, "main_cpu_s": 0.2})"));
  auto older = ReadCpuProbeFile(old);
  ASSERT_TRUE(older.ok());
  EXPECT_EQ(older->baseline_wake_delay_s, -1);
  EXPECT_EQ(older->points[0].wake_delay_s, -1);
  EXPECT_FALSE(FitWakeDelay(*older).ok());
}

}  // namespace
}  // namespace simreplay::calibrate
