// Predicted-vs-measured comparison, rankings, correctness checks and report determinism on synthetic
// measurements whose answers are derived by hand.
#include "validation/analysis.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "validation/predictor.h"
#include "validation/report_writer.h"

namespace simreplay::validation {
namespace {

ExperimentSpec AbSpec(const std::string& thresholds) {
  // No warm-up or pipeline-only runs: the 6 train runs of Input() are the whole plan (complete).
  std::string text = R"({"schema": "simreplay.experiment/1", "mode": "ab", "repetitions": 3, "warmup_runs": 0,
    "pipeline_only_runs": false, "run": {"step_time_s": 0.03},
    "base": {"num_workers": 1}, "cases": [{"name": "A"}, {"name": "B", "set": {"num_workers": 2}}],
    "criteria": {"memory_headroom_bytes": 1000000000, "rollback_gpu_idle_margin_pp": 5})";
  if (!thresholds.empty()) text += ", \"thresholds\": " + thresholds;
  text += "}";
  auto spec = ParseExperimentSpec(text, "ab.json");
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return *spec;
}

TraceFacts Facts(const std::vector<int64_t>& order, const std::string& hash_prefix) {
  TraceFacts f;
  f.order_by_epoch = {order};
  for (int64_t i : order) f.hash_by_epoch_index[{0, i}] = hash_prefix + std::to_string(i);
  f.manifest = {{"hardware", {{"cores", 2}}}};
  return f;
}

// A: train throughput 100, 110, 90 (median 100), GPU idle 0.5; B: exactly twice A's throughput in
// every repetition, GPU idle 0.3. Predictions: A 90 (-10%), idle 0.45 (-5 pp); B 210 (+5%), idle 0.3.
AnalysisInput Input(const ExperimentSpec* spec) {
  AnalysisInput in;
  in.spec = spec;
  const double a_tp[] = {100, 110, 90};
  int seq = 0;
  for (int rep = 0; rep < 3; ++rep) {
    for (const std::string c : {"A", "B"}) {
      RunRecord r;
      r.plan = {c + ".train.r" + std::to_string(rep), c, "train", rep, false};
      r.sequence = seq++;
      r.command = {"bench", c};
      in.runs.push_back(r);
      RunMetrics m;
      double tp = c == "A" ? a_tp[rep] : 2 * a_tp[rep];
      m.values = {{kTrainThroughput, tp}, {kGpuIdle, c == "A" ? 0.5 : 0.3},
                  {kWaitMean, 0.01},      {kWaitP95, 0.02},
                  {kFirstBatch, 0.2},     {kPeakMemory, 5e8}};
      m.cpu_s_per_sample = 0.005;
      in.metrics[r.plan.id] = m;
      // Same sample order in A and B (worker count must not change it), different augmentation hashes.
      in.facts[r.plan.id] = Facts({3, 1, 2, 0}, c);
    }
  }
  Prediction pa, pb;
  pa.values = {{kTrainThroughput, 90}, {kGpuIdle, 0.45}, {kPeakMemory, 4e8}};
  pa.calibrated_from = "B";
  pa.bottleneck = {"cpu", "cores 95% busy"};
  pb.values = {{kTrainThroughput, 210}, {kGpuIdle, 0.3}, {kPeakMemory, 6e8}};
  pb.calibrated_from = "A";
  in.predictions = {{"A", pa}, {"B", pb}};
  return in;
}

const nlohmann::json& Metric(const nlohmann::json& doc, size_t case_index, const char* metric) {
  return doc["results"][case_index]["metrics"][metric];
}

TEST(Analysis, ErrorsAgainstTheMeasuredMedian) {
  ExperimentSpec spec = AbSpec("");
  nlohmann::json doc = Analyze(Input(&spec));
  EXPECT_EQ(doc["schema"], kValidationSchema);
  // The note states the spec's emulated step (0.03 s), not a fixed text.
  EXPECT_NE(doc["accelerator_note"].get<std::string>().find("sleep of 0.03 s"), std::string::npos)
      << doc["accelerator_note"];
  const auto& a = Metric(doc, 0, kTrainThroughput);
  EXPECT_DOUBLE_EQ(a["measured"]["median"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(a["error"].get<double>(), -10);
  EXPECT_EQ(a["unit_of_error"], "%");
  // The median of resamples of {90, 100, 110} lies in [90, 110]: 90 is inside, at the edge.
  EXPECT_DOUBLE_EQ(a["measured"]["ci"][0].get<double>(), 90);
  EXPECT_TRUE(a["inside_ci"].get<bool>());
  const auto& idle = Metric(doc, 0, kGpuIdle);
  EXPECT_NEAR(idle["error"].get<double>(), -5, 1e-9);
  EXPECT_EQ(idle["unit_of_error"], "pp");
  EXPECT_FALSE(idle["inside_ci"].get<bool>());  // constant 0.5 measured: interval [0.5, 0.5]
  EXPECT_DOUBLE_EQ(Metric(doc, 1, kTrainThroughput)["error"].get<double>(), 5);
  // Not predicted -> no error; not measured (no pipeline runs) -> no measured block.
  EXPECT_FALSE(Metric(doc, 0, kWaitMean).contains("error"));
  EXPECT_FALSE(Metric(doc, 0, kPipelineThroughput).contains("measured"));
}

TEST(Analysis, PairedGainRankingAndDecision) {
  ExperimentSpec spec = AbSpec("");
  nlohmann::json doc = Analyze(Input(&spec));
  ASSERT_EQ(doc["comparisons"].size(), 1u);
  const auto& c = doc["comparisons"][0];
  EXPECT_DOUBLE_EQ(c["measured_train_gain_pct"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(c["measured_train_gain_ci_pct"][0].get<double>(), 100);
  EXPECT_NEAR(c["predicted_train_gain_pct"].get<double>(), 100.0 * (210.0 / 90.0 - 1), 1e-6);
  EXPECT_EQ(c["decision"], "adopt B");  // gain CI > 0, predicted 6e8 B <= 1e9 headroom, GPU idle fell
  ASSERT_FALSE(doc["rankings"].empty());
  EXPECT_EQ(doc["rankings"][0]["group"], "num_workers");
  EXPECT_DOUBLE_EQ(doc["rankings"][0]["kendall_tau_b"].get<double>(), 1);
  EXPECT_TRUE(doc["rankings_agree"].get<bool>());
  // Worker count changes augmentation streams: the order is checked, not the content.
  bool saw_order = false;
  for (const auto& check : doc["correctness"]["checks"]) {
    if (check["kind"] == "order") {
      saw_order = true;
      EXPECT_TRUE(check["pass"].get<bool>());
      EXPECT_EQ(check["compared"], 4);
    }
  }
  EXPECT_TRUE(saw_order);
  EXPECT_TRUE(doc["correctness"]["pass"].get<bool>());
  EXPECT_FALSE(ChecksFailed(doc));  // thresholds not requested
}

TEST(Analysis, ThresholdsPassAndFailAsStated) {
  ExperimentSpec ok_spec = AbSpec(R"({"median_train_throughput_error_pct": 10, "max_gpu_idle_error_pp": 10})");
  nlohmann::json ok = Analyze(Input(&ok_spec));
  EXPECT_DOUBLE_EQ(ok["thresholds"]["median_abs_train_throughput_error_pct"]["value"].get<double>(),
                   7.5);  // |-10|, |5|
  EXPECT_NEAR(ok["thresholds"]["max_abs_gpu_idle_error_pp"]["value"].get<double>(), 5, 1e-9);
  EXPECT_TRUE(ok["thresholds"]["pass"].get<bool>());
  EXPECT_FALSE(ChecksFailed(ok));

  ExperimentSpec tight = AbSpec(R"({"median_train_throughput_error_pct": 5, "max_gpu_idle_error_pp": 4})");
  nlohmann::json bad = Analyze(Input(&tight));
  EXPECT_FALSE(bad["thresholds"]["pass"].get<bool>());
  EXPECT_TRUE(ChecksFailed(bad));
  EXPECT_EQ(bad["thresholds"]["max_abs_gpu_idle_error_pp"]["case"], "A");
  std::vector<std::string> over = bad["thresholds"]["cases_over_limit"];
  EXPECT_EQ(over, (std::vector<std::string>{"A: train throughput -10.0%", "A: GPU idle -5.0 pp"}));
}

TEST(Analysis, PersistenceBaselineIsReportedAndMustBeBeaten) {
  // A is predicted from B: persistence says A = median(B) = 200 against a measured 100 (+100%); B from A:
  // 100 against 200 (-50%). Both lie outside the other's interval (B: [180, 220], A: [90, 110]), so both
  // changed. Model: |-10|, |+5| -> median 7.5; persistence: 100, 50 -> median 75; 7.5 <= 75 - 5: beaten.
  ExperimentSpec spec = AbSpec(R"({"median_train_throughput_error_pct": 10, "max_gpu_idle_error_pp": 10})");
  nlohmann::json doc = Analyze(Input(&spec));
  const auto& b = doc["baseline"];
  EXPECT_EQ(b["changed_cases"], 2);
  EXPECT_DOUBLE_EQ(b["cases"][0]["train_throughput_baseline_error_pct"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(b["baseline_median_abs_error_pct"].get<double>(), 75);
  EXPECT_DOUBLE_EQ(b["model_median_abs_error_pct"].get<double>(), 7.5);
  EXPECT_TRUE(doc["thresholds"]["beats_persistence"]["pass"].get<bool>());
  EXPECT_TRUE(doc["thresholds"]["pass"].get<bool>());

  // A model that only repeats the other case's measurement is no better than persistence: it fails,
  // although its per-threshold numbers are reported as before.
  AnalysisInput copycat = Input(&spec);
  copycat.predictions["A"].values[kTrainThroughput] = 200;
  copycat.predictions["B"].values[kTrainThroughput] = 100;
  nlohmann::json bad = Analyze(copycat);
  EXPECT_FALSE(bad["thresholds"]["beats_persistence"]["pass"].get<bool>());
  EXPECT_TRUE(ChecksFailed(bad));
}

TEST(Analysis, PerCaseLimitsAreReportedAndEnforcedWhenSet) {
  // A's |train error| is 10%, B's 5%: a per-case limit of 8% fails A only.
  ExperimentSpec spec = AbSpec(
      R"({"median_train_throughput_error_pct": 10, "max_gpu_idle_error_pp": 10, "max_case_train_throughput_error_pct": 8})");
  nlohmann::json doc = Analyze(Input(&spec));
  const auto& per_case = doc["thresholds"]["per_case"];
  ASSERT_EQ(per_case.size(), 2u);
  EXPECT_FALSE(per_case[0]["pass"].get<bool>());
  EXPECT_TRUE(per_case[1]["pass"].get<bool>());
  EXPECT_FALSE(doc["thresholds"]["pass"].get<bool>());
}

// A run over the steal bound even after its repeat is recorded but not scored: it is no
// completeness problem, it is counted in noise, and the case's other repetitions carry the statistics.
TEST(Analysis, RunOverTheNoiseBoundIsNotScoredAndNotMissing) {
  ExperimentSpec spec = AbSpec("");
  AnalysisInput in = Input(&spec);
  in.runs[3].over_noise_bound = true;  // B.train.r1
  in.runs[3].attempts = 2;
  in.runs[3].steal_fraction = 0.12;
  in.metrics.erase("B.train.r1");
  in.facts.erase("B.train.r1");
  nlohmann::json doc = Analyze(in);
  EXPECT_TRUE(doc["completeness"]["pass"].get<bool>()) << doc["completeness"].dump();
  EXPECT_EQ(doc["noise"]["runs_not_scored_for_noise"], 1);
  EXPECT_EQ(doc["noise"]["runs_repeated_for_noise"], 1);
  EXPECT_DOUBLE_EQ(doc["noise"]["steal_fraction_max"].get<double>(), 0.12);
  EXPECT_EQ(Metric(doc, 1, kTrainThroughput)["measured"]["n"], 2);
}

// Every case says what its prediction took from the CPU probe: a probe of the cases' own dataset
// at a case's worker count is in sample; a probe of another dataset is out of sample for every case.
TEST(Analysis, MatrixSaysWhetherTheCpuProbeMeasuredTheCase) {
  ExperimentSpec spec = AbSpec("");  // A: 1 worker, B: 2 workers
  AnalysisInput in = Input(&spec);
  in.cpu_probe.used = true;
  in.cpu_probe.workers = {1};
  nlohmann::json doc = Analyze(in);
  EXPECT_EQ(doc["matrix"][0]["cpu_probe"], "own dataset at this worker count (IN SAMPLE)");
  EXPECT_EQ(doc["matrix"][1]["cpu_probe"], "own dataset, not at this worker count");
  in.cpu_probe.other_dataset = true;
  doc = Analyze(in);
  EXPECT_EQ(doc["matrix"][0]["cpu_probe"], "other dataset (out of sample)");
  EXPECT_EQ(doc["matrix"][1]["cpu_probe"], "other dataset (out of sample)");
  EXPECT_EQ(Analyze(Input(&spec))["matrix"][0]["cpu_probe"], "none");
}

TEST(Analysis, MissingPredictionOrFailedRunFailsCompleteness) {
  ExperimentSpec spec = AbSpec("");
  AnalysisInput no_pred = Input(&spec);
  no_pred.predictions.erase("B");
  no_pred.prediction_errors["B"] = "model unreadable";
  nlohmann::json doc = Analyze(no_pred);
  EXPECT_FALSE(doc["completeness"]["pass"].get<bool>());
  EXPECT_EQ(doc["completeness"]["problems"][0], "case B: not predicted (model unreadable)");
  EXPECT_TRUE(ChecksFailed(doc));

  AnalysisInput failed = Input(&spec);
  failed.runs[3].exit_code = 1;  // B.train.r1
  failed.metrics.erase("B.train.r1");
  doc = Analyze(failed);
  EXPECT_FALSE(doc["completeness"]["pass"].get<bool>());
  EXPECT_EQ(doc["completeness"]["problems"][0], "run B.train.r1 failed (exit 1)");

  EXPECT_TRUE(Analyze(Input(&spec))["completeness"]["pass"].get<bool>());
}

TEST(Analysis, MachineStatementsComeFromTheManifest) {
  ExperimentSpec spec = AbSpec("");
  AnalysisInput in = Input(&spec);
  // Facts() records 2 cores and no data volume: the page cache is not claimed warm.
  nlohmann::json doc = Analyze(in);
  EXPECT_NE(doc["noise"]["note"].get<std::string>().find("2-core host (trace manifest)"), std::string::npos);
  EXPECT_EQ(doc["method"]["page_cache"].get<std::string>().rfind("not stated", 0), 0u);
  for (auto& [id, facts] : in.facts) {
    facts.manifest["hardware"] = {{"cores", 8}, {"ram_bytes", 16.0 * (1 << 30)}};
    facts.manifest["data"] = {{"bytes", 64.0 * (1 << 20)}};
  }
  doc = Analyze(in);
  EXPECT_NE(doc["noise"]["note"].get<std::string>().find("8-core host"), std::string::npos);
  // No warm-up run in this spec: the first runs may read from storage.
  EXPECT_EQ(doc["method"]["page_cache"].get<std::string>().rfind("no warm-up run", 0), 0u)
      << doc["method"]["page_cache"];
}

// The label comes from what ran the steps (the traces' manifests), not from an assumption: a CUDA run
// (validation/gpu/workers.json on an H200) was reported "emulated" until 2026-12-04.
TEST(Analysis, AcceleratorLabelComesFromTheTraces) {
  ExperimentSpec spec = AbSpec("");
  AnalysisInput in = Input(&spec);
  EXPECT_EQ(Analyze(in)["accelerator"], "emulated");
  for (auto& [id, facts] : in.facts) {
    facts.manifest["accelerator"] = "cuda";
    facts.manifest["hardware"]["gpus"] = {{{"name", "NVIDIA H200"}}};
  }
  nlohmann::json doc = Analyze(in);
  EXPECT_EQ(doc["accelerator"], "cuda");
  EXPECT_NE(doc["accelerator_note"].get<std::string>().find("ran on a CUDA GPU (NVIDIA H200)"), std::string::npos)
      << doc["accelerator_note"];
  EXPECT_NE(RenderMarkdownReport(doc).find("**Accelerator: cuda.**"), std::string::npos);
  // A malformed hardware block names no device and crashes nothing.
  for (auto& [id, facts] : in.facts) facts.manifest["hardware"] = "h200";
  EXPECT_NE(Analyze(in)["accelerator_note"].get<std::string>().find("ran on a CUDA GPU (CUDA events)"),
            std::string::npos);
  in.facts.begin()->second.manifest["accelerator"] = "emulated";
  EXPECT_EQ(Analyze(in)["accelerator"], "mixed");
}

TEST(Analysis, ContentMismatchFailsTheRun) {
  ExperimentSpec spec = AbSpec("");
  AnalysisInput in = Input(&spec);
  in.facts["A.train.r2"].hash_by_epoch_index[{0, 1}] = "different";
  nlohmann::json doc = Analyze(in);
  EXPECT_FALSE(doc["correctness"]["pass"].get<bool>());
  EXPECT_TRUE(ChecksFailed(doc));
}

TEST(Analysis, ReportIsAFunctionOfTheMeasurements) {
  ExperimentSpec spec = AbSpec("");
  nlohmann::json a = Analyze(Input(&spec));
  nlohmann::json b = Analyze(Input(&spec));
  EXPECT_EQ(a.dump(1), b.dump(1));
  std::string md = RenderMarkdownReport(a);
  EXPECT_EQ(md, RenderMarkdownReport(b));
  EXPECT_NE(md.find("**Accelerator: emulated.**"), std::string::npos);
  EXPECT_NE(md.find("## Observed bottlenecks (measured)"), std::string::npos);
  EXPECT_NE(md.find("## Hypotheses"), std::string::npos);
  EXPECT_NE(md.find("rollback if:"), std::string::npos);
  EXPECT_NE(RenderSuiteTable(a).find("| A | num_workers=1 | B | 90.0 | 100.0 (90.0–110.0) | -10.0% ✓"),
            std::string::npos)
      << RenderSuiteTable(a);
}

TEST(Analysis, PredictionErrorUnits) {
  EXPECT_DOUBLE_EQ(PredictionError(kTrainThroughput, 110, 100), 10);
  EXPECT_DOUBLE_EQ(PredictionError(kGpuIdle, 0.25, 0.5), -25);
}

TEST(Predictor, BatchSizesFollowEpochs) {
  // 20 samples, batch 8: 8 8 4 | 8 8 4 | 8 ...
  EXPECT_EQ(BatchSizes(20, 8, 7), (std::vector<int64_t>{8, 8, 4, 8, 8, 4, 8}));
  EXPECT_EQ(BatchSizes(0, 8, 2), (std::vector<int64_t>{8, 8}));
}

TEST(Measurement, CompareContentAndOrder) {
  TraceFacts a = Facts({0, 1, 2, 3}, "h"), b = Facts({0, 1, 2, 3}, "h");
  EXPECT_TRUE(CompareContent(a, b).pass);
  b.hash_by_epoch_index[{0, 2}] = "x";
  SampleCheck c = CompareContent(a, b);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.mismatched, 1);
  EXPECT_NE(c.detail.find("epoch 0 index 2"), std::string::npos);
  TraceFacts shorter = Facts({0, 1}, "h");
  EXPECT_TRUE(CompareOrder(a, shorter, -1).pass);  // prefix of the longer run
  TraceFacts swapped = Facts({1, 0, 2, 3}, "h");
  EXPECT_EQ(CompareOrder(a, swapped, -1).mismatched, 2);
  EXPECT_FALSE(CompareContent(TraceFacts{}, TraceFacts{}).pass);  // nothing compared is not a pass
}

TEST(Measurement, TraceFactsKeepDeliveredSamplesOnly) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(::testing::TempDir()) / "validation_facts";
  fs::create_directories(dir);
  fs::path path = dir / "t.jsonl";
  auto sample = [](int batch, int index, int t, const char* hash) {
    return "{\"type\":\"sample\",\"rank\":0,\"epoch\":0,\"index\":" + std::to_string(index) +
           ",\"batch\":" + std::to_string(batch) + ",\"worker\":0,\"t_start_ns\":" + std::to_string(t) +
           ",\"read_ns\":1,\"decode_ns\":1,\"augment_ns\":1,\"read_bytes\":1,\"out_bytes\":1,\"format\":\"jpeg\","
           "\"width\":1,"
           "\"height\":1,\"frames\":1,\"minflt\":" + std::to_string(10 * index) + ",\"hash\":\"" + hash + "\"}\n";
  };
  std::ofstream(path)
      << "{\"type\":\"header\",\"schema\":\"simreplay.trace/1\",\"manifest\":{\"hardware\":{\"cores\":2}}}\n"
      << sample(0, 5, 20, "b") << sample(0, 7, 10, "a") << sample(1, 9, 30, "c")  // batch 1 never delivered
      << "{\"type\":\"batch\",\"rank\":0,\"epoch\":0,\"batch\":0,\"worker\":0,\"size\":2,\"collate_ns\":1,"
         "\"t_ready_ns\":1,\"wait_ns\":1,\"pin_ns\":0,\"h2d_ns\":0,\"h2d_bytes\":0}\n"
      << "{\"type\":\"worker\",\"rank\":0,\"worker\":-1,\"pid\":1,\"t_ns\":100,\"rss_bytes\":300,\"pss_bytes\":200,"
         "\"cpu_ns\":0,\"io_read_bytes\":0}\n"
      << "{\"type\":\"worker\",\"rank\":0,\"worker\":0,\"pid\":2,\"t_ns\":100,\"rss_bytes\":90,\"pss_bytes\":50,"
         "\"cpu_ns\":0,\"io_read_bytes\":0}\n"
      << "{\"type\":\"worker\",\"rank\":0,\"worker\":-1,\"pid\":1,\"t_ns\":600,\"rss_bytes\":320,\"pss_bytes\":200,"
         "\"cpu_ns\":0,\"io_read_bytes\":0}\n";
  auto facts = ReadTraceFacts(path.string());
  ASSERT_TRUE(facts.ok()) << facts.status().message();
  ASSERT_EQ(facts->order_by_epoch.size(), 1u);
  EXPECT_EQ(facts->order_by_epoch[0], (std::vector<int64_t>{7, 5}));  // by start time within the batch
  EXPECT_EQ(facts->hash_by_epoch_index.size(), 2u);
  // Tick 100: main RSS 300 + worker PSS 50; tick 600: 320 alone.
  EXPECT_DOUBLE_EQ(facts->peak_process_memory_bytes, 350);
  // Page faults of the delivered samples only: (50 + 70) / 2; batch 1's 90 left out.
  EXPECT_DOUBLE_EQ(facts->sample_minflt, 60);
}

}  // namespace
}  // namespace simreplay::validation
