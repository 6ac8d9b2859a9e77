// Simulation speed: simulated samples per wall-clock second on a one-node, 8-GPU scenario (8 workers
// per rank, 64 cores, batch 32). Each run forks (one SimGrid engine per process) and reports
// samples/s and sample-events/s, where a sample-event is one per-sample stage (read, decode, augment).
// Run: ./build/simulation_benchmark ; results are recorded in docs/performance.md.
#include <benchmark/benchmark.h>

#include <chrono>

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

void BM_EightGpuNode(benchmark::State& state) {
  static const replay::SampleCostTable costs = BenchCosts();
  SimInput in;
  in.costs = &costs;
  in.cpu_cores = 64;
  in.step_time_s = 0.05;
  in.scenario.hardware.gpus = 8;
  in.scenario.loader.num_workers = static_cast<int>(state.range(0));
  in.scenario.loader.batch_size = 32;
  in.scenario.loader.pin_memory = true;
  in.scenario.train.steps = state.range(1);
  in.model.collective.gradient_bytes = 100e6;
  in.scenario.replay_fidelity = state.range(2) ? "batch" : "sample";
  double samples = 0, wall_s = 0;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    auto out = RunIsolated({[&in]() -> Result<std::string> {
                             auto stats = RunSimulation(in);
                             if (!stats.ok()) return stats.status();
                             return std::to_string(stats->samples_consumed);
                           }},
                           1);
    wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!out[0].ok()) {
      state.SkipWithError(out[0].status().message().c_str());
      return;
    }
    samples += std::stod(*out[0]);
  }
  state.counters["samples_per_s"] = samples / wall_s;
  state.counters["sample_events_per_s"] = 3 * samples / wall_s;
}

BENCHMARK(BM_EightGpuNode)
    ->ArgNames({"workers", "steps", "batch_fidelity"})
    ->Args({8, 400, 0})
    ->Args({16, 400, 0})
    ->Args({8, 2000, 1})
    ->Args({16, 2000, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace simreplay::sim

BENCHMARK_MAIN();
