// The training loop's data wait, looked at batch by batch (docs/advice.md, "Observed"): stalls at
// epoch boundaries (the first batches of each epoch after the first against the steady median wait),
// and head-of-line blocking (the share of data wait spent behind the slowest sample of a batch).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "advise/observed_records.h"

namespace simreplay::advise {

struct EpochBoundary {
  int64_t epoch = 0;
  int64_t batches = 0;  // boundary batches seen (at most EpochStalls::boundary_batches)
  double wait_s = 0;    // their data wait, summed
  double mean_wait_s = 0;
  double excess_s = 0;  // wait_s - batches x the steady median, at least 0
  bool stall = false;   // mean_wait_s > kStallFactor x steady median + kStallMinS
};

inline constexpr double kStallFactor = 2.0;
inline constexpr double kStallMinS = 1e-3;

struct EpochStalls {
  bool visible = false;             // rank 0 has batches of two or more epochs and steady batches
  int64_t boundary_batches = 1;     // per epoch: max(1, manifest.loader.num_workers)
  std::string boundary_from;
  int64_t steady_batches = 0;       // rank 0's batches outside every epoch's boundary
  double steady_median_wait_s = 0;
  std::vector<EpochBoundary> epochs;  // every epoch after the first, in order
  double excess_s = 0;                // summed over those epochs
  double share_of_wall = 0;           // excess_s / the run's wall time
  int64_t stalls = 0;
  Provenance from;
};

struct HeadOfLine {
  bool visible = false;   // at least one waited-for batch of rank 0 has two or more sample records
  int64_t batches = 0;    // such batches
  double data_wait_s = 0;        // their data wait
  double behind_slowest_s = 0;   // sum over them of min(wait, slowest sample - median sample)
  double share = 0;              // behind_slowest_s / data_wait_s
  double mean_slowest_over_median = 0;  // mean over them of slowest / median sample cost
  Provenance from;
};

EpochStalls ObserveEpochStalls(const TraceRecords& records);
HeadOfLine ObserveHeadOfLine(const TraceRecords& records);

}  // namespace simreplay::advise
