// What a captured trace shows, with no model in between: where the training loop's wall time went,
// the per-stage cost distributions, memory over time. This is the observed half of a diagnosis; the
// causal profile (advise/causal_profile.h) is the hypothesis half, and the two are never mixed
// (docs/advice.md). A trace with no sample records (a Kineto import) still gives the loop's
// breakdown and says what it cannot see; a truncated trace is read up to its last complete record
// and says so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace simreplay::advise {

// {mean, p50, p95, max} of one stage's per-sample (or per-batch) times, in seconds.
struct StageDistribution {
  std::string stage;  // read, decode, augment, collate, pin, h2d
  int64_t count = 0;
  double mean_s = 0, p50_s = 0, p95_s = 0, max_s = 0;
};

struct MemoryPoint {
  double t_s = 0;  // since the run's start
  double host_used_bytes = 0;
};

struct Observations {
  std::string trace_path;
  std::string accelerator;  // the manifest's: "cuda" or "emulated"
  int64_t samples = 0, batches = 0, steps = 0;  // rank 0's batches and step records
  int ranks = 1;
  double wall_s = 0;
  double train_samples_per_s = 0;
  // Where rank 0's loop time went, in seconds over the whole run: waiting in next() for a batch, pin
  // and H2D copies, the step's compute and communication; `other_s` is the rest (Python overhead
  // between steps, logging). Shares of `wall_s`.
  double data_wait_s = 0, copy_s = 0, compute_s = 0, comm_s = 0, other_s = 0;
  double first_batch_wait_s = 0;  // the first next() of the run
  std::vector<StageDistribution> stages;
  std::vector<MemoryPoint> memory;  // host memory in use over time (host records)
  double peak_host_memory_bytes = 0;
  double max_worker_pss_bytes = 0;
  bool has_sample_records = false;
  std::vector<std::string> cannot_see;  // what this trace does not show, in words
  std::vector<std::string> warnings;    // the reader's (a truncated last line, unknown record types)
};

// Reads `trace_path` once (streaming). Fails on an unreadable or invalid trace ("FILE:LINE: ...").
Result<Observations> ObserveTrace(const std::string& trace_path);

// The observed verdict in one line, e.g. "the training loop waited for data 87% of its wall time".
std::string ObservedSummary(const Observations& o);

}  // namespace simreplay::advise
