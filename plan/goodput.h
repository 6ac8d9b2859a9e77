// Goodput of a long job under failures and checkpoints (docs/planning.md, "Goodput"): job MTBF from
// component MTBF and count, checkpoint cost from bytes and bandwidth, the Young/Daly interval, lost
// work and restart per failure. All figures are expectations (first-order), in seconds.
#pragma once

#include <string>

namespace simreplay::plan {

struct GoodputInput {
  double work_s = 0;      // failure-free time of the work that must complete (training steps + eval stalls)
  double training_s = 0;  // the part of work_s that is training (the goodput numerator)
  int gpus = 1;
  int nodes = 1;
  double gpu_mtbf_h = 50000;
  double node_mtbf_h = 0;  // 0: not counted
  double checkpoint_bytes = 0;
  double write_bytes_per_s = 1;
  double read_bytes_per_s = 1;
  bool auto_interval = true;
  double every_s = 0;    // when not auto
  double restart_s = 0;  // detect + reschedule + re-warm, without reading the checkpoint
};

struct Goodput {
  double job_mtbf_s = 0;             // 1 / (gpus / gpu_mtbf + nodes / node_mtbf)
  double checkpoint_write_s = 0;     // delta: one save, training stalled
  double checkpoint_read_s = 0;      // one restore
  double checkpoint_interval_s = 0;  // tau: Young/Daly sqrt(2 delta M) for "auto"
  double checkpoints = 0;            // expected saves
  double checkpoint_s = 0;           // total save stalls
  double failures = 0;               // expected failures over the wall time
  double lost_work_s = 0;            // failures x tau / 2
  double restart_total_s = 0;        // failures x (restart + read)
  double wall_s = 0;                 // work + checkpoint stalls + lost work + restarts
  double goodput_fraction = 0;       // training_s / wall_s
  bool feasible = true;              // false: failures come faster than the job can progress
  std::string note;
};

// Wall time W solves W = work x (1 + delta / tau) + (W / M) x (tau / 2 + R), R = restart + read:
//   W = work x (1 + delta / tau) / (1 - (tau / 2 + R) / M).
// Infeasible (wall = infinity) when (tau / 2 + R) >= 0.9 M: the job would spend its life recovering.
Goodput ComputeGoodput(const GoodputInput& in);

}  // namespace simreplay::plan
