// The plan file loader: the issue's example parses as written; bad input gives FILE:LINE and what
// was expected and found.
#include "plan/plan_spec.h"

#include "plan/failure_model.h"
#include "scenarios/scenario.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace simreplay::plan {
namespace {

// The example of docs/plan-format.md (and of the issue), verbatim.
const char* kExample = R"({"scenario": "scenario.json",
 "job": {"target": {"samples": 1.2e9},
         "model": {"parameters": 7e9, "optimizer": "adam", "precision": "bf16",
                   "activation_bytes_per_gpu": 20e9},
         "eval": {"every_steps": 5000, "duration_s": 600},
         "checkpoint": {"every_s": "auto", "write_bytes_per_s": 2e9, "read_bytes_per_s": 4e9},
         "phases": {"download_bytes": 5e12, "download_bytes_per_s": 1e9, "preprocess_s": 36000,
                    "export_s": 3600, "copy_out_bytes": 2e12, "copy_out_bytes_per_s": 1e9}},
 "measured_on": "a100-80gb",
 "candidates": {"gpu": ["a100-80gb", "h100-sxm", "h200", "mi300x"], "nodes": [1, 2, 4, 8, 16],
                "gpus_per_node": 8, "sharding": ["ddp", "fsdp"]},
 "reliability": {"gpu_mtbf_h": 50000, "restart_s": 900},
 "reservation": {"days": [7, 30], "buffer": 0.15},
 "prices_per_gpu_hour": {"a100-80gb": 1.8, "h100-sxm": 3.0, "h200": 3.8, "mi300x": 2.5}})";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return text.replace(pos, from.size(), to);
}

TEST(PlanSpec, ParsesTheDocumentedExample) {
  auto plan = ParsePlan(kExample, "/plans/p.json");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->scenario_path, "/plans/scenario.json");
  EXPECT_EQ(plan->target.kind, TargetSpec::Kind::kSamples);
  EXPECT_DOUBLE_EQ(plan->target.value, 1.2e9);
  EXPECT_DOUBLE_EQ(plan->model.parameters, 7e9);
  EXPECT_TRUE(plan->model.activation_given);
  EXPECT_TRUE(plan->checkpoint.auto_interval);
  EXPECT_EQ(plan->candidates.gpus.size(), 4u);
  EXPECT_EQ(plan->candidates.nodes, (std::vector<int>{1, 2, 4, 8, 16}));
  EXPECT_EQ(plan->candidates.sharding, (std::vector<std::string>{"ddp", "fsdp"}));
  EXPECT_DOUBLE_EQ(plan->reservation.buffer, 0.15);
  EXPECT_DOUBLE_EQ(plan->prices_per_gpu_hour.at("mi300x"), 2.5);
  EXPECT_DOUBLE_EQ(plan->phases.copy_out_bytes, 2e12);
  EXPECT_FALSE(plan->network.given);  // defaults, flagged assumed in the outputs
}

TEST(PlanSpec, TargetMayBeEpochsOrSteps) {
  auto epochs = ParsePlan(Replace(kExample, R"({"samples": 1.2e9})", R"({"epochs": 3})"), "p.json");
  ASSERT_TRUE(epochs.ok()) << epochs.status().message();
  EXPECT_EQ(epochs->target.kind, TargetSpec::Kind::kEpochs);
  auto steps = ParsePlan(Replace(kExample, R"({"samples": 1.2e9})", R"({"steps": 100000})"), "p.json");
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ(steps->target.kind, TargetSpec::Kind::kSteps);
}

TEST(PlanSpec, GlobalBatchRuleAndOverlapDefaultAreLabelledByWhereTheyCameFrom) {
  auto plain = ParsePlan(kExample, "p.json");
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->global_batch.critical_batch_samples, 0);  // no rule: candidates far above warn
  EXPECT_DOUBLE_EQ(plain->network.overlap, kDefaultBackwardShareOfStep);
  EXPECT_FALSE(plain->network.overlap_given);
  EXPECT_FALSE(plain->uncertainty_given);
  auto given = ParsePlan(
      Replace(Replace(kExample, R"("target": {"samples": 1.2e9},)",
                      R"("target": {"samples": 1.2e9}, "global_batch": {"critical_batch_samples": 4096},)"),
              R"("reservation":)", R"("network": {"nic_bytes_per_s": 5e10, "overlap": 0.25}, "reservation":)"),
      "p.json");
  ASSERT_TRUE(given.ok()) << given.status().message();
  EXPECT_DOUBLE_EQ(given->global_batch.critical_batch_samples, 4096);
  EXPECT_EQ(given->global_batch.reference_samples, 0);  // the measured scenario's
  EXPECT_DOUBLE_EQ(given->network.overlap, 0.25);
  EXPECT_TRUE(given->network.overlap_given);
  // A network object without "overlap" keeps the default, still assumed.
  auto net = ParsePlan(Replace(kExample, R"("reservation":)", R"("network": {"nic_bytes_per_s": 5e10}, "reservation":)"),
                       "p.json");
  ASSERT_TRUE(net.ok());
  EXPECT_DOUBLE_EQ(net->network.overlap, kDefaultBackwardShareOfStep);
  EXPECT_FALSE(net->network.overlap_given);
}

TEST(PlanSpec, NodeCountsFollowTheScenarioLoadersLimit) {
  // Whatever the scenario loader holds (scenarios::kMaxClusterNodes) the plan accepts, and no more.
  const std::string max = std::to_string(scenarios::kMaxClusterNodes);
  auto at_limit = ParsePlan(Replace(kExample, "[1, 2, 4, 8, 16]", "[1, 4096, " + max + "]"), "p.json");
  ASSERT_TRUE(at_limit.ok()) << at_limit.status().message();
  auto over = ParsePlan(
      Replace(kExample, "[1, 2, 4, 8, 16]", "[1, " + std::to_string(scenarios::kMaxClusterNodes + 1) + "]"), "p.json");
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("p.json:10: 'candidates.nodes' values must be whole numbers in [1, " + max +
                                         "] (the scenario loader's cluster.nodes limit)"),
            std::string::npos)
      << over.status().message();
}

TEST(PlanSpec, ErrorsNameFileLineExpectedAndFound) {
  struct Case {
    std::string from, to, expected;
  };
  const Case cases[] = {
      // Line 3 holds "model": the parameter count is negative there.
      {R"("parameters": 7e9)", R"("parameters": -7e9)", "p.json:3: 'job.model.parameters' must be a number in [1, "},
      {R"("optimizer": "adam")", R"("optimizer": "lion")", "p.json:3: 'job.model.optimizer' must be one of adam"},
      {R"("every_s": "auto")", R"("every_s": "often")", "p.json:6: 'job.checkpoint.every_s' must be \"auto\""},
      {R"("gpus_per_node": 8)", R"("gpus_per_node": 8, "gpu_count": 2)", "p.json:11: unknown key 'gpu_count'"},
      {R"("sharding": ["ddp", "fsdp"])", R"("sharding": ["ddp", "zero2"])", "found \"zero2\""},
      {R"("nodes": [1, 2, 4, 8, 16])", R"("nodes": [1, 2, 2])", "p.json:10: 'candidates.nodes' lists 2 twice"},
      {R"("target": {"samples": 1.2e9},)", R"("target": {"samples": 1.2e9}, "global_batch": {"reference_samples": 64},)",
       "p.json:2: missing required number 'job.global_batch.critical_batch_samples'"},
      {R"({"samples": 1.2e9})", R"({"samples": 1.2e9, "steps": 5})", "exactly one of"},
      {R"("days": [7, 30])", R"("days": [7, -30])", "p.json:13: 'reservation.days' values must be numbers"},
      {R"("h200": 3.8, )", "", "missing required number 'prices_per_gpu_hour.h200'"},
      {R"("scenario": "scenario.json",)", R"("schema": "simreplay.plan-input/9", "scenario": "scenario.json",)",
       "p.json:1: expected schema \"simreplay.plan-input/1\", found \"simreplay.plan-input/9\""},
  };
  for (const auto& c : cases) {
    auto plan = ParsePlan(Replace(kExample, c.from, c.to), "p.json");
    ASSERT_FALSE(plan.ok()) << c.to;
    EXPECT_NE(plan.status().message().find(c.expected), std::string::npos)
        << "got: " << plan.status().message() << "\nexpected: " << c.expected;
  }
}

TEST(PlanSpec, RejectsMalformedAndNonFiniteJson) {
  auto truncated = ParsePlan(std::string(kExample).substr(0, 200), "p.json");
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.status().message().find("malformed JSON"), std::string::npos);
  auto nan = ParsePlan(Replace(kExample, "1.2e9", "NaN"), "p.json");
  ASSERT_FALSE(nan.ok());
  EXPECT_NE(nan.status().message().find("NaN"), std::string::npos);
  auto missing = LoadPlanFile("/nonexistent/plan.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
}

// Found by the plan fuzz target on its first run (2026-12-01): a number no double holds aborted
// `simreplay plan` (nlohmann's out_of_range is not a parse_error and escaped).
TEST(PlanSpec, RegressionNumberOverflowIsFileLineError) {
  auto overflow = ParsePlan(Replace(kExample, "1.2e9", "1e400"), "p.json");
  ASSERT_FALSE(overflow.ok());
  EXPECT_NE(overflow.status().message().find("a number out of range: 1e400"), std::string::npos)
      << overflow.status().message();
  EXPECT_EQ(overflow.status().message().rfind("p.json:", 0), 0u) << overflow.status().message();
}

TEST(PlanSpec, ReliabilityDefaultsAreAssumedAndGivenRatesAreInput) {
  auto plan = ParsePlan(kExample, "p.json");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const ReliabilitySpec& rel = plan->reliability;
  EXPECT_EQ(rel.failures.gpu_mtbf_h.status, "input");  // 50000 in the example
  EXPECT_DOUBLE_EQ(rel.failures.gpu_mtbf_h.value, 50000);
  EXPECT_EQ(rel.failures.node_mtbf_h.status, "assumed");
  EXPECT_NE(rel.failures.node_mtbf_h.source.find("2410.21680"), std::string::npos);
  EXPECT_TRUE(rel.failures.floor.enabled);
  ASSERT_TRUE(rel.restart.fixed_s.has_value());  // "restart_s": 900
  EXPECT_EQ(rel.restart.fixed_s->status, "input");
  EXPECT_DOUBLE_EQ(plan->reservation.probability, 0.9);
  EXPECT_EQ(plan->monte_carlo.trials, 2000);

  auto parts = ParsePlan(
      Replace(kExample, R"("reliability": {"gpu_mtbf_h": 50000, "restart_s": 900})",
              R"("reliability": {"node_mtbf_h": "none", "network_mtbf_h": 30000, "small_job_floor": "none",
                 "restart": {"detection_s": 60, "process_group_init_exponent": 2}},
 "monte_carlo": {"trials": 500, "seed": 9})"),
      "p.json");
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  EXPECT_TRUE(std::isinf(parts->reliability.failures.node_mtbf_h.value));
  EXPECT_EQ(parts->reliability.failures.network_mtbf_h.status, "input");
  EXPECT_EQ(parts->reliability.failures.gpu_mtbf_h.status, "assumed");
  EXPECT_FALSE(parts->reliability.failures.floor.enabled);
  EXPECT_FALSE(parts->reliability.restart.fixed_s.has_value());
  EXPECT_EQ(parts->reliability.restart.detection_s.status, "input");
  EXPECT_EQ(parts->reliability.restart.rescheduling_s.status, "assumed");
  EXPECT_DOUBLE_EQ(parts->reliability.restart.init_exponent.value, 2);
  EXPECT_EQ(parts->monte_carlo.trials, 500);
  EXPECT_EQ(parts->monte_carlo.seed, 9u);

  // A measured GPU rate that fails jobs more often than the assumed floor allows is used, not refused
  // (plan/failure_model.h: FloorContradictedByGivenRates warns); before 2026-12-07 this plan stopped with
  // "cannot both hold".
  auto measured = ParsePlan(Replace(kExample, R"("gpu_mtbf_h": 50000)", R"("gpu_mtbf_h": 5000)"), "p.json");
  ASSERT_TRUE(measured.ok()) << measured.status().message();
  EXPECT_EQ(measured->reliability.failures.gpu_mtbf_h.status, "input");
  EXPECT_TRUE(FloorContradictedByGivenRates(measured->reliability.failures).has_value());
}

// Candidates of one GPU per node with the default failure model: the floor's reference job keeps its
// own 8-GPU nodes, so the plan is accepted (it used to be refused as a contradiction).
TEST(PlanSpec, OneGpuPerNodeCandidatesTakeTheDefaultFailureModel) {
  auto plan = ParsePlan(Replace(Replace(kExample, R"("gpus_per_node": 8)", R"("gpus_per_node": 1)"),
                                R"("reliability": {"gpu_mtbf_h": 50000, "restart_s": 900})", R"("reliability": {})"),
                        "p.json");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->candidates.gpus_per_node, 1);
  EXPECT_TRUE(plan->reliability.failures.floor.enabled);
  EXPECT_EQ(plan->reliability.failures.floor.reference_gpus_per_node.status, "assumed");
  EXPECT_DOUBLE_EQ(plan->reliability.failures.floor.reference_gpus_per_node.value, 8);
}

TEST(PlanSpec, ContradictoryOrImpossibleReliabilityIsFileLineError) {
  const std::string line = R"("reliability": {"gpu_mtbf_h": 50000, "restart_s": 900})";
  struct Case {
    std::string to, expected;
  };
  const Case cases[] = {
      {R"("reliability": {"gpu_mtbf_h": 0})", "p.json:12: 'reliability.gpu_mtbf_h' must be a number in (0, "},
      {R"("reliability": {"gpu_mtbf_h": -50000})", "p.json:12: 'reliability.gpu_mtbf_h' must be a number in (0, "},
      {R"("reliability": {"gpu_mtbf_h": "none"})", "found \"none\""},
      {R"("reliability": {"node_mtbf_h": 0})", "'reliability.node_mtbf_h' must be a number in (0, 1e+12] or \"none\""},
      {R"("reliability": {"small_job_floor": {"exponent": 1}})", "'reliability.small_job_floor.exponent' must be"},
      {R"("reliability": {"small_job_floor": {"job_mttf_h": 0}})", "small_job_floor.job_mttf_h' must be a number in (0"},
      // 5,000 h per GPU fails 1,024 GPUs every 4.1 h from GPUs alone, below the floor's all-cause 7.9 h:
      // refused when the floor is given too (with the assumed floor the given rate is used and warned).
      {R"("reliability": {"gpu_mtbf_h": 5000, "small_job_floor": {"job_mttf_h": 7.9}})",
       "p.json:12: the small-job floor"},
      // The floor measured on one-GPU nodes: 1,024 nodes' hardware alone fails that job every 7.59 h.
      {R"("reliability": {"small_job_floor": {"job_mttf_h": 7.9, "reference_gpus": 1024, "reference_gpus_per_node": 1}})",
       "all-cause job MTTF of 7.9 h at 1024 GPUs in 1024 nodes"},
      {R"("reliability": {"small_job_floor": {"job_mttf_h": 7.9, "reference_gpus_per_node": 0}})",
       "'reliability.small_job_floor.reference_gpus_per_node' must be a number in (0, 1024]"},
      {R"("reliability": {"restart_s": 900, "restart": {"detection_s": 60}})",
       "p.json:12: 'reliability.restart_s' (one fixed figure) and 'reliability.restart' (its parts) contradict"},
      {R"("reliability": {"restart": {"detection_s": -1}})", "'reliability.restart.detection_s' must be a number"},
      {R"("reliability": {"restart": {"process_group_init_reference_ranks": 0}})",
       "'reliability.restart.process_group_init_reference_ranks' must be a number in (0"},
      {R"("reliability": {}, "monte_carlo": {"trials": 5})", "'monte_carlo.trials' must be a number in [100, "},
      {R"("reliability": {}, "reservation_x": 1)", "unknown key 'reservation_x'"},
  };
  for (const auto& c : cases) {
    auto plan = ParsePlan(Replace(kExample, line, c.to), "p.json");
    ASSERT_FALSE(plan.ok()) << c.to;
    EXPECT_NE(plan.status().message().find(c.expected), std::string::npos)
        << "got: " << plan.status().message() << "\nexpected: " << c.expected;
  }
  auto probability = ParsePlan(Replace(kExample, R"("buffer": 0.15)", R"("buffer": 0.15, "probability": 1.5)"), "p.json");
  ASSERT_FALSE(probability.ok());
  EXPECT_NE(probability.status().message().find("p.json:13: 'reservation.probability' must be a number in [0.5, 0.999]"),
            std::string::npos)
      << probability.status().message();
}

TEST(PlanSpec, KnownFailuresAreAnAscendingScheduleAfterThePhasesBeforeTraining) {
  const std::string line = R"("reliability": {"gpu_mtbf_h": 50000, "restart_s": 900})";
  // The example's phases before training: download 5e12 B at 1e9 B/s (5,000 s) + preprocess 36,000 s.
  auto plan = ParsePlan(Replace(kExample, line, R"("reliability": {"restart_s": 900, "known_failures": [41000.5, 90000]})"),
                        "p.json");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->reliability.known_failures_s, (std::vector<double>{41000.5, 90000}));
  EXPECT_TRUE(plan->reliability.known_failures_given);
  EXPECT_FALSE(ParsePlan(kExample, "p.json")->reliability.known_failures_given);
  auto none = ParsePlan(Replace(kExample, line, R"("reliability": {"known_failures": []})"), "p.json");
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_TRUE(none->reliability.known_failures_given);  // known: no failure at all
  EXPECT_TRUE(none->reliability.known_failures_s.empty());
  struct Case {
    std::string to, expected;
  };
  const Case cases[] = {
      {R"("reliability": {"known_failures": [90000, 50000]})",
       "p.json:12: 'reliability.known_failures' values must be seconds in (0, 1e10], strictly ascending, found 50000"},
      {R"("reliability": {"known_failures": [50000, 50000]})", "strictly ascending, found 50000"},
      {R"("reliability": {"known_failures": ["1h"]})", "found \"1h\""},
      {R"("reliability": {"known_failures": 50000})", "'reliability.known_failures' must be an array of seconds"},
      {R"("reliability": {"known_failures": [41000]})",
       "'reliability.known_failures' must fall after the phases before training (download + preprocess = 41000 s), "
       "found 41000"},
  };
  for (const auto& c : cases) {
    auto bad = ParsePlan(Replace(kExample, line, c.to), "p.json");
    ASSERT_FALSE(bad.ok()) << c.to;
    EXPECT_NE(bad.status().message().find(c.expected), std::string::npos)
        << "got: " << bad.status().message() << "\nexpected: " << c.expected;
  }
}

TEST(PlanSpec, LaunchSpreadIsTwoOrMoreTimedLaunchesOfTheStartUpOrOfAFixedRestart) {
  const std::string line = R"("reliability": {"gpu_mtbf_h": 50000, "restart_s": 900})";
  auto plan = ParsePlan(
      Replace(kExample, line,
              R"("reliability": {"restart_s": 900, "launch_spread": {"preprocess_s": [36000, 36500.5], "restart_s": [850, 900, 1200]}})"),
      "p.json");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->reliability.launch_preprocess_s, (std::vector<double>{36000, 36500.5}));
  EXPECT_EQ(plan->reliability.launch_restart_s, (std::vector<double>{850, 900, 1200}));
  EXPECT_TRUE(ParsePlan(kExample, "p.json")->reliability.launch_preprocess_s.empty());
  struct Case {
    std::string to, expected;
  };
  const Case cases[] = {
      {R"("reliability": {"launch_spread": {"preprocess_s": [36000]}})",
       "p.json:12: 'reliability.launch_spread.preprocess_s' must be an array of 2 to 100000 launch times in s, found 1 "
       "value(s)"},
      {R"("reliability": {"launch_spread": {"preprocess_s": 36000}})", "launch times in s, found 36000"},
      {R"("reliability": {"launch_spread": {"preprocess_s": [36000, -1]}})",
       "'reliability.launch_spread.preprocess_s' values must be seconds in (0, 1e7], found -1"},
      {R"("reliability": {"launch_spread": {"preprocess_s": [36000, "nan"]}})", "found \"nan\""},
      {R"("reliability": {"launch_spread": {}})", "needs 'preprocess_s' or 'restart_s'"},
      {R"("reliability": {"launch_spread": {"start_s": [1, 2]}})", "unknown key 'start_s' in 'reliability.launch_spread'"},
      {R"("reliability": {"launch_spread": {"restart_s": [850, 900]}})",
       "'reliability.launch_spread.restart_s' gives launches of 'reliability.restart_s' (one fixed figure), which is "
       "not given"},
  };
  for (const auto& c : cases) {
    auto bad = ParsePlan(Replace(kExample, line, c.to), "p.json");
    ASSERT_FALSE(bad.ok()) << c.to;
    EXPECT_NE(bad.status().message().find(c.expected), std::string::npos)
        << "got: " << bad.status().message() << "\nexpected: " << c.expected;
  }
}

TEST(PlanSpec, SavesMayBeEveryNStepsButNotByTimeAndStepsAtOnce) {
  const std::string line = R"("every_s": "auto")";
  auto plan = ParsePlan(Replace(kExample, line, R"("every_steps": 2000)"), "p.json");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->checkpoint.every_steps, 2000);
  EXPECT_FALSE(plan->checkpoint.auto_interval);
  EXPECT_EQ(ParsePlan(kExample, "p.json")->checkpoint.every_steps, 0);
  auto both = ParsePlan(Replace(kExample, line, R"("every_s": 600, "every_steps": 2000)"), "p.json");
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("p.json:6: 'job.checkpoint' states both 'every_s' and 'every_steps'"),
            std::string::npos)
      << both.status().message();
  for (const char* bad : {R"("every_steps": 0)", R"("every_steps": 2.5)", R"("every_steps": "often")"}) {
    auto r = ParsePlan(Replace(kExample, line, bad), "p.json");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("every_steps"), std::string::npos) << r.status().message();
  }
}

TEST(PlanSpec, StateBytesPerParameterFollowTheZeroPaper) {
  // Mixed-precision Adam: 2 (bf16 weights) + 2 (grads) + 4 (fp32 master) + 8 (m, v) = 16 B; the
  // checkpoint leaves out the gradients: 14 B.
  EXPECT_DOUBLE_EQ(StateBytes("adam", "bf16").total(), 16);
  EXPECT_DOUBLE_EQ(StateBytes("adam", "bf16").checkpoint(), 14);
  // fp32 Adam: 4 + 4 + 8, no master copy = 16 B; SGD with momentum in bf16: 2 + 2 + 4 + 4 = 12 B.
  EXPECT_DOUBLE_EQ(StateBytes("adamw", "fp32").total(), 16);
  EXPECT_DOUBLE_EQ(StateBytes("sgd", "bf16").total(), 12);
  EXPECT_DOUBLE_EQ(StateBytes("adam", "bf16").gradients, 2);
}

}  // namespace
}  // namespace simreplay::plan
