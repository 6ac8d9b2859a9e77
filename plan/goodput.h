// Expected wall time of a long job under exponential failures with periodic checkpoints
// (docs/planning.md, "Goodput"): Daly's exact expression (Daly, "A higher order estimate of the
// optimum checkpoint interval for restart dumps", FGCS 22(3), 2006), the checkpoint interval that
// minimises it, Young's first-order interval beside it, and the expected split of the wall time into
// work, saves, lost work and restarts. All times in seconds.
#pragma once

#include <string>

namespace simreplay::plan {

struct GoodputInput {
  double work_s = 0;      // failure-free time of the work that must complete (training steps + eval stalls)
  double training_s = 0;  // the part of work_s that is training (the goodput numerator)
  double job_mtbf_s = 0;  // M: mean time between job interruptions (infinity: none)
  double checkpoint_write_s = 0;  // delta: one save, training stalled
  double restart_s = 0;           // R: failure to training again, checkpoint read included
  bool auto_interval = true;      // tau = the interval minimising the exact wall time
  double every_s = 0;             // tau when not auto
  // The shortest interval allowed (asynchronous saves: one save's write time, since a save cannot start
  // before the previous write ended). W has one minimum in tau, so the bounded optimum is the bound.
  double min_interval_s = 0;
};

struct Goodput {
  double job_mtbf_s = 0;
  double checkpoint_write_s = 0;     // delta
  double restart_s = 0;              // R
  double checkpoint_interval_s = 0;  // tau used (the optimum for "auto")
  double young_interval_s = 0;       // sqrt(2 delta M) (Young 1974), for reference
  double optimal_interval_s = 0;     // argmin of the exact wall time (FindOptimalIntervalS)
  double min_interval_s = 0;         // the lower bound on tau (GoodputInput::min_interval_s)
  bool interval_bounded = false;     // tau was raised to min_interval_s
  double checkpoints = 0;            // work / tau completed saves
  double checkpoint_s = 0;           // their stalls
  double failures = 0;               // expected interruptions: wall / M
  double lost_work_s = 0;            // work and saves redone
  double restart_total_s = 0;        // time in restarts, failed restarts included
  double wall_s = 0;                 // work + checkpoint stalls + lost work + restarts
  double first_order_wall_s = 0;     // the first-order form, for comparison (infinity where it breaks down)
  double goodput_fraction = 0;       // training_s / wall_s
  bool feasible = true;              // false only when the exact wall time overflows a double
  std::string note;
};

// Daly (2006), exponential failures that may also strike during saves and restarts, n = work / tau
// segments of tau + delta each:
//   wall = M e^{R/M} (e^{(tau + delta)/M} - 1) x work / tau.
// No cut-off: any finite result is returned; infeasible only when it overflows.
Goodput ComputeGoodput(const GoodputInput& in);

// The interval minimising the exact wall time. With u = tau / M and d = delta / M, d wall / d tau = 0
// reduces to u = 1 - e^{-(u + d)}, whose left side minus right side increases from e^{-d} - 1 < 0 at
// u = 0 to e^{-(1 + d)} > 0 at u = 1: one root in (0, 1), found by bisection (deterministic). R only
// scales the wall time by e^{R/M} and does not move the optimum. 0 when delta = 0; M when M is infinite.
double FindOptimalIntervalS(double checkpoint_write_s, double job_mtbf_s);

// The first-order form the planner used before: work (1 + delta/tau) / (1 - (tau/2 + R)/M); infinity
// where the denominator is <= 0. Kept to show where it departs from the exact expression.
double FirstOrderWallS(double work_s, double tau_s, double delta_s, double restart_s, double job_mtbf_s);

}  // namespace simreplay::plan
