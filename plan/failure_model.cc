#include "plan/failure_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace simreplay::plan {

namespace {

constexpr const char* kMeta = "Kokolis et al., HPCA 2025 (arXiv 2410.21680, Meta RSC-1)";

double RatePerH(const SourcedValue& mtbf_h, double count) {
  return std::isfinite(mtbf_h.value) ? count / mtbf_h.value : 0;
}

double ComponentsPerH(const FailureModelSpec& spec, double gpus, double nodes) {
  return RatePerH(spec.gpu_mtbf_h, gpus) + RatePerH(spec.node_mtbf_h, nodes) + RatePerH(spec.network_mtbf_h, nodes);
}

}  // namespace

double JobFailureRate::mtbf_s() const {
  return per_h > 0 ? 3600.0 / per_h : std::numeric_limits<double>::infinity();
}

FailureModelSpec DefaultFailureModel() {
  FailureModelSpec s;
  s.gpu_mtbf_h = Assumed(kDefaultGpuMtbfH,
                         fmt::format("{}: 6.50 failures per 1,000 node-days = 29,538 GPU-hours per failure, 60% "
                                     "of them GPUs (Llama 3 report, arXiv 2407.21783, Table 5: GPU issues 58.7% of 419 "
                                     "unexpected interruptions)",
                                     kMeta));
  s.node_mtbf_h = Assumed(kDefaultNodeMtbfH,
                          fmt::format("{}: 3,692 node-hours per failure, 20% assumed host hardware", kMeta));
  s.network_mtbf_h = Assumed(kDefaultNetworkMtbfH,
                             fmt::format("{}: 3,692 node-hours per failure, 20% assumed network and other", kMeta));
  s.floor.job_mttf_h = Assumed(kDefaultFloorJobMttfH, fmt::format("{}: measured job MTTF 7.9 h at 1,024 GPUs", kMeta));
  s.floor.reference_gpus = Assumed(kDefaultFloorReferenceGpus, fmt::format("{}: 1,024-GPU jobs", kMeta));
  s.floor.reference_gpus_per_node = Assumed(kDefaultFloorReferenceGpusPerNode,
                                            fmt::format("{}: nodes of 8 A100 GPUs", kMeta));
  s.floor.exponent = Assumed(kDefaultFloorExponent,
                             "rule: below 0.53, which keeps Meta's projected 1.8 h at 16,384 GPUs the component "
                             "model's (docs/planning.md)");
  return s;
}

JobFailureRate ComputeJobFailureRate(const FailureModelSpec& spec, int gpus, int nodes) {
  JobFailureRate r;
  r.gpu_per_h = RatePerH(spec.gpu_mtbf_h, gpus);
  r.node_per_h = RatePerH(spec.node_mtbf_h, nodes);
  r.network_per_h = RatePerH(spec.network_mtbf_h, nodes);
  r.components_per_h = r.gpu_per_h + r.node_per_h + r.network_per_h;
  if (spec.floor.enabled) {
    r.floor_per_h = std::pow(gpus / spec.floor.reference_gpus.value, spec.floor.exponent.value) /
                    spec.floor.job_mttf_h.value;
  }
  r.floor_governs = r.floor_per_h > r.components_per_h;
  r.per_h = std::max(r.components_per_h, r.floor_per_h);
  return r;
}

namespace {

// The components' job MTTF at the floor's reference job (its GPUs in its nodes), when it is shorter than
// the floor's all-cause MTTF there; nothing when they agree or the floor is off.
std::optional<double> ComponentsBelowFloorMttfH(const FailureModelSpec& spec) {
  if (!spec.floor.enabled) return std::nullopt;
  const double gpus = spec.floor.reference_gpus.value;
  const double nodes = std::ceil(gpus / spec.floor.reference_gpus_per_node.value);
  const double components_per_h = ComponentsPerH(spec, gpus, nodes);
  const double components_mttf_h = components_per_h > 0 ? 1 / components_per_h : std::numeric_limits<double>::infinity();
  if (components_mttf_h >= spec.floor.job_mttf_h.value) return std::nullopt;
  return components_mttf_h;
}

bool AnyComponentRateGiven(const FailureModelSpec& spec) {
  for (const SourcedValue* v : {&spec.gpu_mtbf_h, &spec.node_mtbf_h, &spec.network_mtbf_h}) {
    if (v->status != "assumed") return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> FloorContradictedByGivenRates(const FailureModelSpec& spec) {
  if (spec.floor.job_mttf_h.status != "assumed" || !AnyComponentRateGiven(spec)) return std::nullopt;
  const std::optional<double> components_mttf_h = ComponentsBelowFloorMttfH(spec);
  if (!components_mttf_h) return std::nullopt;
  return fmt::format(
      "your component failure rates fail a {:g}-GPU job every {:.3g} h, more often than the assumed small-job floor's "
      "all-cause {:g} h ({}): your rates are used and govern wherever they are the higher "
      "(failure_rate_per_h.governs); the assumed floor is contradicted by them",
      spec.floor.reference_gpus.value, *components_mttf_h, spec.floor.job_mttf_h.value, spec.floor.job_mttf_h.source);
}

std::optional<std::string> FindFailureModelContradiction(const FailureModelSpec& spec) {
  const std::optional<double> below = ComponentsBelowFloorMttfH(spec);
  if (!below || FloorContradictedByGivenRates(spec)) return std::nullopt;
  const double gpus = spec.floor.reference_gpus.value;
  const double nodes = std::ceil(gpus / spec.floor.reference_gpus_per_node.value);
  const double components_mttf_h = *below;
  return fmt::format(
      "the small-job floor (an all-cause job MTTF of {:g} h at {:g} GPUs in {:g} nodes, {}) and the component rates "
      "(which alone fail that job every {:.3g} h, more often than every cause together) cannot both hold: raise the "
      "component MTBFs, lower 'small_job_floor.job_mttf_h', or set \"small_job_floor\": \"none\"",
      spec.floor.job_mttf_h.value, gpus, nodes, spec.floor.job_mttf_h.status, components_mttf_h);
}

}  // namespace simreplay::plan
