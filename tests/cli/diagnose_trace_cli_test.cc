// `simreplay diagnose TRACE... [--model M] [--probe P] [--out DIR]` end to end on the bundled quickstart
// trace: the observed half alone without a model (and saying so), a probe's ceiling, the hypotheses
// with a model, byte-identical outputs, and a usage error for a scenario mixed with traces.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli_runner.h"

namespace {

namespace fs = std::filesystem;
using simreplay::testing::RunCli;
using simreplay::testing::Slurp;

const std::string kDir = std::string(SIMREPLAY_SOURCE_DIR) + "/examples/quickstart";
const std::string kTrace = kDir + "/trace.jsonl.gz";

fs::path Fresh(const std::string& name) {
  fs::path p = fs::path(::testing::TempDir()) / name;
  fs::remove_all(p);
  return p;
}

TEST(DiagnoseTraceCli, WithoutAModelGivesTheObservedHalfAndSaysTheHypothesesNeedOne) {
  const fs::path a = Fresh("diagnose_trace_a"), b = Fresh("diagnose_trace_b");
  auto r1 = RunCli("diagnose " + kTrace + " --out " + a.string());
  auto r2 = RunCli("diagnose " + kTrace + " --out " + b.string());
  ASSERT_EQ(r1.exit_code, 0) << r1.output;
  ASSERT_EQ(r2.exit_code, 0) << r2.output;
  EXPECT_NE(r1.output.find("need a model"), std::string::npos) << r1.output;
  EXPECT_NE(r1.output.find("host CPU:"), std::string::npos) << r1.output;
  EXPECT_NE(r1.output.find("epoch boundaries:"), std::string::npos) << r1.output;
  EXPECT_EQ(Slurp(a / "diagnosis.json"), Slurp(b / "diagnosis.json"));
  EXPECT_EQ(Slurp(a / "report.html"), Slurp(b / "report.html"));
  auto d = nlohmann::json::parse(Slurp(a / "diagnosis.json"));
  EXPECT_EQ(d["schema"], "simreplay.diagnosis/1");
  EXPECT_FALSE(d["hypotheses"]["produced"].get<bool>());
  EXPECT_TRUE(d["verdict"]["critical_resource"].is_null());
  const auto& o = d["observed"];
  EXPECT_EQ(o["steps"], 40);
  EXPECT_GE(o["stages"][0]["p99_s"].get<double>(), o["stages"][0]["p95_s"].get<double>());
  EXPECT_FALSE(o["media"].empty());
  // The quickstart's workers are not persistent: each pid was sampled once, so no worker window.
  EXPECT_TRUE(o["cpu"]["mean_worker_busy_fraction"].is_null());
  EXPECT_NE(o["cannot_see"].dump().find("worker busy fractions are not visible"), std::string::npos);
  EXPECT_GT(o["cpu"]["host"]["busy_fraction"].get<double>(), 0);
  EXPECT_EQ(o["epoch_stalls"]["epochs"].size(), 3u);  // 4 epochs of 10 batches
  EXPECT_EQ(o["host_memory_headroom"]["total_from"], "host.mem_total_bytes");
  EXPECT_TRUE(o["storage"]["ceiling"].is_null());
  EXPECT_NE(o["cannot_see"].dump().find("run's length is not known"), std::string::npos);
}

TEST(DiagnoseTraceCli, AProbeGivesTheStorageCeiling) {
  const fs::path dir = Fresh("diagnose_trace_probe");
  fs::create_directories(dir);
  std::ofstream(dir / "probe.json") << R"({"schema":"simreplay.probe/1","fit":{
      "sequential":{"latency_s":1e-4,"bandwidth_bytes_per_s":1e8,"r2":1,"peak_bytes_per_s":2e8},
      "random":{"latency_s":1e-3,"bandwidth_bytes_per_s":5e7,"r2":1,"peak_bytes_per_s":1e6}}})";
  auto r = RunCli("diagnose " + kTrace + " --probe " + (dir / "probe.json").string() + " --out " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto s = nlohmann::json::parse(Slurp(dir / "diagnosis.json"))["observed"]["storage"];
  EXPECT_EQ(s["ceiling"]["pattern"], "random");  // the quickstart shuffles
  EXPECT_DOUBLE_EQ(s["ceiling"]["peak_bytes_per_s"].get<double>(), 1e6);
  EXPECT_NEAR(s["ceiling_share"].get<double>(), s["delivered_bytes_per_s"].get<double>() / 1e6, 1e-6);
  EXPECT_NE(r.output.find("ceiling"), std::string::npos) << r.output;
  // A probe that is not one is a one-line error, exit 3.
  std::ofstream(dir / "bad.json") << R"({"schema":"other"})";
  auto bad = RunCli("diagnose " + kTrace + " --probe " + (dir / "bad.json").string());
  EXPECT_EQ(bad.exit_code, 3) << bad.output;
  EXPECT_NE(bad.output.find("bad.json:1"), std::string::npos) << bad.output;
}

TEST(DiagnoseTraceCli, WithAModelAlsoGivesTheHypotheses) {
  const fs::path out = Fresh("diagnose_trace_model");
  auto r = RunCli("diagnose " + kTrace + " --model " + kDir + "/model.json --out " + out.string() + " --jobs 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto d = nlohmann::json::parse(Slurp(out / "diagnosis.json"));
  EXPECT_TRUE(d["hypotheses"]["produced"].get<bool>());
  EXPECT_FALSE(d["hypotheses"]["reliefs"].empty());
  EXPECT_TRUE(d["verdict"]["critical_resource"].is_string());
}

// The observed-only report draws its three plots (waterfall, stages, memory) in headless Chromium.
TEST(DiagnoseTraceCli, ObservedOnlyReportRendersEveryPlot) {
  if (!fs::exists("/usr/bin/chromium")) GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs it)";
  const fs::path out = Fresh("diagnose_trace_report");
  auto r = RunCli("diagnose " + kTrace + " --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string flags = "--headless --no-sandbox --disable-gpu --disable-background-networking --user-data-dir=" +
                            (out / "profile").string() + " --virtual-time-budget=5000 --dump-dom ";
  auto dom = simreplay::testing::RunShell("/usr/bin/chromium " + flags + "file://" +
                                          fs::absolute(out / "report.html").string() + " 2>/dev/null");
  ASSERT_EQ(dom.exit_code, 0) << dom.output;
  EXPECT_NE(dom.output.find("render-check: 3 of 3 plots drawn"), std::string::npos) << dom.output.substr(0, 2000);
  EXPECT_NE(dom.output.find("need a model"), std::string::npos);
  EXPECT_NE(dom.output.find("head-of-line:"), std::string::npos);
}

TEST(DiagnoseTraceCli, AScenarioCannotBeMixedWithTraces) {
  auto r = RunCli("diagnose " + kDir + "/scenario.json " + kTrace);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  auto m = RunCli("diagnose " + kDir + "/scenario.json --model " + kDir + "/model.json");
  EXPECT_EQ(m.exit_code, 2) << m.output;
}

}  // namespace
