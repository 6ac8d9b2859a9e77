// Diagnosis speed: one causal profile (the scenario as given plus every applicable relief, each an
// end-to-end and a pipeline-alone simulation in forked children) of the bundled quickstart capture
// replayed on one node, at 1 GPU (the capture's own shape) and at 8 GPUs x 8 workers on 64 cores.
// Run: ./build/causal_profile_benchmark ; results are recorded in docs/performance.md.
#include <benchmark/benchmark.h>

#include <string>

#include "advise/causal_profile.h"

namespace simreplay::advise {
namespace {

scenarios::Scenario Scenario(int gpus, int workers, int cores, int64_t steps) {
  const std::string dir = std::string(SIMREPLAY_SOURCE_DIR) + "/examples/quickstart";
  nlohmann::json j = {{"model", "model.json"},
                      {"loader", {{"num_workers", workers}, {"batch_size", 8}}},
                      {"hardware", {{"cpu_cores", cores}, {"gpus", gpus}}},
                      {"train", {{"steps", steps}}}};
  auto s = scenarios::ParseScenario(j, dir + "/scenario.json", dir);
  if (!s.ok()) std::abort();
  return *s;
}

void BM_DiagnoseOneNode(benchmark::State& state) {
  const auto scenario = Scenario(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
                                 static_cast<int>(state.range(2)), state.range(3));
  ProfileOptions options;
  options.jobs = 2;
  int simulations = 0;
  for (auto _ : state) {
    sim::CostCache cache;
    auto p = ProfileScenario(scenario, options, &cache);
    if (!p.ok()) state.SkipWithError(p.status().message().c_str());
    simulations = p.ok() ? p->simulations : 0;
  }
  state.counters["simulations"] = simulations;
}
// gpus, workers per rank, cores, optimizer steps
BENCHMARK(BM_DiagnoseOneNode)->Args({1, 2, 2, 40})->Args({1, 2, 2, 1000})->Args({8, 8, 64, 200})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace simreplay::advise

BENCHMARK_MAIN();
