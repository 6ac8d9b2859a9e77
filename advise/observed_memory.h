// Memory from the trace's resource samples (docs/advice.md, "Observed"): each loader process's RSS and
// PSS growth (a least-squares slope over its worker records, flagged as a leak or as copy-on-read
// growth when clearly positive, projected to the end of an epoch and of the run), and the host's
// memory headroom (peak in use against the total).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "advise/observed_records.h"

namespace simreplay::advise {

// How long an epoch and the run are, when a scenario says (0: not known). `source` says which file.
struct RunHorizon {
  int64_t steps = 0;              // optimizer steps of the run
  int64_t epochs = 0;             // used when steps == 0
  int64_t samples_per_epoch = 0;  // all ranks
  std::string source;             // e.g. "scenario s.json: train.steps"
};

// A least-squares line bytes = a + slope * t through one process's samples.
struct GrowthFit {
  double first_bytes = 0, last_bytes = 0;
  double slope_bytes_per_s = 0;
  double r2 = 0;  // 0 when the samples do not vary
  bool clearly_growing = false;  // the rule of docs/advice.md (kGrowthMinBytes, kGrowthMinShare, kGrowthMinR2)
};

// Growth over the span that is "clear": at least this much in absolute and relative terms, and a line
// that explains at least this share of the variance.
inline constexpr double kGrowthMinBytes = 8.0 * (1 << 20);
inline constexpr double kGrowthMinShare = 0.05;
inline constexpr double kGrowthMinR2 = 0.5;
inline constexpr int kGrowthMinPoints = 3;

struct ProcessMemoryGrowth {
  int64_t rank = 0, worker = 0, pid = 0;
  int64_t points = 0;
  double start_s = 0, span_s = 0;  // first record since the run's start; last - first
  GrowthFit rss, pss;
  // "leak" (RSS grows: new memory), "copy_on_read" (PSS grows while RSS does not: pages shared with
  // the parent becoming private), "none", or "too_few_points".
  std::string growth;
  // PSS (the process's share of host memory) extrapolated along the PSS slope from its last record;
  // -1 when the horizon is not known.
  double projected_epoch_end_pss_bytes = -1, projected_run_end_pss_bytes = -1;
};

struct MemoryHorizon {
  double epoch_s = -1;
  std::string epoch_from;  // how epoch_s was found
  double run_s = -1;       // from the run window's start
  std::string run_from;
  bool workers_restart_each_epoch = false;  // manifest.loader.persistent_workers false, num_workers > 0
};

struct WorkerMemoryObservation {
  std::vector<ProcessMemoryGrowth> processes;  // by (rank, worker, pid)
  int64_t leaking = 0, copy_on_read = 0;       // processes flagged
  MemoryHorizon horizon;
  Provenance from;
};

struct HostHeadroom {
  bool visible = false;            // a peak and a total are both known
  double peak_bytes = 0;           // max of host mem_used_bytes and mem_peak_bytes
  std::string peak_from;
  double total_bytes = -1;
  std::string total_from;          // "host.mem_total_bytes" or "manifest.hardware.ram_bytes"
  double headroom_bytes = 0, headroom_fraction = 0;
  bool low = false;                // headroom below kLowHeadroomShare of the total
  // The peak plus every process's projected PSS growth to the run's end (-1: no run horizon).
  double projected_run_end_peak_bytes = -1;
  bool projected_exceeds_total = false;
  Provenance from;
};

inline constexpr double kLowHeadroomShare = 0.10;

// t_s: the sample times in seconds; the line through (t_s, bytes). REQUIRES: equal sizes.
GrowthFit FitGrowth(const std::vector<double>& t_s, const std::vector<double>& bytes);

// `samples_per_s`: the run's observed training throughput (all ranks), for an epoch's length from a
// sample count.
WorkerMemoryObservation ObserveWorkerMemory(const TraceRecords& records, const RunHorizon& horizon,
                                            double samples_per_s, double step_period_s);

HostHeadroom ObserveHeadroom(const TraceRecords& records, const WorkerMemoryObservation& workers);

}  // namespace simreplay::advise
