#include "calibrate/stages.h"

#include "common/quantile.h"

namespace simreplay::calibrate {

const std::vector<CalibrationStage>& CalibrationStages() {
  // Order matters: costs divides by the cpu stage's scales; formats reports what storage and gpu fitted.
  static const std::vector<CalibrationStage> stages = {
      {"cpu", FitCpu},   {"costs", FitCosts}, {"media", DescribeMediaShapes}, {"storage", FitStorage},
      {"memory", FitMemory}, {"pcie", FitPcie}, {"gpu", FitGpu}, {"collectives", FitCollectives},
      {"formats", DescribeFormatsAndRange},
  };
  return stages;
}

void SetProvenance(models::ModelParams* model, const std::string& name, bool assumed, const std::string& source) {
  model->info[name] = models::ParamInfo{assumed, source};
}

nlohmann::json QuantileSummary(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  double mean = 0;
  for (double x : v) mean += x;
  return {{"count", v.size()},
          {"mean", mean / static_cast<double>(v.size())},
          {"p50", QuantileNearestRank(v, 0.5)},
          {"p90", QuantileNearestRank(v, 0.9)},
          {"min", QuantileNearestRank(v, 0)},
          {"max", QuantileNearestRank(v, 1)}};
}

double MeanOf(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

}  // namespace simreplay::calibrate
