// The job failure model: component rates plus a small-job floor reproduce Meta's measured and
// projected job MTTFs (Kokolis et al., HPCA 2025), and contradictory inputs are found.
#include "plan/failure_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace simreplay::plan {
namespace {

double MttfH(const FailureModelSpec& spec, int gpus) {
  return ComputeJobFailureRate(spec, gpus, (gpus + 7) / 8).mtbf_s() / 3600;
}

TEST(FailureModel, DefaultsReproduceMetasMeasuredAndProjectedJobMttf) {
  const FailureModelSpec spec = DefaultFailureModel();
  // Components: 8 / 49,230 + 2 / 18,460 = 2.7084e-4 failures per node-hour (RSC-1's 6.50 per 1,000
  // node-days). 1,024 GPUs = 128 nodes: 0.034668 / h, 28.84 h; the floor, 1 / 7.9 h there, governs.
  const JobFailureRate at_1k = ComputeJobFailureRate(spec, 1024, 128);
  EXPECT_NEAR(1 / at_1k.components_per_h, 28.845, 0.01);
  EXPECT_TRUE(at_1k.floor_governs);
  EXPECT_NEAR(at_1k.mtbf_s() / 3600, 7.9, 1e-9);
  // Meta's projections, where the per-GPU rate governs: 1.8 h at 16,384 GPUs (components 1.803 h,
  // floor 7.9 / 4 = 1.975 h) and about 14 min at 131,072 (13.52 min).
  EXPECT_NEAR(MttfH(spec, 16384), 1.803, 0.001);
  EXPECT_FALSE(ComputeJobFailureRate(spec, 16384, 2048).floor_governs);
  EXPECT_NEAR(MttfH(spec, 131072) * 60, 13.52, 0.01);
  // One node of 8: the floor, 7.9 h x sqrt(1024 / 8) = 89.4 h (components alone: 3,692 h).
  EXPECT_NEAR(MttfH(spec, 8), 89.378, 0.001);
}

TEST(FailureModel, FloorGovernsSmallAndMidJobsOnly) {
  // The floor's rate grows as sqrt(N), the components' as N: they cross where
  // N = 1024 x (28.845 / 7.9)^2 = 13,652 GPUs.
  const FailureModelSpec spec = DefaultFailureModel();
  EXPECT_TRUE(ComputeJobFailureRate(spec, 13600, 1700).floor_governs);
  EXPECT_FALSE(ComputeJobFailureRate(spec, 13712, 1714).floor_governs);
  FailureModelSpec off = spec;
  off.floor.enabled = false;
  EXPECT_NEAR(MttfH(off, 1024), 28.845, 0.01);
  EXPECT_DOUBLE_EQ(ComputeJobFailureRate(off, 1024, 128).floor_per_h, 0);
}

TEST(FailureModel, ComponentsNotCountedAndLabels) {
  FailureModelSpec spec = DefaultFailureModel();
  EXPECT_EQ(spec.gpu_mtbf_h.status, "assumed");
  EXPECT_NE(spec.gpu_mtbf_h.source.find("arXiv 2410.21680"), std::string::npos);
  EXPECT_EQ(spec.floor.job_mttf_h.status, "assumed");
  spec.floor.enabled = false;
  spec.node_mtbf_h.value = std::numeric_limits<double>::infinity();  // "none" in the plan file
  spec.network_mtbf_h.value = std::numeric_limits<double>::infinity();
  // 1,000 GPUs at 49,230 h each: 49.23 h.
  EXPECT_NEAR(ComputeJobFailureRate(spec, 1000, 125).mtbf_s() / 3600, 49.23, 1e-9);
}

TEST(FailureModel, FloorAboveWhatTheComponentsAllowIsAContradiction) {
  FailureModelSpec spec = DefaultFailureModel();
  EXPECT_FALSE(FindFailureModelContradiction(spec).has_value());
  // 5,000 h per GPU: 1,024 GPUs fail every 4.1 h from GPUs alone, yet the floor says every cause
  // together fails them every 7.9 h.
  spec.gpu_mtbf_h.value = 5000;
  auto why = FindFailureModelContradiction(spec);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("cannot both hold"), std::string::npos) << *why;
  spec.floor.enabled = false;
  EXPECT_FALSE(FindFailureModelContradiction(spec).has_value());
}

// A user's own measured rate above the assumed floor is evidence, not a contradiction: 5,000 h per GPU
// (given) with the default node and network rates fails the 1,024-GPU, 128-node reference job every
// 1 / (1024/5000 + 2 x 128/18460) = 1 / (0.2048 + 0.013868) = 4.573 h, more often than the assumed
// floor's 7.9 h. The plan is accepted, the components govern at 1,024 GPUs (0.2187 > 1/7.9 = 0.1266 per h),
// and the warning says so. Given floor and given rates that disagree are still refused.
TEST(FailureModel, MeasuredRateAboveTheAssumedFloorIsUsedAndWarned) {
  FailureModelSpec spec = DefaultFailureModel();
  spec.gpu_mtbf_h = {5000, "input", "plan file"};
  EXPECT_FALSE(FindFailureModelContradiction(spec).has_value());
  auto note = FloorContradictedByGivenRates(spec);
  ASSERT_TRUE(note.has_value());
  EXPECT_NE(note->find("every 4.57 h"), std::string::npos) << *note;
  EXPECT_NE(note->find("your rates are used"), std::string::npos) << *note;
  const JobFailureRate r = ComputeJobFailureRate(spec, 1024, 128);
  EXPECT_FALSE(r.floor_governs);
  EXPECT_NEAR(r.per_h, 1024.0 / 5000 + 2 * 128.0 / 18460, 1e-12);
  spec.floor.job_mttf_h = {7.9, "input", "plan file"};
  EXPECT_FALSE(FloorContradictedByGivenRates(spec).has_value());
  EXPECT_TRUE(FindFailureModelContradiction(spec).has_value());
  // Rates that agree with the floor: no warning.
  EXPECT_FALSE(FloorContradictedByGivenRates(DefaultFailureModel()).has_value());
}

// The floor is a measurement of 1,024 GPUs in 8-GPU nodes: the same GPUs in one-GPU nodes are 8x the
// nodes, so they may fail more often than it. With the defaults the component rates then govern
// (1,024/49,230 + 2 x 1,024/18,460 per hour: every 7.59 h, under the floor's 7.9 h); before, the
// contradiction check laid the reference job out in the candidates' nodes and refused such a plan.
TEST(FailureModel, OneGpuNodesAreNotAContradictionAndTheirComponentRatesGovern) {
  const FailureModelSpec spec = DefaultFailureModel();
  EXPECT_EQ(spec.floor.reference_gpus_per_node.value, 8);
  EXPECT_EQ(spec.floor.reference_gpus_per_node.status, "assumed");
  EXPECT_FALSE(FindFailureModelContradiction(spec).has_value());
  const JobFailureRate one_gpu_nodes = ComputeJobFailureRate(spec, 1024, 1024);
  EXPECT_FALSE(one_gpu_nodes.floor_governs);
  EXPECT_NEAR(one_gpu_nodes.mtbf_s() / 3600, 1 / (1024 / 49230.0 + 2 * 1024 / 18460.0), 1e-9);
  EXPECT_LT(one_gpu_nodes.mtbf_s() / 3600, 7.9);
  const JobFailureRate eight_gpu_nodes = ComputeJobFailureRate(spec, 1024, 128);
  EXPECT_TRUE(eight_gpu_nodes.floor_governs);
  EXPECT_NEAR(eight_gpu_nodes.mtbf_s() / 3600, 7.9, 1e-9);
}

TEST(FailureModel, TheReferenceLayoutDecidesTheContradiction) {
  FailureModelSpec spec = DefaultFailureModel();
  // The same 1,024 GPUs measured in one-GPU nodes: 1,024 nodes' hardware alone fails that job every
  // 7.59 h, more often than the floor's every-cause 7.9 h.
  spec.floor.reference_gpus_per_node.value = 1;
  auto why = FindFailureModelContradiction(spec);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("1024 GPUs in 1024 nodes"), std::string::npos) << *why;
}

}  // namespace
}  // namespace simreplay::plan
