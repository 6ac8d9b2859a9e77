// `simreplay diagnose` and `simreplay tune` end to end on the bundled quickstart: outputs written and
// byte-identical for every --jobs, bad input as one line with exit 3, and the report rendered in
// headless Chromium (a screenshot kept as BUILD/test-artefacts/diagnosis-report.png).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli_runner.h"

namespace {

namespace fs = std::filesystem;
using simreplay::testing::RunCli;
using simreplay::testing::Slurp;

const std::string kQuickstart = std::string(SIMREPLAY_SOURCE_DIR) + "/examples/quickstart/scenario.json";

fs::path Fresh(const std::string& name) {
  fs::path p = fs::path(::testing::TempDir()) / name;
  fs::remove_all(p);
  return p;
}

TEST(DiagnoseCli, WritesTheSameDiagnosisForEveryJobsCount) {
  const fs::path a = Fresh("diagnose_j1"), b = Fresh("diagnose_j2");
  auto r1 = RunCli("diagnose " + kQuickstart + " --out " + a.string() + " --jobs 1");
  auto r2 = RunCli("diagnose " + kQuickstart + " --out " + b.string() + " --jobs 2");
  ASSERT_EQ(r1.exit_code, 0) << r1.output;
  ASSERT_EQ(r2.exit_code, 0) << r2.output;
  EXPECT_EQ(Slurp(a / "diagnosis.json"), Slurp(b / "diagnosis.json"));
  EXPECT_EQ(Slurp(a / "report.html"), Slurp(b / "report.html"));
  auto d = nlohmann::json::parse(Slurp(a / "diagnosis.json"));
  EXPECT_EQ(d["schema"], "simreplay.diagnosis/1");
  EXPECT_EQ(d["accelerator"], "emulated");
  EXPECT_NE(r1.output.find("OBSERVED"), std::string::npos);
  EXPECT_NE(r1.output.find("HYPOTHESES"), std::string::npos);
  // No recommendation below 5%, whatever the profile says.
  for (const auto& rec : d["verdict"]["recommendations"]) EXPECT_GE(rec["gain"].get<double>(), 0.05);
}

TEST(DiagnoseCli, SaturatedObjectStoreIsNamedStorage) {
  // The tier the what-if verdicts used to call "epoch_restarts" or "workers": 4 streams per node,
  // 30 ms first byte, 2 MB/s per stream, 8 workers.
  const fs::path dir = Fresh("diagnose_objstore");
  fs::create_directories(dir);
  std::ofstream(dir / "s.json") << R"({"model": ")" << SIMREPLAY_SOURCE_DIR
                                << R"(/examples/quickstart/model.json",
    "loader": {"num_workers": 8, "batch_size": 8}, "hardware": {"cpu_cores": 16}, "train": {"steps": 30},
    "storage": {"tiers": [{"kind": "object_store", "latency_s": 0.03, "bytes_per_s_per_stream": 2e6,
                           "max_streams": 4}]}})";
  auto r = RunCli("diagnose " + (dir / "s.json").string() + " --out " + (dir / "out").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto d = nlohmann::json::parse(Slurp(dir / "out" / "diagnosis.json"));
  EXPECT_EQ(d["verdict"]["critical_resource"], "storage") << d["verdict"]["text"];
}

// Observing a trace without sample records (a Kineto import) or a truncated one still gives the
// observed half, saying what it cannot see; the hypotheses come from the scenario's own trace.
TEST(DiagnoseCli, KinetoOnlyAndTruncatedTracesStillGetTheObservedPart) {
  const fs::path dir = Fresh("diagnose_damaged");
  fs::create_directories(dir);
  const std::string trace = std::string(SIMREPLAY_SOURCE_DIR) + "/examples/quickstart/trace.jsonl.gz";
  // No sample records; and the first half of the file, cut inside a line (a killed capture).
  ASSERT_EQ(simreplay::testing::RunShell("zcat " + trace + " | grep -v '\"type\":\"sample\"' > " +
                                         (dir / "no_samples.jsonl").string())
                .exit_code,
            0);
  ASSERT_EQ(simreplay::testing::RunShell("zcat " + trace + " | head -c $(( $(zcat " + trace + " | wc -c) / 2 )) > " +
                                         (dir / "truncated.jsonl").string())
                .exit_code,
            0);
  auto scenario = nlohmann::json::parse(Slurp(kQuickstart));
  scenario.erase("sweep");
  scenario["model"] = std::string(SIMREPLAY_SOURCE_DIR) + "/examples/quickstart/model.json";
  scenario["train"]["steps"] = 10;
  std::ofstream(dir / "s.json") << scenario.dump();
  for (const char* damaged : {"no_samples.jsonl", "truncated.jsonl"}) {
    const fs::path out = dir / (std::string(damaged) + ".out");
    auto r = RunCli("diagnose " + (dir / "s.json").string() + " --trace " + (dir / damaged).string() + " --out " +
                    out.string() + " --jobs 2");
    ASSERT_EQ(r.exit_code, 0) << damaged << ": " << r.output;
    auto d = nlohmann::json::parse(Slurp(out / "diagnosis.json"));
    const std::string cannot_see = d["observed"]["cannot_see"].dump();
    EXPECT_NE(cannot_see.find(std::string(damaged) == "no_samples.jsonl" ? "no sample records" : "no footer"),
              std::string::npos)
        << cannot_see;
    EXPECT_GT(d["observed"]["steps"].get<int>(), 0);
  }
}

// A scenario replaying a trace without sample records (a Kineto import) gets the observed half, saying
// what it cannot see, and hypotheses from its batches' load times, with a warning that says so.
TEST(DiagnoseCli, ScenarioOnAKinetoOnlyTraceIsObservedAndSimulatedFromItsBatches) {
  const fs::path dir = Fresh("diagnose_kineto_only");
  fs::create_directories(dir);
  const std::string trace = std::string(SIMREPLAY_SOURCE_DIR) + "/examples/quickstart/trace.jsonl.gz";
  ASSERT_EQ(simreplay::testing::RunShell("zcat " + trace + " | grep -v '\"type\":\"sample\"' > " +
                                         (dir / "no_samples.jsonl").string())
                .exit_code,
            0);
  nlohmann::json scenario = {{"trace", (dir / "no_samples.jsonl").string()},
                             {"loader", {{"num_workers", 2}, {"batch_size", 8}}},
                             {"hardware", {{"cpu_cores", 2}}},
                             {"train", {{"steps", 10}}}};
  std::ofstream(dir / "s.json") << scenario.dump();
  auto r = RunCli("diagnose " + (dir / "s.json").string() + " --out " + (dir / "out").string() + " --jobs 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto d = nlohmann::json::parse(Slurp(dir / "out" / "diagnosis.json"));
  EXPECT_NE(d["observed"]["cannot_see"].dump().find("no sample records"), std::string::npos);
  EXPECT_GT(d["observed"]["steps"].get<int>(), 0);
  EXPECT_FALSE(d["hypotheses"]["reliefs"].empty());
  EXPECT_NE(d["warnings"].dump().find("no per-sample records"), std::string::npos) << d["warnings"].dump();
}

TEST(DiagnoseCli, BadScenarioIsOneLineExitThreeAndWritesNothing) {
  const fs::path dir = Fresh("diagnose_bad");
  fs::create_directories(dir);
  std::ofstream(dir / "s.json") << "{\"loader\": {\"num_workers\": -1}}\n";
  auto r = RunCli("diagnose " + (dir / "s.json").string() + " --out " + (dir / "out").string());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("s.json"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out" / "diagnosis.json"));
}

// Loading in the training loop (num_workers 0) on 2 cores: workers buy far more than 5%, so tune
// recommends them and writes the A/B spec for the user's command.
TEST(TuneCli, WritesTuneJsonAndAnExperimentSpecThatValidateAccepts) {
  const fs::path out = Fresh("tune_cli");
  fs::create_directories(out);
  auto scenario = nlohmann::json::parse(Slurp(kQuickstart));
  scenario.erase("sweep");
  scenario["model"] = std::string(SIMREPLAY_SOURCE_DIR) + "/examples/quickstart/model.json";
  scenario["loader"]["num_workers"] = 0;
  std::ofstream(out / "s.json") << scenario.dump();
  auto r = RunCli("tune " + (out / "s.json").string() + " --out " + out.string() +
                  " --budget 16 --command \"/usr/bin/python3 train.py --workers {num_workers} --trace {trace} "
                  "--summary {summary}\"");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto t = nlohmann::json::parse(Slurp(out / "tune.json"));
  EXPECT_EQ(t["schema"], "simreplay.tune/1");
  EXPECT_LE(t["search"]["configurations"].get<int>(), 16);
  EXPECT_GT(t["best"]["knobs"]["num_workers"].get<int>(), 0);
  EXPECT_GE(t["gain"].get<double>(), 0.05);
  // The quickstart ran a CPU build of torch: GPU decoding is checked, ruled out and never suggested.
  EXPECT_FALSE(t["tools_considered"]["checked"].get<std::string>().empty());
  bool dali = false;
  for (const auto& tool : t["tools_considered"]["tools"]) {
    if (tool["name"] != "dali_gpu_decode") continue;
    dali = true;
    EXPECT_FALSE(tool["compatible"].get<bool>());
    EXPECT_FALSE(tool["suggested"].get<bool>());
  }
  EXPECT_TRUE(dali);
  EXPECT_EQ(t["best"]["knobs"]["decode_device"], "cpu");
  EXPECT_NE(r.output.find("NOT compatible, never suggested"), std::string::npos) << r.output;
  auto spec = nlohmann::json::parse(Slurp(out / "experiment.json"));
  EXPECT_EQ(spec["schema"], "simreplay.experiment/1");
  EXPECT_EQ(spec["run"]["command"][0], "/usr/bin/python3");
  EXPECT_EQ(spec["base"]["num_workers"], 0);
  // validate parses the spec (its parser is the one that runs it); --ingest of an empty directory then
  // fails for lack of recorded runs, never for the spec.
  const fs::path empty = Fresh("tune_cli_ingest");
  fs::create_directories(empty);
  auto v = RunCli("validate " + (out / "experiment.json").string() + " --out " + (out / "v").string() + " --ingest " +
                  empty.string());
  EXPECT_EQ(v.output.find("experiment.json:"), std::string::npos) << v.output;
}

TEST(TuneCli, ImpossibleConstraintsAreOneLineExitThree) {
  auto r = RunCli("tune " + kQuickstart + " --out " + Fresh("tune_impossible").string() + " --memory-bytes 1000000");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("impossible constraints"), std::string::npos) << r.output;
  auto c = RunCli("tune " + kQuickstart + " --out " + Fresh("tune_noprice").string() + " --objective cost");
  EXPECT_EQ(c.exit_code, 3) << c.output;
}

int RunCommand(const std::string& cmd, std::string* output) {
  const auto r = simreplay::testing::RunShell(cmd);
  *output = r.output;
  return r.exit_code;
}

TEST(DiagnoseReport, RendersInHeadlessChromiumWithEveryPlot) {
  if (!fs::exists("/usr/bin/chromium")) GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs it)";
  const fs::path out = Fresh("diagnose_report");
  auto r = RunCli("diagnose " + kQuickstart + " --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string url = "file://" + fs::absolute(out / "report.html").string();
  const std::string flags = "--headless --no-sandbox --disable-gpu --disable-background-networking --user-data-dir=" +
                            (out / "profile").string() + " --virtual-time-budget=5000 ";
  std::string dom;
  ASSERT_EQ(RunCommand("/usr/bin/chromium " + flags + "--dump-dom " + url, &dom), 0) << dom;
  EXPECT_NE(dom.find("render-check: 4 of 4 plots drawn"), std::string::npos) << dom.substr(0, 2000);
  EXPECT_EQ(dom.find("id=\"script-error\""), std::string::npos);
  for (const char* id : {"plot-waterfall", "plot-stages", "plot-memory", "plot-gains"}) {
    EXPECT_NE(dom.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  }
  fs::create_directories("test-artefacts");
  const fs::path png = fs::absolute("test-artefacts/diagnosis-report.png");
  fs::remove(png);
  std::string log;
  ASSERT_EQ(RunCommand("/usr/bin/chromium " + flags + "--window-size=1000,1800 --screenshot=" + png.string() + " " + url,
                       &log),
            0)
      << log;
  EXPECT_GT(fs::file_size(png), 20000u) << "a blank page compresses to almost nothing";
}

}  // namespace
