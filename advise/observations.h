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

#include "advise/observed_cpu.h"
#include "advise/observed_faults.h"
#include "advise/observed_loop.h"
#include "advise/observed_memory.h"
#include "advise/observed_ranks.h"
#include "advise/observed_records.h"
#include "advise/observed_storage.h"
#include "common/status.h"

namespace simreplay::advise {

// {mean, p50, p95, p99, max} of one stage's per-sample (or per-batch) times, in seconds.
struct StageDistribution {
  std::string stage;  // read, decode, augment, collate, pin, h2d
  int64_t count = 0;
  double mean_s = 0, p50_s = 0, p95_s = 0, p99_s = 0, max_s = 0;
  std::string record;  // the record type the times came from: "sample" or "batch"
};

// The per-sample stages of the samples of one format (the sample records' `format`: jpeg, mp4, ...).
struct MediaStageCosts {
  std::string format;
  int64_t samples = 0;
  double read_bytes = 0;  // summed over its samples
  std::vector<StageDistribution> stages;  // read, decode, augment; getitem (unsplit) for unsplit samples
};

// What the caller knows beyond the trace: the run's length (for memory projections) and a storage
// probe's ceiling.
struct ObserveOptions {
  RunHorizon horizon;
  const StorageProbeFits* storage_probe = nullptr;  // not owned; may be null
};

struct MemoryPoint {
  double t_s = 0;  // since the run's start
  double host_used_bytes = 0;
};

struct Observations {
  std::string trace_path;                // the first trace
  std::vector<std::string> trace_paths;  // every trace read, in the order given
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
  std::vector<MediaStageCosts> media;  // by format name
  std::vector<MemoryPoint> memory;     // host memory in use over time (host records)
  double peak_host_memory_bytes = 0;
  double max_worker_pss_bytes = 0;
  CpuObservation cpu;
  WorkerMemoryObservation worker_memory;
  HostHeadroom headroom;
  EpochStalls epoch_stalls;
  HeadOfLine head_of_line;
  CollectiveStragglers collectives;
  SamplesPerWorker samples_per_worker;
  StorageThroughput storage;
  PageFaultObservation page_faults;
  bool has_sample_records = false;
  std::vector<std::string> cannot_see;  // what this trace does not show, in words
  std::vector<std::string> warnings;    // the reader's (a truncated last line, unknown record types)
};

// Reads `trace_path` once (streaming). Fails on an unreadable or invalid trace ("FILE:LINE: ...").
Result<Observations> ObserveTrace(const std::string& trace_path, const ObserveOptions& options = {});
// Several traces read as one run (rank traces, or a merged trace and more): the manifest is the
// first's; the loop breakdown is rank 0's. REQUIRES: !trace_paths.empty().
Result<Observations> ObserveTraces(const std::vector<std::string>& trace_paths, const ObserveOptions& options = {});

// The observed verdict in one line, e.g. "the training loop waited for data 87% of its wall time".
std::string ObservedSummary(const Observations& o);

}  // namespace simreplay::advise
