#include "sim/rank_folding.h"

#include <algorithm>
#include <cmath>

#include <boost/math/distributions/normal.hpp>

namespace simreplay::sim {

namespace {

// The first assumption of folding that `input` breaks, or "" when it holds them all.
std::string BrokenAssumption(const SimInput& input, const RunConfig& config) {
  const auto& s = input.scenario;
  const auto all_ones = [](const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [](double x) { return x == 1.0; });
  };
  if (!all_ones(config.rank_step_scale) || !all_ones(config.node_cpu_scale)) {
    return "stragglers: the nodes are not the same system";
  }
  if (config.shared_storage || !s.storage.tiers.empty()) return "the nodes share storage, which couples their reads";
  if (config.checkpoint.enabled() && config.checkpoint.target == scenarios::CheckpointTarget::kShared) {
    return "checkpoint saves to shared storage, which couple the nodes through the store";
  }
  if (config.nodes_share_cores) return "the nodes share one set of cores";
  if (input.record_timeline) return "a timeline is recorded (it shows every rank)";
  if (s.train.grad_accum != 1) return "gradient accumulation (a step is several draws per rank)";
  if (!input.pipeline_only) {
    if (config.sharding != scenarios::Sharding::kNone) return "fully sharded data parallelism";
    if (config.collective_fidelity != scenarios::CollectiveFidelity::kAggregated ||
        input.model.collective.cpu_s_per_bus_byte > 0) {
      return "collectives simulated per rank (per-message, or with host CPU work)";
    }
  }
  return "";
}

}  // namespace

RankFolding PlanRankFolding(const SimInput& input, const RunConfig& config, bool allowed) {
  RankFolding f{config.nodes, config.nodes, ""};
  if (config.nodes <= kRepresentativeNodes) return f;
  if (!allowed) {
    f.off_reason = "turned off (replay.rank_folding \"off\", or the full reference)";
    return f;
  }
  f.off_reason = BrokenAssumption(input, config);
  if (f.off_reason.empty()) f.simulated_nodes = kRepresentativeNodes;
  return f;
}

double MaxOfStepDraws(double mean, double cv, StepDistribution distribution, int64_t n, double u) {
  if (mean <= 0 || cv <= 0 || distribution == StepDistribution::kConstant) return mean;
  // P(max <= x) = F(x)^n, so the maximum is F^-1(u^(1/n)); its upper tail 1 - u^(1/n) is computed as
  // -expm1(log(u) / n) to keep its digits when n is large.
  const double tail = -std::expm1(std::log(std::max(u, 1e-300)) / static_cast<double>(std::max<int64_t>(n, 1)));
  const boost::math::normal standard;
  const double z = boost::math::quantile(boost::math::complement(standard, std::clamp(tail, 1e-300, 1.0 - 1e-16)));
  if (distribution == StepDistribution::kNormal) return std::max(0.0, mean * (1 + cv * z));
  const double sigma2 = std::log(1 + cv * cv);
  return std::exp(std::log(mean) - sigma2 / 2 + std::sqrt(sigma2) * z);
}

}  // namespace simreplay::sim
