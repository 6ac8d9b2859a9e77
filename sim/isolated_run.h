// Runs functions in forked child processes, because the SimGrid engine is one per process. Each job
// returns a string (its result) or a Status; at most `parallel` children run at once. Results come
// back in job order whatever the parallelism, so outputs do not depend on --jobs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

namespace simreplay::sim {

using IsolatedJob = std::function<Result<std::string>()>;

// `on_done(finished, total)` is called in the parent after each child ends (for progress display).
std::vector<Result<std::string>> RunIsolated(const std::vector<IsolatedJob>& jobs, int parallel,
                                             const std::function<void(size_t, size_t)>& on_done = nullptr);

}  // namespace simreplay::sim
