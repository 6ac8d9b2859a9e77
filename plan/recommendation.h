// The recommendation of a plan (docs/planning.md, "Recommendation"): per reservation slot the cheapest
// candidate that finishes within it with at least the stated probability (Monte Carlo failures,
// training time at the pessimistic end of its interval, buffer included), the fastest
// candidate, and per GPU type and sharding the knee (models/scaling_knee.h, the definition what-if
// uses too); with the reasoning in words.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "plan/plan_spec.h"

namespace simreplay::plan {

struct CandidateRow;

nlohmann::json Recommend(const PlanSpec& spec, const std::vector<CandidateRow>& rows, bool provisional);

}  // namespace simreplay::plan
