// The recommendation of a plan (docs/planning.md, "Recommendation"): per reservation slot the cheapest
// candidate that finishes within it with at least the stated probability (Monte Carlo failures,
// training time at the pessimistic end of its interval, buffer included), the fastest
// candidate, and per GPU type and sharding the knee where another node buys less than the stated
// fraction of linear; with the reasoning in words.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "plan/plan_spec.h"

namespace simreplay::plan {

struct CandidateRow;

nlohmann::json Recommend(const PlanSpec& spec, const std::vector<CandidateRow>& rows, bool provisional);

// Marginal return of going from `a` to `b` nodes (b > a) as a fraction of linear:
//   ((thr_b / thr_a) - 1) / ((gpus_b / gpus_a) - 1).
double MarginalFractionOfLinear(double throughput_a, int gpus_a, double throughput_b, int gpus_b);

}  // namespace simreplay::plan
