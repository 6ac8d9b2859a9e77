// Shared by the simulator's tests (cluster_test.cc, checkpoint_test.cc, rank_folding_test.cc): samples
// that cost nothing to load, a run whose loading is free (no CPU, memory or PCIe latency cost), so only
// the term under test remains; varied costs and a loaded, bucketed cluster for the exact and folded
// shortcuts; and one run in a forked child returned as its raw statistics (flat view), its metrics and
// the codec's bytes (for byte comparisons).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/isolated_run.h"
#include "sim/metrics.h"
#include "sim/raw_stats_codec.h"
#include "sim/simulation.h"
#include "tests/sim/raw_stats_view.h"

namespace simreplay::sim {

inline replay::SampleCostTable FreeCosts(int64_t n, int64_t read_bytes = 0) {
  replay::SampleCostTable table;
  table.formats = {"synthetic"};
  for (int64_t i = 0; i < n; ++i) table.samples.push_back({0, 0, 0, read_bytes, 0, 0, false});
  table.distinct_indices = n;
  table.measured.mean_collate_per_sample_s = 0;
  return table;
}

// `nodes` x `gpus` ranks, batches of one sample, `steps` optimizer steps of `step_s` each.
inline SimInput FreeLoadingRun(const replay::SampleCostTable* costs, int nodes, int gpus, double step_s, int steps) {
  SimInput in;
  in.costs = costs;
  in.cpu_cores = 8;
  in.step_time_s = step_s;
  in.scenario.cluster.nodes = nodes;
  in.scenario.cluster.gpus_per_node = gpus;
  in.scenario.hardware.gpus = gpus;
  in.scenario.loader.batch_size = 1;
  in.scenario.train.steps = steps;
  in.model.cpu.main_per_batch_s = 0;
  in.model.cpu.worker_startup_s = 0;
  in.model.cpu.worker_spawn_s = 0;
  in.model.memory.main_base_bytes = 0;
  in.model.memory.worker_base_pss_bytes = 0;
  in.model.pcie.latency_s = 0;
  return in;
}

// 2048 samples whose read, decode and augment costs vary in short cycles, with a collate cost.
inline replay::SampleCostTable VariedCosts() {
  replay::SampleCostTable costs;
  costs.formats = {"synthetic"};
  for (int i = 0; i < 2048; ++i)
    costs.samples.push_back({0.0002 * (i % 3), 0.001 + 0.0007 * (i % 5), 0.0003, 1000, 5000, 0, false});
  costs.distinct_indices = 2048;
  costs.measured.mean_collate_per_sample_s = 1e-5;
  return costs;
}

// `nodes` x `gpus` ranks that load for real (2 workers, batches of 4, batch fidelity, 65536 samples) on a
// fat-tree, all-reducing 100 MB hierarchically in 25 MB buckets overlapped with 0.6 of the step, whose
// GPU steps of `step_s` are lognormal with coefficient of variation `step_cv`.
inline SimInput BucketedCluster(const replay::SampleCostTable* costs, int nodes, int gpus, double step_s, int steps,
                                double step_cv) {
  SimInput in = FreeLoadingRun(costs, nodes, gpus, step_s, steps);
  in.scenario.loader.num_workers = 2;
  in.scenario.loader.batch_size = 4;
  in.scenario.replay_fidelity = "batch";
  in.scenario.train.dataset_samples = 1 << 16;
  in.scenario.cluster.topology = scenarios::Topology::kFatTree;
  in.scenario.collective.algorithm = scenarios::CollectiveAlgorithm::kHierarchical;
  in.scenario.collective.gradient_bytes = 1e8;
  in.scenario.collective.bucket_bytes = 25e6;
  in.scenario.collective.overlap = 0.6;
  in.model.gpu.step_cv = step_cv;
  in.model.gpu.distribution = "lognormal";
  return in;
}

// The run's raw statistics, with "metrics" (SummarizeMetrics) and, with `encode`, "encoded"
// (EncodeRawStats's bytes in hex, for byte comparisons) added; `metrics`, when given, receives the metrics too.
inline nlohmann::json Simulate(const SimInput& input, nlohmann::json* metrics = nullptr,
                               const SimOptions& options = {}, bool encode = false) {
  auto results = RunIsolated({[&input, &options, encode]() -> Result<std::string> {
                               auto stats = RunSimulation(input, options);
                               if (!stats.ok()) return stats.status();
                               nlohmann::json j = RawStatsToJson(*stats);
                               j["metrics"] = SummarizeMetrics(input, *stats);
                               if (encode) {  // the codec's bytes, as hex: JSON strings hold text
                                 std::string hex;
                                 for (unsigned char c : EncodeRawStats(*stats)) hex += fmt::format("{:02x}", c);
                                 j["encoded"] = hex;
                               }
                               return j.dump();
                             }},
                             1);
  EXPECT_TRUE(results[0].ok()) << results[0].status().message();
  nlohmann::json j = results[0].ok() ? nlohmann::json::parse(*results[0]) : nlohmann::json::object();
  if (metrics != nullptr && j.contains("metrics")) *metrics = j["metrics"];
  return j;
}

}  // namespace simreplay::sim
