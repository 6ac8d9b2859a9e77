// What a candidate's prediction extrapolates beyond what was validated, as a typed list, and the
// interval it widens the validated error band to (docs/planning.md, "Uncertainty"). Intervals are
// widened from this list only, never from the wording of a warning.
#pragma once

#include <string>
#include <vector>

#include "models/error_band.h"

namespace simreplay::plan {

enum class ExtrapolationKind {
  kScenarioParameter,      // a loader or format parameter outside the traces' measured range (sim::PreparedPoint)
  kStepTimeAssumed,        // the GPU step time scaled or emulated, not measured on that GPU
  kNotSteady,              // the simulated run never reached a steady state before extrapolating
  kBeyondValidatedNodes,   // more nodes than the multi-node validation gates
};

struct Extrapolation {
  ExtrapolationKind kind;
  std::string what;  // the parameter or the figure, for the report
};

// Widening per extrapolation, added to the band's relative errors (assumed: docs/planning.md).
struct Widening {
  double low = 0, high = 0;  // subtracted from 1 + error_low, added to 1 + error_high
};
Widening WideningOf(ExtrapolationKind kind);
// At most this many scenario parameters widen (each is +5% / -2%): past it the interval is already
// wider than the parameters' combined effect on the validated cases.
inline constexpr int kMaxWideningParameters = 5;

struct IntervalMultipliers {
  double low = 1, high = 1;  // on training time
};
// The band's multipliers, each extrapolation's widening added; the low end never below 0.1.
IntervalMultipliers WidenBand(const models::ErrorBand& band, const std::vector<Extrapolation>& extrapolations);

const char* ExtrapolationKindName(ExtrapolationKind kind);

}  // namespace simreplay::plan
