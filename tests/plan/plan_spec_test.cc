// The plan file loader: the issue's example parses as written; bad input gives FILE:LINE and what
// was expected and found.
#include "plan/plan_spec.h"

#include <gtest/gtest.h>

#include <string>

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
