#include "plan/goodput.h"

#include "plan/units.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace simreplay::plan {

namespace {


}  // namespace

double FindOptimalIntervalS(double checkpoint_write_s, double job_mtbf_s) {
  if (!std::isfinite(job_mtbf_s)) return kInfinity;
  if (checkpoint_write_s <= 0) return 0;
  const double d = checkpoint_write_s / job_mtbf_s;
  // h(u) = u + expm1(-(u + d)): expm1 keeps small u (frequent saves, rare failures) exact.
  double lo = 0, hi = 1;
  for (int i = 0; i < 200 && hi - lo > 1e-15 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (mid + std::expm1(-(mid + d)) < 0 ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi) * job_mtbf_s;
}

double FirstOrderWallS(double work_s, double tau_s, double delta_s, double restart_s, double job_mtbf_s) {
  const double denominator = 1 - (tau_s / 2 + restart_s) / job_mtbf_s;
  return denominator > 0 ? work_s * (1 + delta_s / tau_s) / denominator : kInfinity;
}

Goodput ComputeGoodput(const GoodputInput& in) {
  Goodput g;
  const double m = in.job_mtbf_s, delta = in.checkpoint_write_s, restart = in.restart_s;
  g.job_mtbf_s = m;
  g.checkpoint_write_s = delta;
  g.restart_s = restart;
  g.young_interval_s = std::sqrt(2 * delta * m);
  g.optimal_interval_s = FindOptimalIntervalS(delta, m);
  double tau = in.auto_interval ? g.optimal_interval_s : in.every_s;
  if (!std::isfinite(tau)) tau = in.work_s;  // no failures: one save at the end is as good as any
  g.min_interval_s = in.min_interval_s;
  if (tau < in.min_interval_s) {
    tau = in.min_interval_s;
    g.interval_bounded = true;
  }
  g.checkpoint_interval_s = tau;
  const double segments = tau > 0 ? in.work_s / tau : 0;  // n: tau = 0 means continuous free saves (delta = 0)
  g.checkpoints = delta > 0 ? segments : 0;
  g.checkpoint_s = g.checkpoints * delta;
  g.first_order_wall_s = FirstOrderWallS(in.work_s, tau, delta, restart, m);
  if (!std::isfinite(m)) {  // no failures
    g.wall_s = in.work_s + g.checkpoint_s;
    g.goodput_fraction = g.wall_s > 0 ? in.training_s / g.wall_s : 1;
    return g;
  }
  // Per segment of length L = tau + delta, a = L / M, r = R / M (segments and restarts both renew
  // after a failure): expected time M e^r (e^a - 1), of which (e^a - 1) M (e^r - 1) in restarts and
  // (e^a - 1) M - L lost in failed attempts; expected failures (e^a - 1) e^r. tau -> 0 (delta = 0)
  // has the limit e^r per unit of work.
  const double a = (tau + delta) / m, r = restart / m;
  const double grow = std::exp(r);
  double per_work;   // wall / work
  double seg_fail;   // (e^a - 1) / tau, per unit of work
  if (tau > 0) {
    seg_fail = std::expm1(a) / tau;
  } else {
    seg_fail = 1 / m;
  }
  per_work = m * grow * seg_fail;
  g.wall_s = in.work_s * per_work;
  if (!std::isfinite(g.wall_s)) {
    g.feasible = false;
    g.wall_s = kInfinity;
    g.goodput_fraction = 0;
    g.note = fmt::format(
        "infeasible: the expected wall time overflows (exact expression, Daly 2006): a failure every {:.0f} s, "
        "{:.0f} s between saves, {:.0f} s per save and {:.0f} s per restart",
        m, tau, delta, restart);
    return g;
  }
  g.failures = g.wall_s / m;
  g.restart_total_s = in.work_s * seg_fail * m * std::expm1(r);
  g.lost_work_s = std::max(0.0, g.wall_s - in.work_s - g.checkpoint_s - g.restart_total_s);
  g.goodput_fraction = g.wall_s > 0 ? in.training_s / g.wall_s : 1;
  if (!std::isfinite(g.first_order_wall_s)) {
    g.note = "the first-order form has no finite value here ((tau/2 + R) >= M); the exact expression does";
  }
  return g;
}

}  // namespace simreplay::plan
