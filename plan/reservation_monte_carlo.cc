#include "plan/reservation_monte_carlo.h"

#include "plan/units.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "common/quantile.h"
#include "common/random.h"

namespace simreplay::plan {

namespace {

// Exponential draw of mean m by inversion; 1 - Unit() is in (0, 1], so the log is finite.
double DrawExponential(Rng* rng, double m) { return -m * std::log1p(-rng->Unit()); }

// The failure-free work as consecutive segments, each ending with a save: Span(from, to) is the wall
// time of segments [from, to), saves included, in closed form (no per-segment table, however many).
class SegmentLayout {
 public:
  explicit SegmentLayout(const ReplayInput& in) : in_(in) {
    if (in.checkpoint_every_steps > 0) {
      count_ = (in.steps + in.checkpoint_every_steps - 1) / in.checkpoint_every_steps;
      return;
    }
    const double full_d = std::floor(in.work_s / in.checkpoint_interval_s);
    full_ = static_cast<int64_t>(full_d);
    rest_ = in.work_s - full_d * in.checkpoint_interval_s;
    if (rest_ <= 1e-9 * in.checkpoint_interval_s) rest_ = 0;
    count_ = full_ + (rest_ > 0 ? 1 : 0);
  }
  int64_t count() const { return count_; }
  double Span(int64_t from, int64_t to) const {
    if (to <= from) return 0;
    const double delta = in_.checkpoint_write_s, saves = static_cast<double>(to - from);
    if (in_.checkpoint_every_steps > 0) {
      const int64_t k = in_.checkpoint_every_steps;
      const int64_t first = from * k, last = std::min(to * k, in_.steps);  // steps (first, last]
      const int64_t e = in_.eval_every_steps;
      const int64_t evals = e > 0 ? last / e - first / e : 0;
      return static_cast<double>(last - first) * in_.step_s + static_cast<double>(evals) * in_.eval_s + saves * delta;
    }
    const int64_t full = std::min(to, full_) - std::min(from, full_);
    const double partial = to > full_ && rest_ > 0 ? rest_ + delta : 0;
    return static_cast<double>(full) * (in_.checkpoint_interval_s + delta) + partial;
  }

 private:
  const ReplayInput& in_;
  int64_t count_ = 0, full_ = 0;
  double rest_ = 0;
};

}  // namespace

double ReplayTrainingOnceS(const ReplayInput& in, uint64_t seed, int64_t* failures) {
  Rng rng(seed);
  const double m = in.job_mtbf_s;
  const bool known = in.known_schedule;
  const double never = std::numeric_limits<double>::infinity();
  size_t known_next = 0;  // the next failure of the known schedule
  // The interruption after one at `now`: drawn (memoryless), or the schedule's next one after it.
  auto following = [&](double now) {
    if (!known) return std::isfinite(m) ? now + DrawExponential(&rng, m) : never;
    while (known_next < in.known_failures_s.size() && in.known_failures_s[known_next] <= now) ++known_next;
    return known_next < in.known_failures_s.size() ? in.known_failures_s[known_next++] : never;
  };
  auto draw = [&](const std::vector<double>& offsets) {
    return offsets.empty() ? 0.0 : offsets[static_cast<size_t>(rng.UniformIndex(offsets.size()))];
  };
  *failures = 0;
  double clock = draw(in.start_offsets_s);  // training starts when this launch's start-up ends
  double next_failure = known ? following(-never) : (std::isfinite(m) ? clock + DrawExponential(&rng, m) : never);
  // Recovery: restarts until one completes before the next interruption.
  auto recover = [&]() {
    while (true) {
      clock = next_failure;
      ++*failures;
      next_failure = following(clock);
      const double restart_s = in.restart_s + draw(in.restart_offsets_s);
      if (clock + restart_s <= next_failure) {
        clock += restart_s;
        return;
      }
    }
  };
  if (next_failure < clock) recover();  // a failure during this launch's start-up
  if (in.checkpoint_every_steps <= 0 && in.checkpoint_interval_s <= 0) {
    // continuous free saves: an interruption loses no work, only the restart
    double left = in.work_s;
    while (clock + left > next_failure) {
      left -= next_failure - clock;
      recover();
    }
    return clock + left;
  }
  const SegmentLayout layout(in);
  const int64_t segments = layout.count();
  int64_t done = 0;
  while (done < segments) {
    // The segments that end before the next interruption, found by bisection (Span grows with `to`).
    int64_t lo = done, hi = segments;
    if (clock + layout.Span(done, hi) > next_failure) {
      while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        (clock + layout.Span(done, mid) <= next_failure ? lo : hi) = mid;
      }
    } else {
      lo = hi;
    }
    if (lo > done) {
      clock += layout.Span(done, lo);
      done = lo;
    } else {
      recover();  // the segment under way is lost
    }
  }
  return clock;
}

ReservationDistribution SimulateReservation(const ReplayInput& in, const std::vector<double>& slot_days,
                                            const ReplayOptions& options) {
  ReservationDistribution d;
  d.seed = options.seed;
  // Expected interruptions per trial, from the exact model's failures per unit of wall time.
  const double m = in.job_mtbf_s;
  const double tau = in.checkpoint_interval_s, delta = in.checkpoint_write_s;
  double expected_failures = 0;
  if (in.known_schedule) {
    expected_failures = static_cast<double>(in.known_failures_s.size());
  } else if (std::isfinite(m)) {
    const double per_work = tau > 0 ? m * std::exp(in.restart_s / m) * std::expm1((tau + delta) / m) / tau
                                    : std::exp(in.restart_s / m);
    expected_failures = in.work_s * per_work / m;
  }
  // Each interruption costs a few loop turns; segments between two are skipped in one.
  const double events_per_trial = expected_failures + 2;
  d.trials = options.trials;
  const bool spread = !in.start_offsets_s.empty() || !in.restart_offsets_s.empty();
  if (in.known_schedule && !spread) {
    // One schedule, no draws: every trial would replay the same bytes.
    d.trials = 1;
    d.note = fmt::format("known failure schedule ({} failure{} given): one deterministic trial",
                         in.known_failures_s.size(), in.known_failures_s.size() == 1 ? "" : "s");
  } else if (in.known_schedule) {
    d.note = fmt::format("known failure schedule ({} failure{} given) over the launch spread ({} fresh, {} resumed "
                         "launches): {} trials",
                         in.known_failures_s.size(), in.known_failures_s.size() == 1 ? "" : "s",
                         in.start_offsets_s.size(), in.restart_offsets_s.size(), d.trials);
  } else if (!std::isfinite(events_per_trial) || d.trials * events_per_trial > options.max_events) {
    const double fit = std::isfinite(events_per_trial) ? std::floor(options.max_events / events_per_trial) : 0;
    d.trials = static_cast<int64_t>(std::max(0.0, fit));
    d.note = fmt::format("{} of {} trials run: each expects about {:.3g} interruptions (bound {:g} events)", d.trials,
                         options.trials, expected_failures, options.max_events);
  }
  if (d.trials == 0) {
    d.p_within.assign(slot_days.size(), 0);
    return d;
  }
  std::vector<double> days(static_cast<size_t>(d.trials));
  double failures_sum = 0;
  for (int64_t k = 0; k < d.trials; ++k) {
    int64_t failures = 0;
    const double replayed = ReplayTrainingOnceS(in, Rng::DeriveSeed(options.seed, static_cast<uint64_t>(k)), &failures);
    days[static_cast<size_t>(k)] = (in.fixed_s + replayed) * (1 + in.buffer_fraction) / kSecondsPerDay;
    failures_sum += static_cast<double>(failures);
  }
  double sum = 0;
  for (double x : days) sum += x;
  d.mean_days = sum / d.trials;
  double ss = 0;
  for (double x : days) ss += (x - d.mean_days) * (x - d.mean_days);
  d.stddev_days = d.trials > 1 ? std::sqrt(ss / (d.trials - 1)) : 0;
  d.mean_failures = failures_sum / d.trials;
  std::sort(days.begin(), days.end());
  d.p2_5_days = SortedQuantileLinear(days, 0.025);
  d.p50_days = SortedQuantileLinear(days, 0.5);
  d.p90_days = SortedQuantileLinear(days, 0.9);
  d.p97_5_days = SortedQuantileLinear(days, 0.975);
  d.p99_days = SortedQuantileLinear(days, 0.99);
  for (double slot : slot_days) {
    const auto within = std::upper_bound(days.begin(), days.end(), slot) - days.begin();
    d.p_within.push_back(static_cast<double>(within) / d.trials);
  }
  return d;
}

}  // namespace simreplay::plan
