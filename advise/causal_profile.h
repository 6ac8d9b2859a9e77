// Causal attribution for one scenario point: the point is simulated as it is and once per relief
// (advise/relief.h), every simulation in its own forked child as what-if points are, and each relief's
// predicted gain in end-to-end throughput and GPU idle is reported with the interval of the validated
// error band (models/error_band.h). The critical resource is the one whose relief buys most. The same
// inputs give the same profile byte for byte, whatever `jobs` is.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "advise/relief.h"
#include "common/status.h"
#include "models/error_band.h"
#include "scenarios/scenario.h"
#include "sim/point_runner.h"

namespace simreplay::advise {

// A change counts as worth recommending only when the simulator predicts it to buy at least this
// share of end-to-end throughput (docs/advice.md; the one definition is models/error_band.h).
inline constexpr double kMinRecommendedGain = models::kMinActionableGain;

// The figures of one simulated point that advice compares.
struct PointMetrics {
  double train_samples_per_s = 0;
  double pipeline_samples_per_s = 0;
  double gpu_idle_fraction = 0;
  double step_mean_s = 0;
  double step_p95_s = 0;
  double data_wait_mean_s = 0;
  double time_to_first_batch_s = 0;
  double peak_host_memory_bytes = 0;
  double h2d_s_per_step = 0;         // mean per optimizer step and rank
  double collective_s_per_step = 0;  // mean per optimizer step and rank (barrier waits included)
  double gpu_busy_s_per_step = 0;    // mean per optimizer step and rank
};

PointMetrics MetricsOf(const sim::PreparedPoint& point, const sim::PointRuns& runs);

struct ReliefOutcome {
  Relief relief;
  PointMetrics metrics;
  double gain = 0;  // train throughput relieved / base - 1
  double gain_low = 0, gain_high = 0;
  double gpu_idle_change = 0;  // relieved - base (fraction)
  std::vector<std::string> warnings;  // the relieved point's own (extrapolation)
};

struct CausalProfile {
  PointMetrics base;
  std::vector<std::string> base_warnings;
  std::string accelerator, accelerator_note;
  std::string trace_path;  // the trace the profile replayed (resolved), for the observed half
  double factor = 2;
  models::ErrorBand band;
  std::vector<ReliefOutcome> reliefs;  // in ApplicableReliefs order
  int critical = -1;                   // index of the largest gain; -1 when none buys kMinRecommendedGain
  int best_knob = -1;                  // index of the largest-gain knob buying kMinRecommendedGain; -1: none
  int simulations = 0;                 // simulator runs (two per point: end to end and pipeline alone)
};

struct ProfileOptions {
  double factor = 2;  // every relief speeds its resource up by this much
  int jobs = 1;       // simulations at once
  models::ErrorBand band;
  std::function<void(size_t done, size_t total)> on_progress;
};

// The verdict's name for the critical resource: the relief's resource, "balanced" when no relief buys
// kMinRecommendedGain.
std::string CriticalResource(const CausalProfile& profile);

// The interval of a relative gain (relieved / base - 1) when the relieved prediction errs as the
// validated predictions did: base is the simulated point the gain is measured from.
void GainInterval(const models::ErrorBand& band, double base, double relieved, double* low, double* high);

// REQUIRES: options.factor > 1. Fails when the point cannot be prepared (bad model or trace: its kind
// is kept) or a simulation fails.
Result<CausalProfile> ProfileScenario(const scenarios::Scenario& scenario, const ProfileOptions& options,
                                      sim::CostCache* cache);

}  // namespace simreplay::advise
