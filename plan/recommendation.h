// The recommendation of a plan (docs/planning.md, "Recommendation"): per reservation slot the cheapest
// candidate that finishes within it with at least the stated probability (Monte Carlo failures,
// training time at the pessimistic end of its interval, buffer included), the fastest
// candidate, and per GPU type and sharding the knee (models/scaling_knee.h, the definition what-if
// uses too). The decision comes first as a small table, each knee as one sentence; a step's growth
// part under 1 ms or 1% of the step is the simulation's noise and shown as zero.
//
// What limits a candidate is read from its own simulation, the way the causal verdict of `diagnose`
// is (docs/advice.md): the simulated optimizer step splits into GPU compute, exposed communication and
// the rest (data loading and host work); a part is named limiting only when removing it entirely
// would buy at least models::kMinActionableGain (5%), so no plan output names a resource whose relief
// the simulator predicts to buy less. The utilisation signal is not used.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/plan_spec.h"

namespace simreplay::plan {

struct CandidateRow;

// The recommendation document (plan.json "recommendation": slots, fastest, knees, candidates, notes,
// text; docs/plan-format.md).
nlohmann::json Recommend(const PlanSpec& spec, const std::vector<CandidateRow>& rows, bool provisional);
// The decision as a table, header first: slot, pick, GPUs, expected days (interval), P(finish), cost,
// the faster alternative that also fits the slot. The terminal and the report show it first.
std::vector<std::vector<std::string>> DecisionRows(const nlohmann::json& recommendation);
// The answer a person reads: the decision table, each knee in one sentence, then the notes.
std::string RecommendationText(const nlohmann::json& recommendation, double probability);

// The split of one candidate's simulated optimizer step and the part that limits it.
struct StepAttribution {
  double step_s = 0;           // simulated: samples per step / throughput
  double compute_s = 0;        // GPU compute of the step (input)
  double exposed_comm_s = 0;   // simulated communication the step waits for
  double data_host_s = 0;      // the rest: data loading, host work, stragglers
  std::string limiting;        // "network", "data_pipeline" or "none" (no part could buy 5%)
  double at_most_gain = 0;     // removing the limiting part entirely: step / (step - part) - 1
};
StepAttribution AttributeStep(const CandidateRow& row);

}  // namespace simreplay::plan
