// The records of one or more traces that the observed findings need, kept after the single streaming
// pass of ObserveTraces (advise/observations.h) so that each finding is a pure function of them, in a
// module of its own (observed_cpu, observed_memory, observed_loop, observed_ranks, observed_storage).
// Samples are kept compact: a run of millions of samples costs tens of bytes each.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "replay/trace_records.h"

namespace simreplay::advise {

// Trace timestamps and durations are integer nanoseconds; findings are in seconds.
inline constexpr double kNsToS = 1e-9;

// Where a finding's numbers came from, as data: `kind` is "measured" (trace records), "input" (a file
// the user gave: a probe, a scenario) or "assumed"; `records` counts the trace records it used, by
// record type; `inputs` names anything else it used ("manifest.hardware.threads", "probe FILE").
struct Provenance {
  std::string kind = "measured";
  std::map<std::string, int64_t> records;
  std::vector<std::string> inputs;
};

struct SampleCost {
  int64_t rank = 0, epoch = 0, batch = 0, worker = 0;
  int64_t t_start_ns = 0;
  int64_t read_ns = 0, decode_ns = 0, augment_ns = 0, read_bytes = 0;
  bool unsplit = false;
  int format = 0;  // index into TraceRecords::formats
  int64_t cpu_ns = -1, minflt = -1;  // thread CPU time and minor page faults of the call; -1 = not recorded
  int64_t pixels = 0;                 // decoded width x height x frames; 0 = not recorded
  // The sample's __getitem__ cost as the stages saw it (unsplit: all of it is in decode_ns).
  int64_t getitem_ns() const { return read_ns + decode_ns + augment_ns; }
};

// A `collective` record (docs/trace-format.md), validated when read.
struct CollectiveObservation {
  int64_t rank = 0, step = -1;
  std::string op;
  int64_t t_start_ns = 0, duration_ns = 0;
};

struct TraceRecords {
  nlohmann::json manifest = nlohmann::json::object();  // the first trace's
  std::vector<std::string> formats;                    // sample formats, in order of first appearance
  std::vector<SampleCost> samples;
  std::vector<replay::BatchRecord> batches;  // every rank
  std::vector<replay::StepRecord> steps;     // every rank
  std::vector<replay::WorkerRecord> workers;
  std::vector<replay::HostRecord> hosts;
  std::vector<CollectiveObservation> collectives;
  std::vector<int64_t> epoch_starts_ns;  // epoch_start events
  int64_t window_start_ns = 0;           // the run window (replay/run_window.h)
  double wall_s = 0;
};

// The manifest's integer at `a.b` (e.g. "loader", "num_workers"), or `fallback`.
int64_t ManifestInt(const nlohmann::json& manifest, const char* section, const char* key, int64_t fallback);

}  // namespace simreplay::advise
