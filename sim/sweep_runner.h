// Runs the points of a sweep that one process owns (a shard) and that are not finished yet, saving
// each point to a PointStore the moment its two simulations end (scenarios/point_store.h). This is the
// engine behind `what-if`, `what-if --shard I/N` on a Slurm array task, and `what-if --resume`; any
// verb that simulates a list of scenarios (a planner's candidates) can use it the same way:
//
//   auto identity = scenarios::IdentifySweep(definition_json, definition_path, points);
//   scenarios::PointStore store(out_dir, *identity);
//   auto summary = sim::RunSweepShard(points, store, {.jobs = 8, .shard = shard, .resume = true});
//   ... then, once every shard is done: scenarios::LoadSweepDirectories({out_dir}).
//
// Points are simulated in forked children (sim/isolated_run.h): a point whose child crashes, returns an
// error or outlives `point_timeout_s` is recorded as failed (failed/NNNNNN.json) and the others go on.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "scenarios/point_store.h"
#include "scenarios/scenario.h"

namespace simreplay::sim {

struct SweepRunOptions {
  int jobs = 1;                // simulations (children) at once; two per point
  scenarios::ShardSpec shard;  // which points this process owns (default: all)
  bool resume = false;         // keep finished points of this sweep instead of simulating them again
  double point_timeout_s = 0;  // > 0: a simulation running longer fails its point
  std::function<void(size_t done, size_t total)> on_progress;  // points of this run (parent process)
};

struct PointFailure {
  size_t index;
  std::string label;  // axis values
  Status status;      // keeps the child's kind: a bad input is kInvalidArgument
};

struct SweepRunSummary {
  size_t owned_points = 0;             // points of the shard
  size_t reused_points = 0;            // already finished and kept (resume)
  size_t simulated_points = 0;         // simulated and saved by this run
  std::vector<PointFailure> failures;  // in point order
};

// REQUIRES: store.identity() was computed from `points`. Fails without simulating anything when a
// point cannot be prepared (bad model or trace: the kind of the error is kept) or the directory holds
// another sweep; fails part-way, keeping what was saved, when a point cannot be written (disk full).
Result<SweepRunSummary> RunSweepShard(const std::vector<scenarios::SweepPoint>& points,
                                      const scenarios::PointStore& store, const SweepRunOptions& options);

}  // namespace simreplay::sim
