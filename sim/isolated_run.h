// Runs functions in forked child processes, because the SimGrid engine is one per process. Each job
// returns a string (its result) or a Status; at most `parallel` children run at once. Results come
// back in job order whatever the parallelism, so outputs do not depend on --jobs.
//
// A child's Status keeps its kind across the fork: a bad input found inside a child (kInvalidArgument,
// kCorruption, kNotFound) comes back as that kind, so the command exits 3 as it would in one process.
// A child that dies (a signal, an exit without a result) or outlives `timeout_s` is reported as a
// kInternal failure that says why; the other jobs still run.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

namespace simreplay::sim {

using IsolatedJob = std::function<Result<std::string>()>;

struct IsolatedRunOptions {
  int parallel = 1;                         // children alive at once (at least 1)
  double timeout_s = 0;                     // > 0: a child running longer is killed (SIGKILL) and its job fails
  std::string timeout_name = "time limit";  // how the limit is named in the failure ("--point-timeout")
  // Memory: each job's estimated peak bytes (job_bytes[i]; missing or 0: nothing known) and what the
  // children alive at once may take together (0: no budget). A job starts only while the running
  // ones' estimates and its own fit the budget, or when nothing else runs (a job over the budget on
  // its own is the caller's to refuse: sim/simulation.h CheckSimulationFits).
  std::vector<double> job_bytes;
  double memory_budget_bytes = 0;
  // Called in the parent as each job ends, in completion order. Returning false stops the run: the
  // running children are killed and the jobs not finished yet fail with "cancelled".
  std::function<bool(size_t job, const Result<std::string>& result)> on_result;
};

std::vector<Result<std::string>> RunIsolated(const std::vector<IsolatedJob>& jobs, const IsolatedRunOptions& options);

// `on_done(finished, total)` is called in the parent after each child ends (for progress display).
std::vector<Result<std::string>> RunIsolated(const std::vector<IsolatedJob>& jobs, int parallel,
                                             const std::function<void(size_t, size_t)>& on_done = nullptr);

}  // namespace simreplay::sim
