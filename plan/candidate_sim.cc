#include "plan/candidate_sim.h"

#include <algorithm>

#include "sim/metrics.h"
#include "sim/simulation.h"

namespace simreplay::plan {

namespace {

constexpr const char* kCandidateRunSchema = "simreplay.plan-candidate/1";

// The scenario's own cluster keys (topology, stragglers) stay; the candidate sets its size and links.
nlohmann::json ClusterJson(const CandidateSimSetup& setup) {
  nlohmann::json cluster = setup.scenario_json.value("cluster", nlohmann::json::object());
  cluster["nodes"] = setup.nodes;
  cluster["gpus_per_node"] = setup.gpus_per_node;
  cluster["network"] = {{"nic_bytes_per_s", setup.network.nic_bytes_per_s},
                        {"nic_latency_s", setup.network.nic_latency_s},
                        {"nics_per_node", 1}};
  cluster["intra_node"] = {{"bytes_per_s", setup.network.intra_node_bytes_per_s},
                           {"latency_s", setup.network.intra_node_latency_s}};
  return cluster;
}

}  // namespace

double SimulatedBucketBytes(double gradient_bytes, double overlap) {
  if (overlap <= 0) return 0;  // one bucket holding every gradient
  return std::max(kDdpBucketBytes, gradient_bytes / kMaxSimulatedBuckets);
}

Result<sim::PreparedPoint> PrepareCandidate(const CandidateSimSetup& setup, int64_t steps, sim::CostCache* cache) {
  nlohmann::json j = setup.scenario_json;
  j["hardware"]["gpus"] = setup.gpus_per_node;
  j["cluster"] = ClusterJson(setup);
  const int64_t ranks = static_cast<int64_t>(setup.nodes) * setup.gpus_per_node;
  const bool communicates = ranks > 1 && setup.gradient_bytes > 0;
  // Hierarchical: reduce-scatter inside the node, ring between nodes, all-gather inside (what NCCL does
  // on NVLink + NIC clusters, and the closed form of plan/collective_estimate.h).
  j["collective"] = {{"algorithm", communicates ? "hierarchical" : "analytic"},
                     {"gradient_bytes", communicates ? setup.gradient_bytes : 0.0},
                     {"bucket_bytes", SimulatedBucketBytes(setup.gradient_bytes, setup.network.overlap)},
                     {"overlap", setup.network.overlap},
                     {"sharding", setup.fsdp ? "full" : "none"}};
  auto& train = j["train"];
  train.erase("epochs");
  train["steps"] = steps;
  train["step_time_s"] = setup.step_time_s;
  train["dataset_samples"] = setup.dataset_samples;
  auto scenario = scenarios::ParseScenario(j, setup.scenario_path, scenarios::DirectoryOf(setup.scenario_path));
  if (!scenario.ok()) return scenario.status();
  auto point = sim::PreparePoint(*scenario, cache);
  if (!point.ok()) return point.status();
  // The captured model's collective (measured on the capture's own GPUs) does not apply to this cluster.
  auto& collective = point->input.model.collective;
  collective.gradient_bytes = 0;
  collective.time_per_step_s = 0;
  return point;
}

sim::IsolatedJob MakeCandidateJob(const sim::PreparedPoint& point) {
  return [&point]() -> Result<std::string> {
    auto stats = sim::RunSimulation(point.input);
    if (!stats.ok()) return stats.status();
    // Every rank records each optimizer step once; no rank can finish step k+1 before every rank has
    // finished step k (the step's collective needs all of them), so the record holds steps in groups of
    // `ranks`, and a step lasts its group's longest interval.
    const auto ranks = static_cast<size_t>(point.input.scenario.cluster.Ranks());
    std::vector<double> intervals;
    for (size_t i = 0; i + ranks <= stats->step_s.size(); i += ranks) {
      intervals.push_back(*std::max_element(stats->step_s.begin() + static_cast<std::ptrdiff_t>(i),
                                            stats->step_s.begin() + static_cast<std::ptrdiff_t>(i + ranks)));
    }
    nlohmann::json metrics = sim::SummarizeMetrics(point.input, *stats);
    if (metrics.contains("cluster")) {  // per-rank arrays grow with the cluster; the plan reads totals
      metrics["cluster"].erase("per_rank");
      metrics["cluster"].erase("per_node");
    }
    nlohmann::json out = {{"interval_s", intervals}, {"metrics", metrics}};
    return out.dump();
  };
}

Result<CandidateRun> ParseCandidateRun(const Result<std::string>& output) {
  if (!output.ok()) return output.status();
  CandidateRun run;
  auto j = nlohmann::json::parse(*output, nullptr, false);
  if (j.is_discarded() || !j.contains("interval_s")) return Status::Internal("candidate simulation: bad output");
  run.interval_s = j["interval_s"].get<std::vector<double>>();
  run.metrics = j["metrics"];
  if (run.interval_s.empty()) return Status::Internal("candidate simulation recorded no optimizer step");
  return run;
}

nlohmann::json CandidateRunJson(const CandidateRun& run) {
  return {{"kind", kCandidateRunSchema}, {"interval_s", run.interval_s}, {"metrics", run.metrics}};
}

Result<CandidateRun> CandidateRunFromJson(const nlohmann::json& j) {
  if (!j.is_object() || j.value("kind", "") != kCandidateRunSchema || !j.contains("interval_s") ||
      !j["interval_s"].is_array() || !j.contains("metrics") || !j["metrics"].is_object()) {
    return Status::Corruption(std::string("expected a plan candidate (kind ") + kCandidateRunSchema +
                              ", interval_s, metrics), found another kind of point");
  }
  CandidateRun run;
  for (const auto& x : j["interval_s"]) {
    if (!x.is_number() || !(x.get<double>() >= 0)) {
      return Status::Corruption("interval_s: expected non-negative numbers, found " + x.dump());
    }
    run.interval_s.push_back(x.get<double>());
  }
  if (run.interval_s.empty()) return Status::Corruption("interval_s: expected at least one step, found none");
  run.metrics = j["metrics"];
  return run;
}

int64_t MicroBatchesPerEpoch(const sim::PreparedPoint& point) {
  const auto& s = point.input.scenario;
  const int64_t ranks = s.cluster.Ranks();
  const int64_t per_rank = (s.train.dataset_samples + ranks - 1) / ranks;
  const int64_t bs = s.loader.batch_size;
  return s.loader.drop_last ? per_rank / bs : (per_rank + bs - 1) / bs;
}

}  // namespace simreplay::plan
