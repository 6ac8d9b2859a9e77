// How the shape of the long run (sequence length, activation checkpointing, precision) moves a step
// time and an activation memory measured in another shape to the plan's (docs/planning.md, "Sequence
// length", "Activation checkpointing", "Precision"). Each rule says what it was computed from: the
// preflight's measurement, the plan file, or a labelled default.
#pragma once

#include <optional>
#include <string>

#include "plan/memory_fit.h"
#include "plan/plan_spec.h"
#include "plan/preflight_input.h"
#include "plan/sourced_value.h"

namespace simreplay::plan {

// ---- Sequence length: f(L) = a*L + b*L^2 per micro-batch (a: the linear part, b: attention) ----

// Default attention shares when neither the plan nor the preflight gives one: assumed (docs/planning.md).
inline constexpr double kDefaultAttentionShareTime = 0.3;
inline constexpr double kDefaultAttentionShareMemory = 0.3;

// The share of the quadratic part at `to_length`, given `share` at `from_length`: b/a = s / ((1 - s) L0),
// then share(L) = (b/a) L / (1 + (b/a) L). REQUIRES: lengths > 0, 0 <= share <= 1.
double AttentionShareAt(double share, double from_length, double to_length);
// f(to) / f(from) = (1 - s) r + s r^2 with r = to / from and s the share at `from_length`.
double SequenceFactor(double share_at_from, double from_length, double to_length);

struct SequenceScaling {
  double from_length = 0, to_length = 0;  // 0: no sequence length, nothing scaled
  SourcedValue share_time, share_memory;  // at from_length
  double step_factor = 1, memory_factor = 1;
  bool applies() const { return from_length > 0 && to_length > 0 && from_length != to_length; }
  std::string Describe() const;  // "x1.73 step, x1.60 activations for 4096 -> 8192 tokens (...)"
};

// The scaling from `from_length` (where the step time and activations were measured; 0 = unknown) to
// the plan's length. The shares: the plan's, else the preflight's (moved to from_length by the rule),
// else the defaults.
SequenceScaling ScaleSequence(const SequenceSpec& spec, double from_length, const PreflightInputs* preflight);

// ---- Activation checkpointing ----

// Full activation checkpointing keeps each layer's input and recomputes its forward in backward:
// about one forward pass more per step (forward ~ 1/3 of forward + backward), and most activations
// freed (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost"; Korthikanti et al. 2022,
// "Reducing Activation Recomputation in Large Transformer Models"). Assumed when not measured.
inline constexpr double kDefaultCheckpointingRecomputeFraction = 0.33;
inline constexpr double kDefaultCheckpointingMemorySavedFraction = 0.7;

struct CheckpointingCost {
  SourcedValue memory_saved_fraction;  // of the activation memory
  SourcedValue recompute_fraction;     // of the step time, added
};

// The preflight's measurement (activation bytes saved / bytes without; recompute / step without),
// else the plan file's fractions, else the defaults. The memory fraction counts the tensors autograd
// saves, the same on any device: any preflight's; the recompute is a time: a GPU preflight's only
// (`time_preflight` null otherwise).
CheckpointingCost CheckpointingCostOf(const ActivationCheckpointingSpec& spec, const PreflightInputs* memory_preflight,
                                      const PreflightInputs* time_preflight);

// The fit with the activation memory scaled by `factor` (a sequence-length rule), `why` in its breakdown.
MemoryFit WithActivationFactor(const MemoryFit& fit, double factor, const std::string& why);

// The fit of a candidate with checkpointing on: activation memory x (1 - saved fraction).
MemoryFit WithActivationCheckpointing(const MemoryFit& fit, const CheckpointingCost& cost);

// ---- Precision ----

// The preflight's step time of the plan's precision (its precision phase ran fp32 and `precision_low`
// from the same state), or nothing when it did not measure that precision.
std::optional<double> MeasuredPrecisionStepS(const PreflightInputs& preflight, const std::string& plan_precision);

}  // namespace simreplay::plan
