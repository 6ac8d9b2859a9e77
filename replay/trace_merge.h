// Joins the per-rank traces of one distributed run (docs/distributed.md, "Merging rank traces") into
// one trace on one time base, for calibration and the timeline.
//
// Each rank's trace times are ns since that rank's own t0 on its own host's monotonic clock. Capture
// (simreplay_capture.distributed) records in the manifest `distributed.clock.to_reference_ns`: what to
// add to that rank's times to put them on rank 0's time base, with `uncertainty_ns`. The merge applies
// it, then moves the whole run so that the earliest rank's t0 is 0 (instants stay non-negative).
// A trace without that field falls back to the wall-clock start (`t0_time_ns` differences: as good
// as the hosts' NTP) and the merge says so; with neither, its times are left as they are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace simreplay::replay {

struct MergeOptions {
  bool align_clocks = true;  // false: keep every rank's own time base (shift 0)
};

// What happened to one input.
struct MergedInput {
  std::string path;
  int64_t rank = 0;
  int64_t shift_ns = 0;        // added to every instant of this rank
  int64_t uncertainty_ns = 0;  // bound on the alignment error (0: exact or unknown, see method)
  std::string method;          // "reference", "ping-pong", "wall clock", "none", "disabled"
  int64_t records = 0;         // records copied (footer excluded)
  int64_t host_records_dropped = 0;
};

struct MergeSummary {
  std::vector<MergedInput> inputs;  // in rank order
  int64_t world_size = 0;
  std::vector<std::string> warnings;
};

// Reads `paths` (one trace per rank), writes the merged trace to `out_path` (atomically; gzip when it
// ends in .gz). Ranks are written one after the other in rank order; every record keeps its `rank`.
// Host records (machine-wide samples) are kept only from the lowest rank of each node, so a node's
// CPU and memory are not counted twice. Errors (InvalidArgument, "FILE[:LINE]: ..."): a malformed
// trace, two traces of the same rank, different world sizes, a rank outside [0, world_size).
Result<MergeSummary> MergeTraces(const std::vector<std::string>& paths, const std::string& out_path,
                                 const MergeOptions& options);

}  // namespace simreplay::replay
