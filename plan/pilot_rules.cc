#include "plan/pilot_rules.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "common/check.h"

namespace simreplay::plan {

double AttentionShareAt(double share, double from_length, double to_length) {
  SIMREPLAY_CHECK(from_length > 0 && to_length > 0 && share >= 0 && share <= 1);
  if (share >= 1) return 1;
  const double b_over_a = share / ((1 - share) * from_length);
  const double x = b_over_a * to_length;
  return x / (1 + x);
}

double SequenceFactor(double share_at_from, double from_length, double to_length) {
  const double r = to_length / from_length;
  return (1 - share_at_from) * r + share_at_from * r * r;
}

std::string SequenceScaling::Describe() const {
  if (!applies()) return "no sequence-length scaling";
  return fmt::format(
      "x{:.3f} step time, x{:.3f} activation memory for {:g} -> {:g} tokens: f(L) = a*L + b*L^2 with attention "
      "share {:.3g} of the step ({}) and {:.3g} of the activations ({}) at {:g} tokens",
      step_factor, memory_factor, from_length, to_length, share_time.value, share_time.status, share_memory.value,
      share_memory.status, from_length);
}

namespace {

// One attention share at `from_length`: the plan's (at its measured length), else the preflight's,
// else the default.
SourcedValue ShareFor(double plan_share, double plan_at_length, std::optional<double> preflight_share,
                      std::optional<double> preflight_at_length, double default_share, double from_length,
                      const std::string& preflight_path, const char* what) {
  if (plan_share >= 0) {
    return {AttentionShareAt(plan_share, plan_at_length, from_length), "input",
            fmt::format("plan file: job.sequence.attention_share_{} {:g} at {:g} tokens", what, plan_share,
                        plan_at_length)};
  }
  if (preflight_share && preflight_at_length && *preflight_at_length > 0) {
    return {AttentionShareAt(*preflight_share, *preflight_at_length, from_length), "measured",
            fmt::format("preflight {}: {:.3g} at {:g} tokens, fitted through two lengths", preflight_path,
                        *preflight_share, *preflight_at_length)};
  }
  return Assumed(AttentionShareAt(default_share, from_length, from_length),
                 fmt::format("default {:g} (not measured: run the preflight with --seq-lens L1,L2)", default_share));
}

}  // namespace

SequenceScaling ScaleSequence(const SequenceSpec& spec, double from_length, const PreflightInputs* preflight) {
  SequenceScaling s;
  if (spec.length <= 0 || from_length <= 0) return s;
  s.from_length = from_length;
  s.to_length = spec.length;
  const double plan_at = spec.measured_length > 0 ? spec.measured_length : spec.length;
  const std::string pf_path = preflight != nullptr ? preflight->path : "";
  s.share_time = ShareFor(spec.attention_share_time, plan_at,
                          preflight != nullptr ? preflight->attention_share_time : std::nullopt,
                          preflight != nullptr ? preflight->attention_share_length : std::nullopt,
                          kDefaultAttentionShareTime, from_length, pf_path, "time");
  s.share_memory = ShareFor(spec.attention_share_memory, plan_at,
                            preflight != nullptr ? preflight->attention_share_memory : std::nullopt,
                            preflight != nullptr ? preflight->attention_share_length : std::nullopt,
                            kDefaultAttentionShareMemory, from_length, pf_path, "memory");
  s.step_factor = SequenceFactor(s.share_time.value, from_length, spec.length);
  s.memory_factor = SequenceFactor(s.share_memory.value, from_length, spec.length);
  return s;
}

CheckpointingCost CheckpointingCostOf(const ActivationCheckpointingSpec& spec, const PreflightInputs* memory_preflight,
                                      const PreflightInputs* time_preflight) {
  CheckpointingCost c;
  const PreflightInputs* pm = memory_preflight;
  const PreflightInputs* pt = time_preflight;
  const bool measured_memory =
      pm != nullptr && pm->ac_activation_bytes_saved && pm->ac_activation_bytes_off && *pm->ac_activation_bytes_off > 0;
  const bool measured_time =
      pt != nullptr && pt->ac_recompute_s && pt->ac_step_time_s_off && *pt->ac_step_time_s_off > 0;
  if (measured_memory) {
    const double f = std::clamp(*pm->ac_activation_bytes_saved / *pm->ac_activation_bytes_off, 0.0, 0.99);
    c.memory_saved_fraction = {f, "measured",
                               fmt::format("preflight {} ({}): {:.4g} of {:.4g} bytes saved for backward freed",
                                           pm->path, pm->device, *pm->ac_activation_bytes_saved,
                                           *pm->ac_activation_bytes_off)};
  } else if (spec.memory_saved_fraction >= 0) {
    c.memory_saved_fraction = {spec.memory_saved_fraction, "input",
                               "plan file: job.activation_checkpointing.memory_saved_fraction"};
  } else {
    c.memory_saved_fraction = Assumed(kDefaultCheckpointingMemorySavedFraction,
                                      "default: full checkpointing keeps each layer's input (Chen et al. 2016; "
                                      "Korthikanti et al. 2022); measure with the entry's set_activation_checkpointing");
  }
  if (measured_time) {
    c.recompute_fraction = {*pt->ac_recompute_s / *pt->ac_step_time_s_off, "measured",
                            fmt::format("preflight {}: +{:.4g} s recompute on a {:.4g} s step", pt->path,
                                        *pt->ac_recompute_s, *pt->ac_step_time_s_off)};
  } else if (spec.recompute_fraction >= 0) {
    c.recompute_fraction = {spec.recompute_fraction, "input",
                            "plan file: job.activation_checkpointing.recompute_fraction"};
  } else {
    c.recompute_fraction = Assumed(kDefaultCheckpointingRecomputeFraction,
                                   "default: one more forward pass per step, forward ~ 1/3 of forward + backward");
  }
  return c;
}

MemoryFit WithActivationFactor(const MemoryFit& fit, double factor, const std::string& why) {
  MemoryFit m = fit;
  const double added = fit.activation_bytes * (factor - 1);
  m.activation_bytes = fit.activation_bytes + added;
  m.total_bytes = fit.total_bytes + added;
  m.fits = m.total_bytes <= m.usable_bytes;
  m.breakdown = fmt::format("{}; activations x{:.3f} ({}): {:.1f} GB", fit.breakdown, factor, why, m.total_bytes / 1e9);
  return m;
}

MemoryFit WithActivationCheckpointing(const MemoryFit& fit, const CheckpointingCost& cost) {
  MemoryFit m = fit;
  const double freed = fit.activation_bytes * cost.memory_saved_fraction.value;
  m.activation_bytes = fit.activation_bytes - freed;
  m.total_bytes = fit.total_bytes - freed;
  m.fits = m.total_bytes <= m.usable_bytes;
  m.breakdown = fmt::format("{}; with activation checkpointing {:.1f} GB of activations freed ({:.0f}%, {}): {:.1f} GB",
                            fit.breakdown, freed / 1e9, 100 * cost.memory_saved_fraction.value,
                            cost.memory_saved_fraction.status, m.total_bytes / 1e9);
  return m;
}

std::optional<double> MeasuredPrecisionStepS(const PreflightInputs& preflight, const std::string& plan_precision) {
  if (plan_precision == "fp32") return preflight.step_time_s_fp32;
  if (!preflight.precision_low.empty() && preflight.precision_low == plan_precision) {
    return preflight.step_time_s_low_precision;
  }
  return std::nullopt;
}

}  // namespace simreplay::plan
