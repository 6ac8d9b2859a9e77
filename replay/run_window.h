// The one definition of a captured run's wall time, shared by the replay's measured summary
// (replay/sample_costs.h) and calibration (its self-check and contention estimate):
//
//   start = the first iter() (the capture's epoch_start event); without one, the first next() call
//           of a batch (t_next_start_ns, else t_ready_ns - wait_ns); without batches, the first sample.
//   end   = the last step end (t_start_ns + step_ns); without steps, the last batch hand-off
//           (next() start + wait); without batches, the last sample end.
//
// Records are fed in any order; the window is a pure function of the set.
#pragma once

#include <cstdint>

#include "replay/trace_records.h"

namespace simreplay::replay {

class RunWindow {
 public:
  void AddEpochStart(int64_t t_ns);
  void AddBatch(const BatchRecord& b);
  void AddStep(const StepRecord& s);
  void AddSample(const SampleRecord& s);

  int64_t start_ns() const;  // 0 when nothing was added
  int64_t end_ns() const;    // 0 when nothing was added
  // max(0, end - start) in seconds.
  double wall_s() const;

 private:
  int64_t epoch_start_ = INT64_MAX, batch_start_ = INT64_MAX, sample_start_ = INT64_MAX;
  int64_t step_end_ = INT64_MIN, batch_end_ = INT64_MIN, sample_end_ = INT64_MIN;
};

}  // namespace simreplay::replay
