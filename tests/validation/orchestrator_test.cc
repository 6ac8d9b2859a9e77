// The validate orchestration end to end with a fake bench (tests/validation/data/fake_bench.py) that
// writes synthetic traces and summaries whose measurements are known: which runs are measured
// (warm-up runs are not), which run calibrates each case and which model predicts it, re-analysis of
// recorded runs (--ingest), and a failed real run failing the validation. Deterministic: no timing.
#include "validation/orchestrator.h"

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace simreplay::validation {
namespace {

namespace fs = std::filesystem;

// A/B: A = 1 worker, B = 2 workers; 3 repetitions, 1 warm-up run, no pipeline-only runs.
ExperimentSpec FakeSpec() {
  const std::string bench = std::string(SIMREPLAY_SOURCE_DIR) + "/tests/validation/data/fake_bench.py";
  const std::string text = R"({"schema": "simreplay.experiment/1", "mode": "ab", "repetitions": 3, "warmup_runs": 1,
    "pipeline_only_runs": false,
    "run": {"steps": 12, "warmup_steps": 3, "step_time_s": 0.02, "seed": 0, "timeout_s": 60,
            "command": ["/usr/bin/python3", ")" +
                           bench + R"(", "--trace", "{trace}", "--summary", "{summary}",
                        "--workers", "{num_workers}", "--batch-size", "{batch_size}", "--steps", "{steps}",
                        "--warmup-steps", "{warmup_steps}", "--seed", "{seed}", "--step-time-s", "{step_time_s}"]},
    "base": {"num_workers": 1, "batch_size": 4},
    "cases": [{"name": "A"}, {"name": "B", "set": {"num_workers": 2}}],
    "criteria": {"memory_headroom_bytes": 4000000000, "rollback_gpu_idle_margin_pp": 5}})";
  auto spec = ParseExperimentSpec(text, "fake.json");
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return *spec;
}

// A host screen that found `share` of 2 cores delivered.
HostCapacity Screen(double share) {
  HostCapacity h;
  h.cores = 2;
  h.single_core_s = 0.1;
  h.all_cores_s = 0.1 / share;
  h.delivered_cores = 2 * share;
  return h;
}

ValidateOptions Options(const std::string& name) {
  ValidateOptions o;
  o.spec = FakeSpec();
  o.spec_path = "fake.json";
  o.out_dir = (fs::path(::testing::TempDir()) / ("orchestrator_" + name)).string();
  fs::remove_all(o.out_dir);
  o.simreplay_executable = SIMREPLAY_BINARY;
  o.host_screen.screen = [] { return Screen(1.0); };  // a healthy host: no timing in these tests
  o.host_screen.wait_step_s = 0.001;
  o.host_screen.wait_budget_s = 0.003;
  return o;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const nlohmann::json& CaseResult(const nlohmann::json& doc, const std::string& name) {
  for (const auto& r : doc["results"]) {
    if (r["case"] == name) return r;
  }
  ADD_FAILURE() << "no result for case " << name;
  return doc["results"][0];
}

TEST(Orchestrator, WarmupRunsAreDiscardedAndEveryCaseIsPredictedFromTheOther) {
  ValidateOptions o = Options("ab");
  ::unsetenv("FAKE_BENCH_FAIL");
  auto out = RunValidation(o);
  ASSERT_TRUE(out.ok()) << out.status().message();
  const nlohmann::json& doc = out->document;
  // Plan: A.warmup0 B.warmup0, then A.train.r0 B.train.r0 ... = 2 + 6 runs, all recorded.
  auto runs = ReadRunIndex(o.out_dir);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 8u);
  EXPECT_EQ((*runs)[0].plan.id, "A.warmup0");
  EXPECT_TRUE((*runs)[0].plan.discarded);
  EXPECT_EQ((*runs)[2].plan.id, "A.train.r0");
  // The noise each run was measured under is recorded, the CPU clock among it where the host reports one.
  const bool clock_known = MeanCpuMhz() > 0;
  for (const RunRecord& run : *runs) {
    EXPECT_EQ(run.cpu_mhz_before > 0, clock_known) << run.plan.id;
    EXPECT_EQ(run.cpu_mhz_after > 0, clock_known) << run.plan.id;
  }
  EXPECT_EQ(doc["noise"]["cpu_mhz_max"].get<double>() > 0, clock_known);
  // Measured: the fake's repetitions of A are 200 x {1.0, 1.1, 0.9} = 200, 220, 180 (median 200); the
  // warm-up runs measured 1.0 and must not enter.
  const auto& a = CaseResult(doc, "A")["metrics"]["train_throughput_samples_per_s"]["measured"];
  EXPECT_EQ(a["n"], 3);
  EXPECT_DOUBLE_EQ(a["median"].get<double>(), 200);
  EXPECT_DOUBLE_EQ(
      CaseResult(doc, "B")["metrics"]["train_throughput_samples_per_s"]["measured"]["median"].get<double>(), 300);
  // A/B: each side is predicted from a model calibrated on the other, from its median run (r0 for
  // both: 1.0 x is the middle of 0.9, 1.0, 1.1).
  EXPECT_EQ(CaseResult(doc, "A")["predicted_from"], "B");
  EXPECT_EQ(CaseResult(doc, "B")["predicted_from"], "A");
  EXPECT_EQ(doc["calibration"]["A"]["run"], "A.train.r0");
  EXPECT_EQ(doc["calibration"]["B"]["run"], "B.train.r0");
  EXPECT_TRUE(fs::exists(o.out_dir + "/models/A.json"));
  EXPECT_TRUE(CaseResult(doc, "A")["metrics"]["train_throughput_samples_per_s"].contains("predicted"));
  EXPECT_TRUE(doc["correctness"]["pass"].get<bool>()) << doc["correctness"].dump(1);
  EXPECT_TRUE(doc["completeness"]["pass"].get<bool>()) << doc["completeness"].dump(1);
  EXPECT_EQ(Slurp(o.out_dir + "/validation.json"), doc.dump(1) + "\n");

  // --ingest re-analyses the recorded runs: the same measurements, calibrations and predictions.
  ValidateOptions again = Options("ab_ingest");
  again.ingest_dir = o.out_dir;
  auto ingested = RunValidation(again);
  ASSERT_TRUE(ingested.ok()) << ingested.status().message();
  for (const char* key : {"results", "calibration", "comparisons", "correctness", "completeness", "pass"}) {
    nlohmann::json x = doc[key], y = ingested->document[key];
    if (std::string(key) == "calibration") {
      // The self-check names the trace it replayed, which is the same file either way.
      EXPECT_EQ(x["A"]["run"], y["A"]["run"]);
      continue;
    }
    EXPECT_EQ(x.dump(), y.dump()) << key;
  }
  EXPECT_EQ(ingested->document["environment"]["runs_from"], "ingested");
}

TEST(Orchestrator, MedianRunCalibratesAndAFailedRunFailsTheValidation) {
  ValidateOptions o = Options("failed_run");
  ::setenv("FAKE_BENCH_FAIL", "B.train.r2", 1);
  auto out = RunValidation(o);
  ::unsetenv("FAKE_BENCH_FAIL");
  ASSERT_TRUE(out.ok()) << out.status().message();
  const nlohmann::json& doc = out->document;
  // B kept r0 (300) and r1 (330): the lower middle of two is r0.
  EXPECT_EQ(doc["calibration"]["B"]["run"], "B.train.r0");
  EXPECT_EQ(CaseResult(doc, "B")["metrics"]["train_throughput_samples_per_s"]["measured"]["n"], 2);
  // The other runs still give a full analysis, but the validation cannot pass on a subset.
  EXPECT_FALSE(doc["completeness"]["pass"].get<bool>());
  EXPECT_TRUE(ChecksFailed(doc));
  EXPECT_NE(FailedChecks(doc).find("completeness"), std::string::npos) << FailedChecks(doc);
  bool named = false;
  for (const auto& p : doc["completeness"]["problems"])
    named |= p.get<std::string>().find("B.train.r2") != std::string::npos;
  EXPECT_TRUE(named) << doc["completeness"].dump(1);
}

TEST(Orchestrator, RunsFromAnotherMachineAreRefusedUnlessAllowedAndThenRecorded) {
  // One repetition of B reports another machine (8 cores, the others 4): its throughput cannot be
  // pooled with the others' (validation/run_manifests.h).
  ValidateOptions o = Options("other_machine");
  ::setenv("FAKE_BENCH_OTHER_MACHINE", "B.train.r1", 1);
  auto out = RunValidation(o);
  ::unsetenv("FAKE_BENCH_OTHER_MACHINE");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Status::Code::kInvalidArgument);
  const std::string& why = out.status().message();
  EXPECT_NE(why.find("run B.train.r0 vs B.train.r1: hardware.cores: 4 -> 8"), std::string::npos) << why;
  EXPECT_NE(why.find("--allow-manifest-diff"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  EXPECT_FALSE(fs::exists(o.out_dir + "/validation.json"));
  // The runs stay recorded: re-analysed with the override, the difference is written down.
  ValidateOptions again = Options("other_machine_allowed");
  again.ingest_dir = o.out_dir;
  again.allow_manifest_diff = true;
  auto allowed = RunValidation(again);
  ASSERT_TRUE(allowed.ok()) << allowed.status().message();
  const auto& recorded = allowed->document["environment"]["manifest_differences_allowed"];
  ASSERT_EQ(recorded.size(), 1u) << allowed->document["environment"].dump();
  EXPECT_EQ(recorded[0], "run B.train.r0 vs B.train.r1: hardware.cores: 4 -> 8");
}

TEST(Orchestrator, CalibrationRunIsTheMedianByThroughputThenOrder) {
  AnalysisInput in;
  std::vector<RunRecord> runs;
  const double tp[] = {5, 3, 4, 4};
  for (int r = 0; r < 4; ++r) {
    RunRecord rec;
    rec.plan = {"C.train.r" + std::to_string(r), "C", "train", r, false};
    rec.sequence = r;
    runs.push_back(rec);
    in.metrics[rec.plan.id].values[kTrainThroughput] = tp[r];
    in.facts[rec.plan.id] = TraceFacts{};
  }
  // Sorted: 3 (r1), 4 (r2), 4 (r3), 5 (r0); lower middle of four = second = r2.
  const RunRecord* chosen = CalibrationRun(runs, in, "C");
  ASSERT_NE(chosen, nullptr);
  EXPECT_EQ(chosen->plan.id, "C.train.r2");
  EXPECT_EQ(CalibrationRun(runs, in, "other"), nullptr);
  // Every repetition is handed to calibrate, the chosen one first (it replays), then execution order;
  // a run without metrics is left out: of 4 (r2), 4 (r3), 5 (r0) the middle is r3.
  in.metrics.erase("C.train.r1");
  std::vector<std::string> ids;
  for (const RunRecord* run : CalibrationRuns(runs, in, "C")) ids.push_back(run->plan.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"C.train.r3", "C.train.r0", "C.train.r2"}));
  EXPECT_TRUE(CalibrationRuns(runs, in, "other").empty());
}

}  // namespace
}  // namespace simreplay::validation

namespace simreplay::validation {
namespace {

// A run whose host screens (before and after) average under the bound is repeated once: scored when the
// repeat is screened healthy, recorded and not scored when it is not. Warm-up runs are never repeated.
TEST(Orchestrator, RunOnADegradedHostIsRepeatedAndNotScoredWhenItStaysDegraded) {
  ::unsetenv("FAKE_BENCH_FAIL");
  // Screens, in order: 0 before everything, then one after each attempt (and one before a repeat).
  // Screen 3 follows A.train.r0 (after A.warmup0 and B.warmup0): 60% -> mean (100 + 60) / 2 = 80% < 85%.
  ValidateOptions once = Options("host_once");
  auto calls = std::make_shared<int>(0);
  once.host_screen.screen = [calls] { return Screen((*calls)++ == 3 ? 0.6 : 1.0); };
  auto out = RunValidation(once);
  ASSERT_TRUE(out.ok()) << out.status().message();
  auto runs = ReadRunIndex(once.out_dir);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ((*runs)[2].plan.id, "A.train.r0");
  EXPECT_EQ((*runs)[2].attempts, 2);
  EXPECT_FALSE((*runs)[2].over_noise_bound);
  EXPECT_DOUBLE_EQ((*runs)[2].HostDeliveredShare(), 1.0);  // the repeat's screens
  EXPECT_EQ(out->document["noise"]["runs_repeated_for_noise"], 1);
  EXPECT_EQ(out->document["noise"]["runs_not_scored_for_host_capacity"], 0);
  EXPECT_TRUE(out->document["completeness"]["pass"].get<bool>());

  // Every screen at 50%: each measured run is repeated once and not scored; the waiting is bounded by
  // the budget; no case has a measurement, so the validation fails on completeness, not on errors.
  ValidateOptions degraded = Options("host_degraded");
  degraded.host_screen.screen = [] {
    HostCapacity h = Screen(0.5);
    h.fresh_page_touch_us = 12;  // expensive faults: validate says what they do to workers
    return h;
  };
  out = RunValidation(degraded);
  ASSERT_TRUE(out.ok()) << out.status().message();
  runs = ReadRunIndex(degraded.out_dir);
  ASSERT_TRUE(runs.ok());
  for (const RunRecord& run : *runs) {
    EXPECT_EQ(run.attempts, run.plan.discarded ? 1 : 2) << run.plan.id;
    EXPECT_EQ(run.over_noise_bound, !run.plan.discarded) << run.plan.id;
    EXPECT_EQ(run.noise_reason, run.plan.discarded ? "" : "host_capacity") << run.plan.id;
    EXPECT_DOUBLE_EQ(run.host_before.delivered_share(), 0.5);
  }
  EXPECT_EQ(out->document["noise"]["runs_not_scored_for_host_capacity"], 6);
  EXPECT_DOUBLE_EQ(out->document["noise"]["host_delivered_share_min"].get<double>(), 0.5);
  EXPECT_FALSE(out->document["completeness"]["pass"].get<bool>());
  bool warned = false, hinted = false;
  for (const auto& w : out->warnings) {
    warned |= w.find("the host delivered 50% of its 2 cores") != std::string::npos;
    hinted |= w.find("host screen: page faults are expensive on this host (12.0 us") != std::string::npos;
  }
  EXPECT_TRUE(warned);
  EXPECT_TRUE(hinted);
  EXPECT_DOUBLE_EQ(out->document["noise"]["fresh_page_touch_us_median"].get<double>(), 12);
}

}  // namespace
}  // namespace simreplay::validation
