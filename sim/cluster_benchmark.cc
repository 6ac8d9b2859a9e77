// Multi-node simulation cost: wall time and peak memory of one simulation of N nodes x 8 GPUs x 1000
// optimizer steps (ring all-reduce of 100 MB per step, batch fidelity, 2 workers per rank, batch 32).
// Each iteration forks one simulation (one SimGrid engine per process); the child reports its own
// peak resident set and CPU time (what the wall time is on an idle core: the simulation is
// single-threaded). Run: ./build/cluster_benchmark ; results in docs/performance.md (cost curve for
// 8, 64, 256 and 1024 ranks; the target is <= 60 s and <= 2 GB at 1024 ranks on one core).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <string>

#include "sim/isolated_run.h"
#include "sim/simulation.h"

namespace simreplay::sim {
namespace {

replay::SampleCostTable BenchCosts() {
  replay::SampleCostTable table;
  table.formats = {"jpeg"};
  for (int i = 0; i < 10000; ++i) {
    // Varied costs so that actors do not move in lockstep.
    double decode = 0.004 + 0.002 * ((i * 7919) % 100) / 100.0;
    table.samples.push_back({0.0005, decode, decode / 2, 110000, 150000 * 4, 0, false});
  }
  table.distinct_indices = static_cast<int64_t>(table.samples.size());
  table.measured.mean_collate_per_sample_s = 2e-5;
  return table;
}

void BM_Cluster(benchmark::State& state) {
  static const replay::SampleCostTable costs = BenchCosts();
  SimInput in;
  in.costs = &costs;
  in.cpu_cores = 64;
  in.step_time_s = 0.25;
  const int nodes = static_cast<int>(state.range(0));
  in.scenario.cluster.nodes = nodes;
  in.scenario.cluster.gpus_per_node = 8;
  in.scenario.hardware.gpus = 8;
  in.scenario.loader.num_workers = 2;
  in.scenario.loader.batch_size = 32;
  in.scenario.train.steps = state.range(1);
  in.scenario.train.dataset_samples = 1'281'167;  // ImageNet-1k train
  in.scenario.replay_fidelity = "batch";
  in.scenario.collective.algorithm = scenarios::CollectiveAlgorithm::kRing;
  in.scenario.collective.gradient_bytes = 100e6;
  double wall_s = 0, peak_mb = 0, samples = 0, cpu_s = 0;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    auto out = RunIsolated({[&in]() -> Result<std::string> {
                             auto stats = RunSimulation(in);
                             if (!stats.ok()) return stats.status();
                             rusage usage{};
                             getrusage(RUSAGE_SELF, &usage);
                             const double cpu_s =
                                 static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                                 1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
                             return std::to_string(stats->samples_consumed) + " " + std::to_string(usage.ru_maxrss) +
                                    " " + std::to_string(cpu_s);
                           }},
                           1);
    wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!out[0].ok()) {
      state.SkipWithError(out[0].status().message().c_str());
      return;
    }
    samples += std::stod(out[0]->substr(0, out[0]->find(' ')));
    const size_t first = out[0]->find(' '), second = out[0]->find(' ', first + 1);
    peak_mb = std::max(peak_mb, std::stod(out[0]->substr(first + 1, second - first - 1)) / 1024.0);
    cpu_s += std::stod(out[0]->substr(second + 1));
  }
  state.counters["ranks"] = nodes * 8;
  state.counters["peak_rss_mb"] = peak_mb;
  state.counters["wall_s"] = wall_s / static_cast<double>(state.iterations());
  // CPU time of the simulating child: the wall time on an otherwise idle core.
  state.counters["child_cpu_s"] = cpu_s / static_cast<double>(state.iterations());
  state.counters["samples_per_s"] = samples / wall_s;
}

BENCHMARK(BM_Cluster)
    ->ArgNames({"nodes", "steps"})
    ->Args({1, 1000})
    ->Args({8, 1000})
    ->Args({32, 1000})
    ->Args({128, 1000})
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

}  // namespace
}  // namespace simreplay::sim

BENCHMARK_MAIN();
