// Simulation of one candidate's node: the plan's scenario with the candidate's GPUs per node, its
// step time and its per-step communication, cut to a given number of optimizer steps. Runs in a
// forked child (sim/isolated_run.h) and returns the per-step intervals and the run's metrics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "sim/isolated_run.h"
#include "sim/point_runner.h"

namespace simreplay::plan {

struct CandidateSimSetup {
  nlohmann::json scenario_json;  // the base scenario (no sweep)
  std::string scenario_path;
  int gpus_per_node = 1;
  int nodes = 1;
  int64_t dataset_samples = 0;      // the whole dataset (all nodes)
  double step_time_s = 0;           // one micro-batch on this GPU
  double exposed_collective_s = 0;  // per optimizer step
};

// Prepares the node simulation of `steps` optimizer steps (in the parent: children inherit the costs).
// The node stands for every node: it gets its share of the dataset, so its ranks see the epochs that
// DistributedSampler gives each of the job's ranks.
Result<sim::PreparedPoint> PrepareCandidate(const CandidateSimSetup& setup, int64_t steps, sim::CostCache* cache);

// The job: simulates `point` and returns {"interval_s": [per optimizer step], "metrics": {...}}.
sim::IsolatedJob MakeCandidateJob(const sim::PreparedPoint& point);

struct CandidateRun {
  std::vector<double> interval_s;
  nlohmann::json metrics;
};
Result<CandidateRun> ParseCandidateRun(const Result<std::string>& output);

// Micro-batches per epoch of one rank for the node simulation prepared by PrepareCandidate.
int64_t MicroBatchesPerEpoch(const sim::PreparedPoint& point);

}  // namespace simreplay::plan
