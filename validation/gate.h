// One home for the validation gates: a statistic of absolute prediction errors judged against its
// limit. `simreplay validate` (validation/analysis.cc) and the multi-node suite
// (validation/suite/multinode.py, through `simreplay stats`) both judge their thresholds here.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace simreplay::validation {

enum class GateStatistic { kMedian, kMax };

struct GateCheck {
  std::string name;
  GateStatistic statistic = GateStatistic::kMedian;
  double value = 0;  // the statistic of |errors|; meaningless when n == 0
  double limit = 0;
  size_t n = 0;      // errors judged
  bool pass = false;  // value <= limit; false when there is no error to judge (nothing measured never passes)
  nlohmann::json ToJson() const;  // {name, statistic, value (null when n == 0), limit, n, pass}
};

// The median or the largest of |errors| against `limit`.
GateCheck JudgeLimit(std::string name, GateStatistic statistic, const std::vector<double>& errors, double limit);

const char* GateStatisticName(GateStatistic statistic);
// "median" or "max"; false for anything else.
bool ParseGateStatistic(const std::string& text, GateStatistic* out);

}  // namespace simreplay::validation
