// The outputs of `simreplay plan` (docs/plan-format.md): plan.json, plan.csv, report.html and the
// terminal table. Fixed key order and number formatting: the same plan gives byte-identical files.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "plan/planner.h"

namespace simreplay::plan {

nlohmann::json PlanJson(const PlanOutcome& outcome);
std::string PlanCsv(const PlanOutcome& outcome);
std::string PlanHtml(const PlanOutcome& outcome);
std::string PlanTable(const PlanOutcome& outcome);

}  // namespace simreplay::plan
