#include "replay/run_window.h"

#include <algorithm>

namespace simreplay::replay {

namespace {
// When next() was called for a batch; older traces lack t_next_start_ns.
int64_t NextCallNs(const BatchRecord& b) {
  return b.t_next_start_ns >= 0 ? b.t_next_start_ns : b.t_ready_ns - b.wait_ns;
}
}  // namespace

void RunWindow::AddEpochStart(int64_t t_ns) { epoch_start_ = std::min(epoch_start_, t_ns); }

void RunWindow::AddBatch(const BatchRecord& b) {
  batch_start_ = std::min(batch_start_, NextCallNs(b));
  batch_end_ = std::max(batch_end_, NextCallNs(b) + b.wait_ns);
}

void RunWindow::AddStep(const StepRecord& s) { step_end_ = std::max(step_end_, s.t_start_ns + s.step_ns); }

void RunWindow::AddSample(const SampleRecord& s) {
  sample_start_ = std::min(sample_start_, s.t_start_ns);
  sample_end_ = std::max(sample_end_, s.t_start_ns + s.read_ns + s.decode_ns + s.augment_ns);
}

int64_t RunWindow::start_ns() const {
  for (int64_t t : {epoch_start_, batch_start_, sample_start_}) {
    if (t != INT64_MAX) return t;
  }
  return 0;
}

int64_t RunWindow::end_ns() const {
  for (int64_t t : {step_end_, batch_end_, sample_end_}) {
    if (t != INT64_MIN) return t;
  }
  return 0;
}

double RunWindow::wall_s() const { return std::max<int64_t>(0, end_ns() - start_ns()) * 1e-9; }

}  // namespace simreplay::replay
