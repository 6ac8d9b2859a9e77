#include "plan/steady_state.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace simreplay::plan {

namespace {

// Window w covers steps [starts[w], starts[w+1]).
struct Windows {
  std::vector<int64_t> starts;  // one more than the number of windows
  size_t count() const { return starts.empty() ? 0 : starts.size() - 1; }
};

// Whole epochs per window when at least 6 epochs were simulated, so every window holds the same
// number of epoch boundaries and the detector sees the periodic rate; else runs of steps.
Windows MakeWindows(int64_t steps, const EpochGeometry& epochs, bool* periodic) {
  Windows w;
  const double spe = epochs.StepsPerEpoch();
  *periodic = spe > 0 && spe * 6 <= static_cast<double>(steps);
  if (*periodic) {
    const int64_t per_window = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(steps / 16.0 / spe)));
    for (int64_t e = 0;; e += per_window) {
      const int64_t start = epochs.BoundaryStep(e);
      if (start > steps) break;
      w.starts.push_back(start);
      if (start == steps) break;
    }
    return w;
  }
  const int64_t size = std::max<int64_t>(8, steps / 16);
  for (int64_t s = 0; s + size <= steps; s += size) w.starts.push_back(s);
  if (!w.starts.empty()) w.starts.push_back(w.starts.back() + size);
  return w;
}

bool IsBoundary(int64_t step, const EpochGeometry& epochs) {
  if (epochs.micro_batches_per_epoch <= 0 || step == 0) return false;
  const int64_t e = (step * epochs.grad_accum + epochs.grad_accum - 1) / epochs.micro_batches_per_epoch;
  return e > 0 && epochs.BoundaryStep(e) == step;
}

// Mean interval of steps [from, to), leaving out epoch-boundary steps when `skip_boundaries`.
double MeanInterval(const std::vector<double>& x, int64_t from, int64_t to, const EpochGeometry& epochs,
                    bool skip_boundaries) {
  double sum = 0;
  int64_t n = 0;
  for (int64_t k = from; k < to; ++k) {
    if (skip_boundaries && IsBoundary(k, epochs)) continue;
    sum += x[static_cast<size_t>(k)];
    ++n;
  }
  return n > 0 ? sum / n : 0;
}

}  // namespace

SteadyState DetectSteadyState(const std::vector<double>& x, const EpochGeometry& epochs, double tolerance) {
  SteadyState st;
  const auto steps = static_cast<int64_t>(x.size());
  if (steps == 0) return st;
  Windows w = MakeWindows(steps, epochs, &st.periodic);
  const bool skip = !st.periodic;
  // Window 0 holds the start-up; the steady part starts at a later window i and runs to the last full
  // window n-1. It is steady when its first and second halves (by windows) agree within the tolerance
  // (no drift), with at least 4 windows in it. The earliest such i wins.
  const size_t n = w.count();
  auto mean_of = [&](size_t from, size_t to) { return MeanInterval(x, w.starts[from], w.starts[to], epochs, skip); };
  // It must also be precise: the standard error of its mean, estimated from the window means (batch
  // means), at most the tolerance; else sample-to-sample cost variation over a short run would
  // pass for the long-run rate.
  auto relative_se = [&](size_t from, size_t to) {
    const double all = mean_of(from, to);
    double ss = 0;
    for (size_t k = from; k < to; ++k) ss += (mean_of(k, k + 1) - all) * (mean_of(k, k + 1) - all);
    const double count = static_cast<double>(to - from);
    return all > 0 && count > 1 ? std::sqrt(ss / (count - 1) / count) / all : 0.0;
  };
  size_t chosen = 0;
  bool drift_free = false;
  for (size_t i = 1; i + 4 <= n; ++i) {
    const size_t mid = i + (n - i) / 2;
    const double a = mean_of(i, mid), b = mean_of(mid, n), all = mean_of(i, n);
    const double drift = all > 0 ? std::fabs(a - b) / all : 0;
    if (drift <= tolerance) {
      chosen = i;
      drift_free = true;
      st.drift = drift;
      st.relative_se = relative_se(i, n);
      st.steady = st.relative_se <= tolerance;
      break;
    }
  }
  if (!drift_free) {  // estimate from the last half and say so
    chosen = n >= 2 ? n / 2 : 0;
    if (n >= 2) {
      const size_t mid = chosen + (n - chosen) / 2;
      const double all = mean_of(chosen, n);
      st.drift = all > 0 && mid > chosen && mid < n ? std::fabs(mean_of(chosen, mid) - mean_of(mid, n)) / all : 1;
      st.relative_se = relative_se(chosen, n);
    }
  }
  const int64_t end = n > 0 ? w.starts[n] : steps;
  st.warmup_steps = n > 0 ? w.starts[chosen] : 0;
  st.warmup_end_s = std::accumulate(x.begin(), x.begin() + st.warmup_steps, 0.0);
  st.step_s = n > 0 ? MeanInterval(x, st.warmup_steps, end, epochs, skip) : x.back();
  st.window_steps = n > 0 ? (w.starts[n] - w.starts[0]) / static_cast<int64_t>(n) : steps;
  if (!st.periodic) {
    // Boundaries simulated after the warm-up measure their own extra; else the start-up stands in for
    // an epoch start (workers restart and the pipeline refills: an assumption, flagged).
    double extra = 0;
    int64_t count = 0;
    for (int64_t k = st.warmup_steps; k < steps; ++k) {
      if (IsBoundary(k, epochs)) {
        extra += x[static_cast<size_t>(k)] - st.step_s;
        ++count;
      }
    }
    st.boundary_measured = count > 0;
    st.boundary_extra_s = std::max(0.0, count > 0 ? extra / count : x[0] - st.step_s);
  }
  st.detail = fmt::format(
      "{} after {} of {} simulated steps (windows of ~{} {}; drift {:.3f}% vs tolerance {:.3f}%, standard error "
      "{:.3f}% vs {:.3f}%); steady step {:.6g} s",
      st.steady ? "steady" : "NOT steady", st.warmup_steps, steps, st.window_steps,
      st.periodic ? "steps of whole epochs" : "steps", 100 * st.drift, 100 * tolerance, 100 * st.relative_se,
      100 * tolerance, st.step_s);
  return st;
}

double ExtrapolateS(const SteadyState& st, const std::vector<double>& x, const EpochGeometry& epochs,
                    int64_t total_steps) {
  if (total_steps <= static_cast<int64_t>(x.size())) {
    return std::accumulate(x.begin(), x.begin() + total_steps, 0.0);
  }
  double t = st.warmup_end_s + static_cast<double>(total_steps - st.warmup_steps) * st.step_s;
  if (!st.periodic && epochs.micro_batches_per_epoch > 0) {
    // Epoch boundaries at steps in [warmup_steps, total_steps): each adds the boundary extra.
    const int64_t micro_total = total_steps * epochs.grad_accum;
    const int64_t boundaries_total = (micro_total - 1) / epochs.micro_batches_per_epoch;  // epochs 1..
    int64_t boundaries_before = 0;
    for (int64_t e = 1; e <= boundaries_total && epochs.BoundaryStep(e) < st.warmup_steps; ++e) ++boundaries_before;
    t += static_cast<double>(boundaries_total - boundaries_before) * st.boundary_extra_s;
  }
  return t;
}

}  // namespace simreplay::plan
