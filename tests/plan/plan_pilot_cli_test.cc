// `simreplay plan` with the pilot's checks and rules, end to end: a preflight that does not match the
// plan (micro-batch, accelerator, software stack) is refused in one line with exit 3 and nothing
// written, or used with --allow-preflight-mismatch and the override recorded; a sequence length scales
// step time and activations; activation checkpointing "auto" makes a candidate fit and says so; a ROCm
// candidate says it needs a qualified stack. Plans of a few one-node candidates, to stay quick.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli_runner.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using simreplay::testing::RunCli;
using simreplay::testing::Slurp;

const std::string kPlanData = std::string(SIMREPLAY_SOURCE_DIR) + "/tests/plan/data/";

fs::path PilotDir(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// tests/plan/data/small_plan.json with one node of 2 GPUs per candidate and the scenario's absolute path.
json OneNodePlan(const std::vector<std::string>& gpus) {
  json plan = json::parse(Slurp(kPlanData + "small_plan.json"));
  plan["scenario"] = std::string(SIMREPLAY_SOURCE_DIR) + "/examples/plan/scenario.json";
  plan["candidates"]["gpu"] = gpus;
  plan["candidates"]["nodes"] = {1};
  const json prices = {{"a100-40gb", 1.2}, {"a100-80gb", 1.8}, {"h100-sxm", 3.0}, {"mi300x", 3.5}};
  plan["prices_per_gpu_hour"] = json::object();
  for (const auto& g : gpus) plan["prices_per_gpu_hour"][g] = prices.at(g);
  return plan;
}

fs::path Write(const fs::path& path, const json& j) {
  std::ofstream(path) << j.dump(1);
  return path;
}

std::map<std::string, json> Assumptions(const json& plan) {
  std::map<std::string, json> rows;
  for (const auto& a : plan["assumptions"]) rows[a["input"].get<std::string>() + "|" + a["value"].dump()] = a;
  return rows;
}

const json* Row(const json& plan, const std::string& gpu) {
  for (const auto& c : plan["candidates"]) {
    if (c["gpu"] == gpu) return &c;
  }
  return nullptr;
}

TEST(PlanPilot, AMismatchedPreflightIsRefusedInOneLineOrUsedWithTheOverrideRecorded) {
  const fs::path dir = PilotDir("plan_pilot_mismatch");
  const fs::path plan = Write(dir / "plan.json", OneNodePlan({"a100-80gb"}));
  json pf = json::parse(Slurp(kPlanData + "preflight.json"));  // a CUDA fixture
  pf["job"] = {{"micro_batch_samples", 4}};                     // the scenario's loader runs 8
  const fs::path small = Write(dir / "pf_small.json", pf);
  auto r = RunCli("plan " + plan.string() + " --out " + (dir / "out").string() + " --preflight " + small.string());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("the preflight does not match the plan: micro-batch: the pilot ran 4 samples per rank, "
                          "the plan's scenario 8"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out"));

  r = RunCli("plan " + plan.string() + " --out " + (dir / "out").string() + " --preflight " + small.string() +
             " --allow-preflight-mismatch");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json out = json::parse(Slurp(dir / "out" / "plan.json"));
  bool overridden = false;
  for (const auto& a : out["assumptions"]) {
    if (a["input"] == "preflight_check" && a["status"] == "overridden") {
      overridden = true;
      EXPECT_EQ(a["source"], "--allow-preflight-mismatch");
    }
    if (a["input"] == "step_time_s[a100-80gb]") {
      EXPECT_EQ(a["status"], "assumed");  // not this plan's measurement
    }
  }
  EXPECT_TRUE(overridden) << out["assumptions"].dump();
  EXPECT_DOUBLE_EQ((*Row(out, "a100-80gb"))["step_time_s"].get<double>(), 0.2);  // used, labelled

  // Another accelerator than measured_on: refused.
  pf = json::parse(Slurp(kPlanData + "preflight.json"));
  pf["manifest"] = {{"hardware", {{"gpus", {{{"name", "NVIDIA H100 80GB HBM3"}, {"memory_bytes", 85e9}}}}}}};
  r = RunCli("plan " + plan.string() + " --out " + (dir / "out2").string() + " --preflight " +
             Write(dir / "pf_h100.json", pf).string());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("accelerator: the pilot ran on 'NVIDIA H100 80GB HBM3' (h100-sxm in the catalogue), the "
                          "plan's measured_on is a100-80gb"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "out2"));

  // A software stack other than the capture's (examples/quickstart's trace ran torch 1.13.0a0): refused.
  pf = json::parse(Slurp(kPlanData + "preflight_cpu_real.json"));
  pf["manifest"]["versions"]["torch"] = "2.4.1";
  const fs::path other = Write(dir / "pf_torch.json", pf);
  r = RunCli("plan " + plan.string() + " --out " + (dir / "out3").string() + " --preflight " + other.string());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("versions.torch: 2.4.1 -> 1.13.0a0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--allow-manifest-diff"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out3"));
}

TEST(PlanPilot, SequenceLengthCheckpointingAndRocmAreSaidPerCandidate) {
  const fs::path dir = PilotDir("plan_pilot_shape");
  json p = OneNodePlan({"a100-40gb", "a100-80gb", "mi300x"});
  // The scenario's 0.25 s step and 10 GB of activations were measured at 2048 tokens; the run is 4096
  // with half of each quadratic: x3. States 1.3e9 x 16 B = 20.8 GB; activations 30 GB: 50.8 GB fits
  // 80 GB but not 40 GB (36 GB usable) unless checkpointing frees 70% (default) of them: 29.8 GB.
  p["job"]["model"]["activation_bytes_per_gpu"] = 10e9;
  p["job"]["sequence"] = {
      {"length", 4096}, {"measured_length", 2048}, {"attention_share_time", 0.5}, {"attention_share_memory", 0.5}};
  p["job"]["activation_checkpointing"] = {{"use", "auto"}};
  const fs::path plan = Write(dir / "plan.json", p);
  auto r = RunCli("plan " + plan.string() + " --out " + (dir / "a").string() + " --jobs 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto again = RunCli("plan " + plan.string() + " --out " + (dir / "b").string() + " --jobs 2");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(Slurp(dir / "a" / "plan.json"), Slurp(dir / "b" / "plan.json"));
  const json out = json::parse(Slurp(dir / "a" / "plan.json"));

  const json& a80 = *Row(out, "a100-80gb");
  EXPECT_NEAR(a80["step_time_s"].get<double>(), 0.75, 1e-9);
  EXPECT_TRUE(a80["fits_memory"].get<bool>());
  EXPECT_FALSE(a80["activation_checkpointing"].get<bool>());
  EXPECT_NEAR(a80["memory_per_gpu_bytes"].get<double>(), 20.8e9 + 30e9, 1e3);

  const json& a40 = *Row(out, "a100-40gb");
  EXPECT_TRUE(a40["fits_memory"].get<bool>());
  EXPECT_TRUE(a40["activation_checkpointing"].get<bool>());
  EXPECT_NEAR(a40["memory_per_gpu_bytes"].get<double>(), 20.8e9 + 9e9, 1e3);
  bool said = false;
  for (const auto& w : a40["warnings"]) said = said || w.get<std::string>().rfind("fits only with activation", 0) == 0;
  EXPECT_TRUE(said) << a40["warnings"].dump();
  bool assumed_ac = false;
  for (const auto& a : a40["assumed"]) assumed_ac = assumed_ac || a == "activation_checkpointing";
  EXPECT_TRUE(assumed_ac);

  const json& mi = *Row(out, "mi300x");
  ASSERT_EQ(mi["needs"].size(), 1u);
  EXPECT_NE(mi["needs"][0].get<std::string>().find("requires a qualified ROCm stack"), std::string::npos);
  EXPECT_TRUE(a80["needs"].empty());

  const auto rows = Assumptions(out);
  ASSERT_TRUE(rows.count("sequence_scaling[a100-80gb]|\"x3\"")) << out["assumptions"].dump();
  EXPECT_EQ(rows.at("sequence_scaling[a100-80gb]|\"x3\"")["status"], "input");
  EXPECT_EQ(rows.at("activation_checkpointing.recompute_fraction|\"0.33\"")["status"], "assumed");
}

TEST(PlanPilot, APilotShorterThanThePlansSequenceIsRefused) {
  const fs::path dir = PilotDir("plan_pilot_sequence");
  json p = OneNodePlan({"a100-80gb"});
  p["job"]["sequence"] = {{"length", 4096}};
  const fs::path plan = Write(dir / "plan.json", p);
  json pf = json::parse(Slurp(kPlanData + "preflight.json"));
  pf["measured"]["sequence_length"] = 1024;
  auto r = RunCli("plan " + plan.string() + " --out " + (dir / "out").string() + " --preflight " +
                  Write(dir / "pf.json", pf).string());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("sequence length: the pilot ran 1024 tokens, shorter than the plan's 4096"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

}  // namespace

namespace {

// Issue 27, item 4: the evaluation time a GPU preflight measured feeds job.eval when the plan file
// does not state one; a plan file's duration wins, and without either it stays 0, each labelled.
TEST(PlanPilot, AGpuPreflightsEvaluationTimeFeedsJobEvalUnlessThePlanStatesOne) {
  const fs::path dir = PilotDir("plan_pilot_eval");
  json plan = OneNodePlan({"a100-80gb"});
  plan["job"]["eval"].erase("duration_s");
  const fs::path unstated = Write(dir / "plan.json", plan);
  json pf = json::parse(Slurp(kPlanData + "preflight.json"));  // a CUDA fixture
  pf["measured"]["eval_s"] = 42.0;
  const fs::path preflight = Write(dir / "pf.json", pf);
  auto status_of = [](const json& out) {
    for (const auto& a : out["assumptions"]) {
      if (a["input"] == "eval.duration_s") return a;
    }
    return json();
  };
  auto r = RunCli("plan " + unstated.string() + " --out " + (dir / "a").string() + " --preflight " + preflight.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json row = status_of(json::parse(Slurp(dir / "a" / "plan.json")));
  EXPECT_EQ(row["status"], "measured") << row.dump();
  EXPECT_EQ(row["value"], "42");
  const json with_eval = json::parse(Slurp(dir / "a" / "plan.json"));

  plan["job"]["eval"]["duration_s"] = 300;
  const fs::path stated = Write(dir / "plan_stated.json", plan);
  r = RunCli("plan " + stated.string() + " --out " + (dir / "b").string() + " --preflight " + preflight.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  row = status_of(json::parse(Slurp(dir / "b" / "plan.json")));
  EXPECT_EQ(row["status"], "input") << row.dump();
  EXPECT_EQ(row["value"], "300");

  r = RunCli("plan " + unstated.string() + " --out " + (dir / "c").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  row = status_of(json::parse(Slurp(dir / "c" / "plan.json")));
  EXPECT_EQ(row["status"], "assumed") << row.dump();
  EXPECT_EQ(row["value"], "0");
  // The measured evaluations are in the budget: more evaluation time than without them.
  const json without = json::parse(Slurp(dir / "c" / "plan.json"));
  EXPECT_GT(with_eval["candidates"][0]["budget"]["eval_s"].get<double>(),
            without["candidates"][0]["budget"]["eval_s"].get<double>());
}

}  // namespace
