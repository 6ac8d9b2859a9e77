// A diagnosis: what the trace shows (observed) beside what the calibrated model predicts each relief
// would buy (hypotheses), and the verdict that follows from the hypotheses. Written as diagnosis.json
// (schema simreplay.diagnosis/1, docs/advice.md), report.html and a terminal summary.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "advise/causal_profile.h"
#include "advise/observations.h"

namespace simreplay::advise {

inline constexpr const char* kDiagnosisSchema = "simreplay.diagnosis/1";

// One recommended change: a knob relief that the simulator predicts to buy >= kMinRecommendedGain.
struct Recommendation {
  std::string name, change;
  double gain = 0, gain_low = 0, gain_high = 0;
};

struct Diagnosis {
  std::string scenario_path;  // the scenario, or in the trace-first form without a model the first trace
  Observations observed;
  bool has_hypotheses = true;  // false: observed only (no model given); `profile` is empty
  CausalProfile profile;
  std::string verdict;  // one line, from the profile
  std::vector<Recommendation> recommendations;  // largest gain first
};

// The verdict and recommendations of a profile. Never recommends a change that buys less than
// kMinRecommendedGain, and names a non-knob critical resource as hardware or hypothesis.
Diagnosis MakeDiagnosis(std::string scenario_path, Observations observed, CausalProfile profile);

// The observed half alone (`simreplay diagnose TRACE...` without --model): no hypotheses, no verdict,
// and the output says that the hypotheses need a model.
Diagnosis MakeObservedDiagnosis(std::string source, Observations observed);

inline constexpr const char* kHypothesesNeedAModel =
    "not produced: the hypotheses (simulated reliefs) need a model: simreplay diagnose TRACE... --model M, or "
    "simreplay diagnose SCENARIO";

// The verdict line alone (simulate and what-if print it beside their metrics).
std::string Verdict(const CausalProfile& profile);

nlohmann::json DiagnosisJson(const Diagnosis& d);
std::string DiagnosisText(const Diagnosis& d);
std::string DiagnosisHtml(const Diagnosis& d);

}  // namespace simreplay::advise
