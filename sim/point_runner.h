// Turns one scenario point into result.json: resolves its model, costs, core count and step time
// (PreparePoint, in the parent process, so children inherit the loaded trace), then runs the full
// simulation and the pipeline-only companion each in a forked child (MakeJobs), then assembles the
// result (AssembleResult). Used by `simulate`, `what-if` and calibration's self-check.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "scenarios/scenario.h"
#include "sim/cluster_network.h"
#include "sim/isolated_run.h"
#include "sim/sim_types.h"

namespace simreplay::sim {

inline constexpr const char* kResultSchema = "simreplay.result/1";

// Loaded traces, shared by the points of a sweep that name the same file.
using CostCache = std::map<std::string, std::shared_ptr<const replay::SampleCostTable>>;

struct PreparedPoint {
  SimInput input;
  std::shared_ptr<const replay::SampleCostTable> costs;
  std::string trace_path;        // the trace the costs came from (resolved)
  std::string accelerator;       // "cuda" or "emulated"
  std::string accelerator_note;  // why
  std::string step_time_source;  // scenario | model | trace | default
  ResolvedNetwork network;       // the NICs' rate and latency and where they came from
  std::vector<std::string> warnings;
  // The scenario's parameters that lie outside what its model's traces measured, one entry per
  // "extrapolating:" warning above (num_workers, batch_size, prefetch_factor, oversubscription,
  // pin_memory, persistent_workers, format), and the media shapes synthesised beyond the captured
  // range (data.media.<media>.pixels / .frames): typed, so that a caller never reads the warnings' words.
  std::vector<std::string> extrapolated;
};

Result<PreparedPoint> PreparePoint(const scenarios::Scenario& scenario, CostCache* cache);

// The one job pair of a point: [0] the full run (writes the timeline to `timeline_path` when not
// empty), [1] the pipeline-only run (loader, storage and CPU only, no training step). Each returns its
// raw statistics encoded by sim/raw_stats_codec.h.
std::vector<IsolatedJob> MakeJobs(const PreparedPoint& point, const std::string& timeline_path);

// The raw statistics of a point's two runs.
struct PointRuns {
  SimRawStats full;
  SimRawStats pipeline_only;
};
Result<PointRuns> DecodePointRuns(const Result<std::string>& full, const Result<std::string>& pipeline);

// Runs the job pair (in children, no timeline) and decodes it.
Result<PointRuns> RunPoint(const PreparedPoint& point);

// result.json for a point from the outputs of its two jobs.
Result<nlohmann::json> AssembleResult(const PreparedPoint& point, const Result<std::string>& full,
                                      const Result<std::string>& pipeline);

// Convenience: prepare, run both jobs (in children) and assemble.
Result<nlohmann::json> SimulateScenario(const scenarios::Scenario& scenario, const std::string& timeline_path,
                                        CostCache* cache);

}  // namespace simreplay::sim
