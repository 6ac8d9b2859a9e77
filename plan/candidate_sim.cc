#include "plan/candidate_sim.h"

#include <algorithm>

#include "sim/metrics.h"
#include "sim/simulation.h"

namespace simreplay::plan {

Result<sim::PreparedPoint> PrepareCandidate(const CandidateSimSetup& setup, int64_t steps, sim::CostCache* cache) {
  nlohmann::json j = setup.scenario_json;
  j["hardware"]["gpus"] = setup.gpus_per_node;
  auto& train = j["train"];
  train.erase("epochs");
  train["steps"] = steps;
  train["step_time_s"] = setup.step_time_s;
  // DistributedSampler gives each of the N x G ranks ceil(D / (N x G)) samples; the simulated node's
  // G ranks get exactly that when the node's dataset is G times it.
  const int64_t ranks = static_cast<int64_t>(setup.nodes) * setup.gpus_per_node;
  train["dataset_samples"] = (setup.dataset_samples + ranks - 1) / ranks * setup.gpus_per_node;
  auto scenario = scenarios::ParseScenario(j, setup.scenario_path, scenarios::DirectoryOf(setup.scenario_path));
  if (!scenario.ok()) return scenario.status();
  auto point = sim::PreparePoint(*scenario, cache);
  if (!point.ok()) return point.status();
  auto& collective = point->input.model.collective;
  collective.gradient_bytes = 0;
  collective.time_per_step_s = 0;
  if (setup.gpus_per_node > 1) {
    collective.time_per_step_s = setup.exposed_collective_s;
  } else if (setup.exposed_collective_s > 0) {
    // One rank per node: the simulator has no barrier to hang communication on, so the step carries it.
    const int accum = point->input.scenario.train.grad_accum;
    point->input.step_time_s += setup.exposed_collective_s / accum;
  }
  return point;
}

sim::IsolatedJob MakeCandidateJob(const sim::PreparedPoint& point) {
  return [&point]() -> Result<std::string> {
    auto stats = sim::RunSimulation(point.input);
    if (!stats.ok()) return stats.status();
    // Every rank records each optimizer step at the same simulated instant (they leave the step's
    // barrier together), so the record holds steps in groups of `ranks`; a step lasts its group's max.
    const auto ranks = static_cast<size_t>(point.input.scenario.hardware.gpus);
    std::vector<double> intervals;
    for (size_t i = 0; i + ranks <= stats->step_s.size(); i += ranks) {
      intervals.push_back(*std::max_element(stats->step_s.begin() + static_cast<std::ptrdiff_t>(i),
                                            stats->step_s.begin() + static_cast<std::ptrdiff_t>(i + ranks)));
    }
    nlohmann::json out = {{"interval_s", intervals}, {"metrics", sim::SummarizeMetrics(point.input, *stats)}};
    return out.dump();
  };
}

Result<CandidateRun> ParseCandidateRun(const Result<std::string>& output) {
  if (!output.ok()) return output.status();
  CandidateRun run;
  auto j = nlohmann::json::parse(*output, nullptr, false);
  if (j.is_discarded() || !j.contains("interval_s")) return Status::Internal("candidate simulation: bad output");
  run.interval_s = j["interval_s"].get<std::vector<double>>();
  run.metrics = j["metrics"];
  if (run.interval_s.empty()) return Status::Internal("candidate simulation recorded no optimizer step");
  return run;
}

int64_t MicroBatchesPerEpoch(const sim::PreparedPoint& point) {
  const auto& s = point.input.scenario;
  const int64_t ranks = s.hardware.gpus;
  const int64_t per_rank = (s.train.dataset_samples + ranks - 1) / ranks;
  const int64_t bs = s.loader.batch_size;
  return s.loader.drop_last ? per_rank / bs : (per_rank + bs - 1) / bs;
}

}  // namespace simreplay::plan
