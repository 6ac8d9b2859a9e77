// The pilot rules (plan/pilot_rules.h) and the preflight checks (plan/preflight_checks.h): the
// sequence-length rule, activation checkpointing's cost, the precision step, and what makes a
// preflight not match a plan.
#include "plan/pilot_rules.h"

#include <gtest/gtest.h>

#include "plan/preflight_checks.h"

namespace simreplay::plan {
namespace {

TEST(PilotRules, SequenceRuleIsLinearPlusQuadratic) {
  // f(L) = a L + b L^2 with half of f quadratic at L = 1000: doubling L gives 0.5*2 + 0.5*4 = 3.
  EXPECT_DOUBLE_EQ(SequenceFactor(0.5, 1000, 2000), 3.0);
  EXPECT_DOUBLE_EQ(SequenceFactor(0.0, 1000, 2000), 2.0);  // all linear
  EXPECT_DOUBLE_EQ(SequenceFactor(1.0, 1000, 500), 0.25);  // all quadratic, halved
  // The share moves with the length: a = b*1000 at share 0.5; at 2000 tokens b L^2 / f = 2/3.
  EXPECT_NEAR(AttentionShareAt(0.5, 1000, 2000), 2.0 / 3, 1e-12);
  EXPECT_NEAR(AttentionShareAt(0.5, 1000, 1000), 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(AttentionShareAt(0.0, 1000, 8000), 0.0);
  EXPECT_DOUBLE_EQ(AttentionShareAt(1.0, 1000, 8000), 1.0);
  // Scaling there and back is the identity.
  const double s2000 = AttentionShareAt(0.3, 1000, 2000);
  EXPECT_NEAR(SequenceFactor(0.3, 1000, 2000) * SequenceFactor(s2000, 2000, 1000), 1.0, 1e-12);
}

TEST(PilotRules, SharesComeFromThePlanElseThePreflightElseTheDefault) {
  SequenceSpec spec;
  spec.length = 4096;
  spec.measured_length = 2048;
  // Default: assumed.
  SequenceScaling s = ScaleSequence(spec, 2048, nullptr);
  ASSERT_TRUE(s.applies());
  EXPECT_EQ(s.share_time.status, "assumed");
  EXPECT_DOUBLE_EQ(s.step_factor, SequenceFactor(kDefaultAttentionShareTime, 2048, 4096));
  // The preflight's, measured at 1024 tokens, moved to 2048.
  PreflightInputs pf;
  pf.path = "pf.json";
  pf.attention_share_time = 0.2;
  pf.attention_share_memory = 0.1;
  pf.attention_share_length = 1024;
  s = ScaleSequence(spec, 2048, &pf);
  EXPECT_EQ(s.share_time.status, "measured");
  EXPECT_NEAR(s.share_time.value, AttentionShareAt(0.2, 1024, 2048), 1e-12);
  EXPECT_NEAR(s.memory_factor, SequenceFactor(AttentionShareAt(0.1, 1024, 2048), 2048, 4096), 1e-12);
  // The plan's wins.
  spec.attention_share_time = 0.5;
  s = ScaleSequence(spec, 2048, &pf);
  EXPECT_EQ(s.share_time.status, "input");
  EXPECT_DOUBLE_EQ(s.step_factor, 3.0);
  // No sequence length in the plan, or the same length: nothing scaled.
  EXPECT_FALSE(ScaleSequence(SequenceSpec{}, 2048, &pf).applies());
  EXPECT_FALSE(ScaleSequence(spec, 4096, &pf).applies());
}

TEST(PilotRules, CheckpointingCostMeasuredElseInputElseDefault) {
  ActivationCheckpointingSpec spec;
  CheckpointingCost c = CheckpointingCostOf(spec, nullptr, nullptr);
  EXPECT_EQ(c.memory_saved_fraction.status, "assumed");
  EXPECT_DOUBLE_EQ(c.recompute_fraction.value, kDefaultCheckpointingRecomputeFraction);
  spec.recompute_fraction = 0.25;
  EXPECT_EQ(CheckpointingCostOf(spec, nullptr, nullptr).recompute_fraction.status, "input");
  PreflightInputs pf;
  pf.path = "pf.json";
  pf.device = "cuda";
  pf.ac_activation_bytes_off = 1000;
  pf.ac_activation_bytes_saved = 600;
  pf.ac_step_time_s_off = 0.5;
  pf.ac_recompute_s = 0.1;
  c = CheckpointingCostOf(spec, &pf, &pf);
  EXPECT_EQ(c.memory_saved_fraction.status, "measured");
  EXPECT_DOUBLE_EQ(c.memory_saved_fraction.value, 0.6);
  EXPECT_EQ(c.recompute_fraction.status, "measured");
  EXPECT_DOUBLE_EQ(c.recompute_fraction.value, 0.2);
  // A CPU preflight's recompute time is no GPU's: the plan's fraction stays.
  c = CheckpointingCostOf(spec, &pf, nullptr);
  EXPECT_EQ(c.memory_saved_fraction.status, "measured");
  EXPECT_EQ(c.recompute_fraction.status, "input");

  MemoryFit fit;
  fit.activation_bytes = 40e9;
  fit.states_bytes = 20e9;
  fit.total_bytes = 60e9;
  fit.usable_bytes = 50e9;
  const MemoryFit with = WithActivationCheckpointing(fit, CheckpointingCostOf(spec, &pf, &pf));
  EXPECT_DOUBLE_EQ(with.activation_bytes, 16e9);
  EXPECT_DOUBLE_EQ(with.total_bytes, 36e9);
  EXPECT_TRUE(with.fits);
  const MemoryFit longer = WithActivationFactor(fit, 1.5, "test");
  EXPECT_DOUBLE_EQ(longer.total_bytes, 80e9);
  EXPECT_FALSE(longer.fits);
}

TEST(PilotRules, PrecisionStepOnlyForThePlansPrecision) {
  PreflightInputs pf;
  EXPECT_FALSE(MeasuredPrecisionStepS(pf, "bf16"));
  pf.precision_low = "bf16";
  pf.step_time_s_fp32 = 0.4;
  pf.step_time_s_low_precision = 0.25;
  EXPECT_DOUBLE_EQ(*MeasuredPrecisionStepS(pf, "bf16"), 0.25);
  EXPECT_DOUBLE_EQ(*MeasuredPrecisionStepS(pf, "fp32"), 0.4);
  EXPECT_FALSE(MeasuredPrecisionStepS(pf, "fp16"));
}

PreflightInputs CudaPilot() {
  PreflightInputs pf;
  pf.path = "pf.json";
  pf.device = "cuda";
  pf.micro_batch_samples = 8;
  pf.device_name = "NVIDIA A100-SXM4-80GB";
  return pf;
}

TEST(PreflightChecks, MicroBatchSequenceWorldSizeAndAccelerator) {
  const auto& catalogue = models::AcceleratorCatalogue::Builtin();
  PlanShape plan{8, 0, 8, catalogue.Find("a100-80gb"), &catalogue};
  EXPECT_TRUE(CheckPreflightAgainstPlan(CudaPilot(), plan).mismatches.empty());

  PreflightInputs pf = CudaPilot();
  pf.micro_batch_samples = 4;
  auto check = CheckPreflightAgainstPlan(pf, plan);
  ASSERT_EQ(check.mismatches.size(), 1u);
  EXPECT_NE(check.mismatches[0].find("micro-batch: the pilot ran 4 samples per rank, the plan's scenario 8"),
            std::string::npos)
      << check.mismatches[0];

  plan.sequence_length = 4096;
  pf = CudaPilot();
  EXPECT_NE(CheckPreflightAgainstPlan(pf, plan).mismatches.at(0).find("declares none"), std::string::npos);
  pf.sequence_length = 2048;
  EXPECT_NE(CheckPreflightAgainstPlan(pf, plan).mismatches.at(0).find("shorter than the plan's 4096"),
            std::string::npos);
  pf.sequence_length = 8192;  // longer: scaled down, not refused
  EXPECT_TRUE(CheckPreflightAgainstPlan(pf, plan).mismatches.empty());
  plan.sequence_length = 0;

  pf = CudaPilot();
  pf.world_size = 16;
  EXPECT_NE(CheckPreflightAgainstPlan(pf, plan).mismatches.at(0).find("world size: the pilot ran 16 ranks"),
            std::string::npos);

  pf = CudaPilot();
  pf.device_name = "NVIDIA H100 80GB HBM3";
  check = CheckPreflightAgainstPlan(pf, plan);
  ASSERT_EQ(check.mismatches.size(), 1u);
  EXPECT_TRUE(check.accelerator_mismatch);
  EXPECT_NE(check.mismatches[0].find("h100-sxm in the catalogue"), std::string::npos) << check.mismatches[0];
  pf.device_name = "";
  check = CheckPreflightAgainstPlan(pf, plan);
  EXPECT_TRUE(check.mismatches.empty());
  EXPECT_EQ(check.unchecked.size(), 1u);
  pf.device_name = "AMD Instinct MI300X";
  pf.rocm = true;
  check = CheckPreflightAgainstPlan(pf, plan);
  EXPECT_NE(check.mismatches.at(0).find("a rocm build of torch"), std::string::npos) << check.mismatches[0];
  // A CPU pilot: its accelerator is never checked (its step time is never used as a GPU's).
  pf = CudaPilot();
  pf.device = "cpu";
  pf.device_name = "";
  EXPECT_TRUE(CheckPreflightAgainstPlan(pf, plan).mismatches.empty());
}

TEST(PreflightChecks, JudgeRefusesInOneLineOrRecordsTheOverride) {
  const auto& catalogue = models::AcceleratorCatalogue::Builtin();
  PlanShape plan{16, 0, 8, catalogue.Find("a100-80gb"), &catalogue};
  PreflightInputs pf = CudaPilot();
  auto refused = JudgePreflight(pf, plan, PreflightUse{}, {});
  ASSERT_FALSE(refused.ok());
  const std::string& why = refused.status().message();
  EXPECT_EQ(why.find('\n'), std::string::npos);
  EXPECT_EQ(why.rfind("pf.json: the preflight does not match the plan: micro-batch", 0), 0u) << why;
  EXPECT_NE(why.find("--allow-preflight-mismatch"), std::string::npos);
  PreflightUse allow;
  allow.allow_mismatch = true;
  auto allowed = JudgePreflight(pf, plan, allow, {});
  ASSERT_TRUE(allowed.ok());
  EXPECT_TRUE(allowed->gpu_figures_used);
  EXPECT_FALSE(allowed->gpu_figures_measured);
  bool recorded = false;
  for (const auto& a : allowed->assumptions) recorded = recorded || a["status"] == "overridden";
  EXPECT_TRUE(recorded) << allowed->assumptions.dump();

  // A CPU pilot with another micro-batch: accepted (its step is not used), its step time listed as not used.
  pf.device = "cpu";
  auto cpu = JudgePreflight(pf, plan, PreflightUse{}, {});
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  EXPECT_FALSE(cpu->gpu_figures_used);
  EXPECT_EQ(cpu->assumptions[0]["status"], "not used");

  // The software stack against the capture's.
  pf.manifest = {{"versions", {{"torch", "2.4.1"}}}};
  const std::vector<std::pair<std::string, nlohmann::json>> captures = {
      {"model.json", {{"versions", {{"torch", "1.13.0"}}}}}};
  auto differs = JudgePreflight(pf, plan, PreflightUse{}, captures);
  ASSERT_FALSE(differs.ok());
  EXPECT_NE(differs.status().message().find("versions.torch: 2.4.1 -> 1.13.0"), std::string::npos)
      << differs.status().message();
  PreflightUse allow_diff;
  allow_diff.allow_manifest_diff = true;
  EXPECT_TRUE(JudgePreflight(pf, plan, allow_diff, captures).ok());
}

TEST(PreflightChecks, RocmCandidatesNeedAQualifiedStack) {
  const auto& catalogue = models::AcceleratorCatalogue::Builtin();
  EXPECT_EQ(RequiredStack(*catalogue.Find("h100-sxm"), nullptr), "");
  EXPECT_NE(RequiredStack(*catalogue.Find("mi300x"), nullptr).find("requires a qualified ROCm stack"),
            std::string::npos);
  PreflightInputs pf = CudaPilot();
  EXPECT_NE(RequiredStack(*catalogue.Find("mi300x"), &pf), "");  // a CUDA preflight qualifies no ROCm stack
  pf.rocm = true;
  EXPECT_EQ(RequiredStack(*catalogue.Find("mi300x"), &pf), "");
}

}  // namespace
}  // namespace simreplay::plan
