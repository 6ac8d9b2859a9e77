// Reliefs and the causal profile on the bundled quickstart capture (2 workers, batch 8, 2 cores).
#include "advise/causal_profile.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "advise/diagnosis.h"
#include "advise/relief.h"
#include "models/page_fault_churn.h"
#include "tests/advise/advise_test_util.h"

namespace simreplay::advise {
namespace {

using testing::Quickstart;

const ReliefOutcome& Outcome(const CausalProfile& p, const std::string& name) {
  for (const auto& o : p.reliefs) {
    if (o.relief.name == name) return o;
  }
  ADD_FAILURE() << "no relief " << name;
  return p.reliefs[0];
}

bool Has(const std::vector<Relief>& reliefs, const std::string& name) {
  return std::any_of(reliefs.begin(), reliefs.end(), [&](const Relief& r) { return r.name == name; });
}

TEST(Relief, OnlyReliefsThatChangeSomethingApply) {
  sim::CostCache cache;
  auto base = sim::PreparePoint(Quickstart(), &cache);
  ASSERT_TRUE(base.ok()) << base.status().message();
  const auto reliefs = ApplicableReliefs(*base, 2);
  // One GPU: no network, overlap or straggler relief; persistent workers and pin memory are off, so
  // both knobs apply; the model replays reads as recorded, so one read-time relief stands for storage.
  EXPECT_FALSE(Has(reliefs, "network_bandwidth"));
  EXPECT_FALSE(Has(reliefs, "collective_overlap"));
  EXPECT_FALSE(Has(reliefs, "straggler"));
  EXPECT_TRUE(Has(reliefs, "persistent_workers"));
  EXPECT_TRUE(Has(reliefs, "pin_memory"));
  EXPECT_FALSE(Has(reliefs, "pin_thread"));
  EXPECT_TRUE(Has(reliefs, "storage_read_time"));
  for (const auto& r : reliefs) {
    if (r.name == "num_workers") {
      EXPECT_EQ(r.change, "num_workers 2 -> 4");
    }
  }
  // Stragglers on two nodes bring the cluster reliefs in.
  auto cluster = sim::PreparePoint(
      Quickstart({{"cluster", {{"nodes", 2}, {"stragglers", {{{"node", 1}, {"gpu_step_scale", 1.5}}}}}},
                  {"collective", {{"gradient_bytes", 1e8}, {"algorithm", "ring"}}}}),
      &cache);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  const auto cluster_reliefs = ApplicableReliefs(*cluster, 2);
  EXPECT_TRUE(Has(cluster_reliefs, "network_bandwidth"));
  EXPECT_TRUE(Has(cluster_reliefs, "collective_overlap"));
  EXPECT_TRUE(Has(cluster_reliefs, "straggler"));
}

TEST(Relief, AppliesExactlyTheNamedChange) {
  sim::CostCache cache;
  auto base = sim::PreparePoint(Quickstart(), &cache);
  ASSERT_TRUE(base.ok());
  auto find = [&](const std::string& name) {
    for (const auto& r : ApplicableReliefs(*base, 2)) {
      if (r.name == name) return r;
    }
    ADD_FAILURE() << name;
    return Relief{};
  };
  auto gpu = ApplyRelief(*base, find("gpu_step"), 2, &cache);
  ASSERT_TRUE(gpu.ok());
  EXPECT_DOUBLE_EQ(gpu->input.step_time_s, base->input.step_time_s / 2);
  auto cpu = ApplyRelief(*base, find("decode_cpu_cost"), 2, &cache);
  ASSERT_TRUE(cpu.ok());
  ASSERT_EQ(cpu->costs->samples.size(), base->costs->samples.size());
  for (size_t i = 0; i < base->costs->samples.size(); ++i) {
    EXPECT_DOUBLE_EQ(cpu->costs->samples[i].decode_s, base->costs->samples[i].decode_s / 2);
    EXPECT_DOUBLE_EQ(cpu->costs->samples[i].read_s, base->costs->samples[i].read_s);  // storage untouched
  }
  EXPECT_EQ(cpu->input.costs, cpu->costs.get());
  EXPECT_NE(cpu->costs.get(), base->costs.get()) << "the base's shared table must not be edited";
  auto workers = ApplyRelief(*base, find("num_workers"), 2, &cache);
  ASSERT_TRUE(workers.ok());
  EXPECT_EQ(workers->input.scenario.loader.num_workers, 4);
  EXPECT_EQ(workers->input.step_time_s, base->input.step_time_s);
}

TEST(Relief, AllocatorChurnTakesOffTheMeasuredPageFaultShareOnly) {
  sim::CostCache cache;
  auto base = sim::PreparePoint(Quickstart(), &cache);
  ASSERT_TRUE(base.ok()) << base.status().message();
  // The quickstart capture predates minflt: no share, no relief.
  EXPECT_FALSE(Has(ApplicableReliefs(*base, 2), "allocator_churn"));
  sim::PreparedPoint small = *base;
  small.input.model.cpu.page_fault_cpu_share = 0.05;
  EXPECT_FALSE(Has(ApplicableReliefs(small, 2), "allocator_churn"));
  sim::PreparedPoint churning = *base;
  churning.input.model.cpu.page_fault_cpu_share = 0.4;
  const auto reliefs = ApplicableReliefs(churning, 2);
  ASSERT_TRUE(Has(reliefs, "allocator_churn"));
  const Relief r = *std::find_if(reliefs.begin(), reliefs.end(), [](const Relief& x) { return x.name == "allocator_churn"; });
  EXPECT_EQ(r.action, ReliefAction::kKnob);
  EXPECT_NE(r.change.find("MALLOC_MMAP_THRESHOLD_=16777216"), std::string::npos) << r.change;
  EXPECT_NE(r.change.find("x 0.60"), std::string::npos) << r.change;
  // Whatever the profile's factor: the change is what the capture measured.
  for (double f : {2.0, 4.0}) {
    auto relieved = ApplyRelief(churning, r, f, &cache);
    ASSERT_TRUE(relieved.ok()) << relieved.status().message();
    EXPECT_EQ(relieved->input.model.cpu.page_fault_cpu_share, 0);
    for (size_t i = 0; i < base->costs->samples.size(); ++i) {
      EXPECT_DOUBLE_EQ(relieved->costs->samples[i].decode_s, base->costs->samples[i].decode_s * 0.6);
      EXPECT_DOUBLE_EQ(relieved->costs->samples[i].augment_s, base->costs->samples[i].augment_s * 0.6);
      EXPECT_DOUBLE_EQ(relieved->costs->samples[i].read_s, base->costs->samples[i].read_s);
    }
    EXPECT_NE(relieved->costs.get(), base->costs.get());
  }
}

// The probe's inline point makes inline loading cheaper than the captured workers by the page faults
// a long-lived main process does not take: share 0.5, inline faults 0.2 of the workers' -> every inline
// sample costs 1 - 0.5 x 0.8 = 0.6 of the worker cost; workers are untouched.
TEST(InlineChurn, InlineLoadingPaysOnlyItsOwnShareOfThePageFaults) {
  EXPECT_DOUBLE_EQ(models::InlineCostFactor(0.5, 0.2), 0.6);
  EXPECT_DOUBLE_EQ(models::InlineCostFactor(0.5, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(models::InlineCostFactor(0.0, 0.2), 1.0);
  sim::CostCache cache;
  auto run = [&](int workers, double share, double ratio) {
    auto p = sim::PreparePoint(Quickstart({{"loader", {{"num_workers", workers}}}, {"train", {{"steps", 20}}}}), &cache);
    EXPECT_TRUE(p.ok()) << p.status().message();
    p->input.model.cpu.page_fault_cpu_share = share;
    p->input.model.cpu.inline_page_fault_ratio = ratio;
    auto r = sim::RunPoint(*p);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return *r;
  };
  const sim::PointRuns inline_as_workers = run(0, 0.5, 1.0), inline_churn = run(0, 0.5, 0.2);
  EXPECT_NEAR(inline_churn.pipeline_only.main_busy_s / inline_as_workers.pipeline_only.main_busy_s, 0.6, 0.05);
  EXPECT_LT(inline_churn.pipeline_only.makespan_s, 0.75 * inline_as_workers.pipeline_only.makespan_s);
  const sim::PointRuns workers_a = run(2, 0.5, 1.0), workers_b = run(2, 0.5, 0.2);
  EXPECT_EQ(workers_a.full.makespan_s, workers_b.full.makespan_s);
  EXPECT_EQ(workers_a.pipeline_only.worker_busy_s, workers_b.pipeline_only.worker_busy_s);
}

// A 1 s step for 8 samples: the pipeline (hundreds of samples/s) keeps far ahead, so throughput is
// 8 / step; halving the step nearly doubles it (start-up is the only part that does not scale), and
// no data-side relief buys anything.
TEST(CausalProfile, GpuBoundScenarioNamesTheGpuStep) {
  sim::CostCache cache;
  ProfileOptions options;
  options.jobs = 2;
  auto p = ProfileScenario(Quickstart({{"train", {{"step_time_s", 1.0}, {"steps", 20}}}}), options, &cache);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(CriticalResource(*p), "gpu_compute");
  const auto& gpu = Outcome(*p, "gpu_step");
  EXPECT_GT(gpu.gain, 0.85);
  EXPECT_LE(gpu.gain, 1.0 + 1e-9);
  EXPECT_LT(std::abs(Outcome(*p, "num_workers").gain), 0.02);
  EXPECT_LT(std::abs(Outcome(*p, "decode_cpu_cost").gain), 0.02);
  // The interval is the validated band around the relieved prediction: [pred/(1+high), pred/(1+low)].
  const double relieved = gpu.metrics.train_samples_per_s, b = p->base.train_samples_per_s;
  EXPECT_NEAR(gpu.gain_low, relieved / (1 + p->band.error_high) / b - 1, 1e-12);
  EXPECT_NEAR(gpu.gain_high, relieved / (1 + p->band.error_low) / b - 1, 1e-12);
  EXPECT_LT(gpu.gain_low, gpu.gain);
  EXPECT_GT(gpu.gain_high, gpu.gain);
  // The GPU step is a hypothesis, not a setting: nothing is recommended.
  const Diagnosis d = MakeDiagnosis("s.json", {}, *p);
  EXPECT_TRUE(d.recommendations.empty());
  EXPECT_NE(d.verdict.find("no setting of the job buys 5%"), std::string::npos) << d.verdict;
}

// A 1 ms step with 2 workers on 2 cores: the GPU waits for decode; the step relief buys nothing and
// halving decode CPU buys most of all reliefs.
TEST(CausalProfile, CpuBoundScenarioNamesTheCpuAndNeverRecommendsWhatBuysLittle) {
  sim::CostCache cache;
  ProfileOptions options;
  options.jobs = 2;
  auto p = ProfileScenario(Quickstart({{"train", {{"step_time_s", 0.001}, {"steps", 30}}}}), options, &cache);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_LT(Outcome(*p, "gpu_step").gain, 0.02);
  EXPECT_EQ(CriticalResource(*p), "cpu");
  EXPECT_GT(Outcome(*p, "decode_cpu_cost").gain, 0.3);
  const Diagnosis d = MakeDiagnosis("s.json", {}, *p);
  for (const auto& r : d.recommendations) EXPECT_GE(r.gain, kMinRecommendedGain) << r.name;
  for (const auto& o : p->reliefs) {
    const bool recommended = std::any_of(d.recommendations.begin(), d.recommendations.end(),
                                         [&](const Recommendation& r) { return r.name == o.relief.name; });
    EXPECT_EQ(recommended, o.relief.action == ReliefAction::kKnob && o.gain >= kMinRecommendedGain) << o.relief.name;
  }
}

TEST(CausalProfile, SameBytesWhateverTheParallelism) {
  sim::CostCache cache;
  ProfileOptions one, two;
  one.jobs = 1;
  two.jobs = 2;
  auto a = ProfileScenario(Quickstart({{"train", {{"steps", 10}}}}), one, &cache);
  auto b = ProfileScenario(Quickstart({{"train", {{"steps", 10}}}}), two, &cache);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(DiagnosisJson(MakeDiagnosis("s", {}, *a)).dump(), DiagnosisJson(MakeDiagnosis("s", {}, *b)).dump());
  EXPECT_EQ(a->simulations, 2 * static_cast<int>(a->reliefs.size() + 1));
}

TEST(CausalProfile, BadModelKeepsItsKind) {
  sim::CostCache cache;
  auto s = Quickstart();
  s.model_path = testing::QuickstartDir() + "/no-such-model.json";
  auto p = ProfileScenario(s, {}, &cache);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().code(), Status::Code::kInternal) << p.status().message();
}

}  // namespace
}  // namespace simreplay::advise
