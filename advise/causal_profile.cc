#include "advise/causal_profile.h"

#include <algorithm>
#include <numeric>

#include "common/quantile.h"
#include "sim/isolated_run.h"

namespace simreplay::advise {

PointMetrics MetricsOf(const sim::PreparedPoint& point, const sim::PointRuns& runs) {
  const auto& full = runs.full;
  const auto& pipe = runs.pipeline_only;
  const int ranks = point.input.scenario.cluster.nodes * point.input.scenario.hardware.gpus;
  const double T = std::max(full.makespan_s, 1e-12);
  PointMetrics m;
  m.train_samples_per_s = static_cast<double>(full.samples_consumed) / T;
  m.pipeline_samples_per_s = static_cast<double>(pipe.samples_consumed) / std::max(pipe.makespan_s, 1e-12);
  m.gpu_idle_fraction = std::clamp(1.0 - full.gpu_busy_s / (ranks * T), 0.0, 1.0);
  if (!full.step_s.empty()) {
    const double steps = static_cast<double>(full.step_s.size());
    m.step_mean_s = std::accumulate(full.step_s.begin(), full.step_s.end(), 0.0) / steps;
    m.step_p95_s = QuantileLinear(full.step_s, 0.95);
    m.h2d_s_per_step = full.h2d_s / steps;
    m.collective_s_per_step = full.collective_s / steps;
    m.gpu_busy_s_per_step = full.gpu_busy_s / steps;
  }
  if (!full.wait_s.empty()) {
    m.data_wait_mean_s =
        std::accumulate(full.wait_s.begin(), full.wait_s.end(), 0.0) / static_cast<double>(full.wait_s.size());
  }
  m.time_to_first_batch_s = full.time_to_first_batch_s;
  m.peak_host_memory_bytes = full.peak_host_memory_bytes;
  return m;
}

void GainInterval(const models::ErrorBand& band, double base, double relieved, double* low, double* high) {
  const double b = std::max(base, 1e-12);
  *low = models::BandLow(band, relieved) / b - 1;
  *high = models::BandHigh(band, relieved) / b - 1;
}

std::string CriticalResource(const CausalProfile& profile) {
  return profile.critical < 0 ? "balanced" : profile.reliefs[static_cast<size_t>(profile.critical)].relief.resource;
}

Result<CausalProfile> ProfileScenario(const scenarios::Scenario& scenario, const ProfileOptions& options,
                                      sim::CostCache* cache) {
  auto base = sim::PreparePoint(scenario, cache);
  if (!base.ok()) return base.status();
  CausalProfile profile;
  profile.factor = options.factor;
  profile.band = options.band;
  profile.accelerator = base->accelerator;
  profile.accelerator_note = base->accelerator_note;
  profile.base_warnings = base->warnings;
  profile.trace_path = base->trace_path;

  // Every point prepared in the parent (children inherit the loaded costs), then all simulated at once.
  const std::vector<Relief> reliefs = ApplicableReliefs(*base, options.factor);
  std::vector<sim::PreparedPoint> points{*base};
  for (const Relief& relief : reliefs) {
    auto relieved = ApplyRelief(*base, relief, options.factor, cache);
    if (!relieved.ok()) return relieved.status();
    points.push_back(std::move(*relieved));
  }
  std::vector<sim::IsolatedJob> jobs;
  for (const auto& p : points) {
    for (auto& job : sim::MakeJobs(p, "")) jobs.push_back(std::move(job));
  }
  auto on_done = [&](size_t done, size_t total) {
    if (options.on_progress) options.on_progress(done, total);
  };
  auto results = sim::RunIsolated(jobs, std::max(1, options.jobs), on_done);
  profile.simulations = static_cast<int>(jobs.size());

  std::vector<PointMetrics> metrics;
  for (size_t i = 0; i < points.size(); ++i) {
    auto runs = sim::DecodePointRuns(results[2 * i], results[2 * i + 1]);
    if (!runs.ok()) {
      const std::string what = i == 0 ? "the scenario as given" : "relief " + reliefs[i - 1].name;
      return runs.status().WithPrefix(what + ": ");
    }
    metrics.push_back(MetricsOf(points[i], *runs));
  }
  profile.base = metrics[0];
  double best_gain = -1, best_knob_gain = -1;
  for (size_t k = 0; k < reliefs.size(); ++k) {
    ReliefOutcome o;
    o.relief = reliefs[k];
    o.metrics = metrics[k + 1];
    const double b = std::max(profile.base.train_samples_per_s, 1e-12);
    o.gain = o.metrics.train_samples_per_s / b - 1;
    GainInterval(options.band, profile.base.train_samples_per_s, o.metrics.train_samples_per_s, &o.gain_low,
                 &o.gain_high);
    o.gpu_idle_change = o.metrics.gpu_idle_fraction - profile.base.gpu_idle_fraction;
    // Warnings the relieved point has and the base does not: what the relief extrapolates.
    for (const auto& w : points[k + 1].warnings) {
      if (std::find(base->warnings.begin(), base->warnings.end(), w) == base->warnings.end()) o.warnings.push_back(w);
    }
    // Ties go to the earlier relief in the fixed order (deterministic).
    if (o.gain >= kMinRecommendedGain && o.gain > best_gain) {
      best_gain = o.gain;
      profile.critical = static_cast<int>(k);
    }
    if (o.relief.action == ReliefAction::kKnob && o.gain >= kMinRecommendedGain && o.gain > best_knob_gain) {
      best_knob_gain = o.gain;
      profile.best_knob = static_cast<int>(k);
    }
    profile.reliefs.push_back(std::move(o));
  }
  return profile;
}

}  // namespace simreplay::advise
