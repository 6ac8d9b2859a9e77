// Turns the raw statistics of a run (and of its pipeline-only companion run) into the metrics of
// result.json (docs/result-format.md), including the named bottleneck and the evidence for it.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/sim_types.h"

namespace simreplay::sim {

// {mean, p50, p95, p99, max} of `values` (linear-interpolated percentiles); zeros when empty.
nlohmann::json Distribution(std::vector<double> values);
// The same figures from a bounded summary (exact below its limit; see common/latency_summary.h).
nlohmann::json Distribution(const LatencySummary& summary);

// Rounds to 9 significant digits so that JSON and CSV carry no noise digits.
double Round9(double value);

struct Bottleneck {
  std::string stage;     // gpu_compute, collective, cpu, storage, workers, main_process, pin_memory, h2d, ...
  std::string evidence;  // the numbers behind the verdict
};

Bottleneck FindBottleneck(const SimInput& input, const SimRawStats& full);

// The "metrics" object, without pipeline_throughput_samples_per_s (it comes from a separate run).
nlohmann::json SummarizeMetrics(const SimInput& input, const SimRawStats& full);

}  // namespace simreplay::sim
