#include "plan/interval_widening.h"

#include <algorithm>

namespace simreplay::plan {

Widening WideningOf(ExtrapolationKind kind) {
  switch (kind) {
    case ExtrapolationKind::kScenarioParameter:
      return {0.02, 0.05};
    case ExtrapolationKind::kStepTimeAssumed:
      return {0.20, 0.25};
    case ExtrapolationKind::kNotSteady:
      return {0.05, 0.05};
    case ExtrapolationKind::kBeyondValidatedNodes:
      return {0.0, 0.05};
  }
  return {};
}

IntervalMultipliers WidenBand(const models::ErrorBand& band, const std::vector<Extrapolation>& extrapolations) {
  IntervalMultipliers m{1 + band.error_low, 1 + band.error_high};
  int parameters = 0;
  for (const auto& e : extrapolations) {
    if (e.kind == ExtrapolationKind::kScenarioParameter && ++parameters > kMaxWideningParameters) continue;
    const Widening w = WideningOf(e.kind);
    m.low -= w.low;
    m.high += w.high;
  }
  m.low = std::max(0.1, m.low);
  return m;
}

const char* ExtrapolationKindName(ExtrapolationKind kind) {
  switch (kind) {
    case ExtrapolationKind::kScenarioParameter:
      return "scenario_parameter";
    case ExtrapolationKind::kStepTimeAssumed:
      return "step_time_assumed";
    case ExtrapolationKind::kNotSteady:
      return "not_steady";
    case ExtrapolationKind::kBeyondValidatedNodes:
      return "beyond_validated_nodes";
  }
  return "?";
}

}  // namespace simreplay::plan
