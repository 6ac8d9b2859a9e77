// Who the others wait for (docs/advice.md, "Observed"): from the collective records of a merged
// multi-rank trace, which rank arrives last at each collective and how often, and the share of each
// rank's step time spent in collectives; and how many samples each loader worker produced (for an
// IterableDataset a worker that got nothing is a finding: fewer shards than workers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "advise/observed_records.h"

namespace simreplay::advise {

struct RankCollectives {
  int64_t rank = 0;
  int64_t collectives = 0;   // its collective records inside a step (step >= 0)
  int64_t matched = 0;       // of those, how many met another rank's (a group)
  int64_t last_arrivals = 0; // groups it issued last
  double last_share = 0;     // last_arrivals / matched
  double mean_lateness_s = 0;  // mean over its groups of its issue time - the group's first
  double collective_s = 0;     // union of its collectives' [start, start + duration] intervals
  double step_s = 0;           // sum of its step records' step_ns
  double collective_share = 0; // collective_s / step_s
  double exposed_comm_share = 0;  // sum of comm_ns / step_s (the part not hidden behind compute)
  bool straggler = false;
};

struct CollectiveStragglers {
  bool visible = false;  // collective records of two or more ranks met in at least one group
  int64_t groups = 0;    // (step, op, n-th of that op in the step) issued by two or more ranks
  int64_t ranks = 0;
  double straggler_share = 0;  // the rule's threshold: min(kStragglerMaxShare, 2 / ranks)
  std::vector<RankCollectives> by_rank;
  Provenance from;
};

inline constexpr double kStragglerMaxShare = 0.75;
inline constexpr int64_t kStragglerMinGroups = 5;

struct WorkerSamples {
  int64_t rank = 0, worker = 0, samples = 0;
};

struct SamplesPerWorker {
  bool visible = false;  // sample records exist
  std::string dataset;   // "iterable", "map-style" or "unknown"
  std::string dataset_from;
  int64_t num_workers = -1;  // manifest.loader.num_workers; -1 unknown
  std::vector<WorkerSamples> workers;  // every (rank, worker) seen or expected, zeros included
  std::vector<WorkerSamples> idle;     // loader workers (id < num_workers) with no sample
  double max_over_min = 0;             // among workers with samples; 0 with fewer than two
  Provenance from;
};

CollectiveStragglers ObserveCollectives(const TraceRecords& records);
SamplesPerWorker ObserveSamplesPerWorker(const TraceRecords& records);

}  // namespace simreplay::advise
