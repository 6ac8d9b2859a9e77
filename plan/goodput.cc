#include "plan/goodput.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace simreplay::plan {

Goodput ComputeGoodput(const GoodputInput& in) {
  Goodput g;
  double rate_per_s = in.gpus / (in.gpu_mtbf_h * 3600.0);
  if (in.node_mtbf_h > 0) rate_per_s += in.nodes / (in.node_mtbf_h * 3600.0);
  g.job_mtbf_s = rate_per_s > 0 ? 1.0 / rate_per_s : std::numeric_limits<double>::infinity();
  g.checkpoint_write_s = in.checkpoint_bytes / in.write_bytes_per_s;
  g.checkpoint_read_s = in.checkpoint_bytes / in.read_bytes_per_s;
  const double delta = g.checkpoint_write_s;
  const double restart = in.restart_s + g.checkpoint_read_s;
  // Young (1974) / Daly (2006, first order): tau = sqrt(2 delta M). Never shorter than a save itself.
  g.checkpoint_interval_s =
      in.auto_interval ? std::max(delta, std::sqrt(2.0 * delta * g.job_mtbf_s)) : std::max(in.every_s, 1e-9);
  const double tau = g.checkpoint_interval_s;
  const double loss_per_failure_s = tau / 2 + restart;
  const double denominator = 1.0 - loss_per_failure_s / g.job_mtbf_s;
  if (denominator <= 0.1) {
    g.feasible = false;
    g.wall_s = std::numeric_limits<double>::infinity();
    g.goodput_fraction = 0;
    g.note = fmt::format(
        "infeasible: a failure every {:.0f} s on average, each costing {:.0f} s (half an interval + restart)",
        g.job_mtbf_s, loss_per_failure_s);
    return g;
  }
  g.checkpoints = tau > 0 && delta > 0 ? in.work_s / tau : 0;
  g.checkpoint_s = g.checkpoints * delta;
  g.wall_s = (in.work_s + g.checkpoint_s) / denominator;
  g.failures = g.wall_s / g.job_mtbf_s;
  g.lost_work_s = g.failures * tau / 2;
  g.restart_total_s = g.failures * restart;
  g.goodput_fraction = g.wall_s > 0 ? in.training_s / g.wall_s : 1;
  return g;
}

}  // namespace simreplay::plan
