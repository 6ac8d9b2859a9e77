#include "validation/gate.h"

#include <algorithm>
#include <cmath>

#include "validation/statistics.h"

namespace simreplay::validation {

GateCheck JudgeLimit(std::string name, GateStatistic statistic, const std::vector<double>& errors, double limit) {
  GateCheck check;
  check.name = std::move(name);
  check.statistic = statistic;
  check.limit = limit;
  check.n = errors.size();
  if (errors.empty()) return check;
  std::vector<double> abs_errors;
  abs_errors.reserve(errors.size());
  for (double e : errors) abs_errors.push_back(std::fabs(e));
  check.value = statistic == GateStatistic::kMedian ? Median(abs_errors)
                                                    : *std::max_element(abs_errors.begin(), abs_errors.end());
  check.pass = check.value <= limit;
  return check;
}

nlohmann::json GateCheck::ToJson() const {
  return {{"name", name},
          {"statistic", GateStatisticName(statistic)},
          {"value", n == 0 ? nlohmann::json(nullptr) : nlohmann::json(value)},
          {"limit", limit},
          {"n", n},
          {"pass", pass}};
}

const char* GateStatisticName(GateStatistic statistic) {
  return statistic == GateStatistic::kMedian ? "median" : "max";
}

bool ParseGateStatistic(const std::string& text, GateStatistic* out) {
  if (text == "median") {
    *out = GateStatistic::kMedian;
  } else if (text == "max") {
    *out = GateStatistic::kMax;
  } else {
    return false;
  }
  return true;
}

}  // namespace simreplay::validation
