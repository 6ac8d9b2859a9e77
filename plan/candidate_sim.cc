#include "plan/candidate_sim.h"

#include <algorithm>

#include "sim/metrics.h"
#include "sim/simulation.h"

namespace simreplay::plan {

namespace {

constexpr const char* kCandidateRunSchema = "simreplay.plan-candidate/3";

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

namespace {

// The candidate's scenario document for `steps` optimizer steps, without saves (a scenario's own
// checkpoint section is the plan's to replace: the window below).
nlohmann::json CandidateJson(const CandidateSimSetup& setup, int64_t steps) {
  nlohmann::json j = setup.scenario_json;
  j.erase("checkpoint");
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
  return j;
}

// The captured model's collective (measured on the capture's own GPUs) does not apply to this cluster.
void DropCapturedCollective(sim::PreparedPoint* point) {
  auto& collective = point->input.model.collective;
  collective.gradient_bytes = 0;
  collective.time_per_step_s = 0;
}

}  // namespace

Result<scenarios::Scenario> CandidateScenario(const CandidateSimSetup& setup, int64_t steps) {
  return scenarios::ParseScenario(CandidateJson(setup, steps), setup.scenario_path,
                                  scenarios::DirectoryOf(setup.scenario_path));
}

Result<scenarios::Scenario> CheckpointWindowScenario(const CandidateSimSetup& setup) {
  const CandidateCheckpoint& c = setup.checkpoint;
  nlohmann::json j = CandidateJson(setup, kCheckpointWindowSaves * c.every_steps);
  j["checkpoint"] = {{"every_steps", c.every_steps}, {"bytes", c.bytes},     {"mode", c.mode},
                     {"writers", c.writers},         {"target", c.target}};
  if (c.mode == "async") j["checkpoint"]["snapshot_bytes_per_s"] = c.snapshot_bytes_per_s;
  return scenarios::ParseScenario(j, setup.scenario_path, scenarios::DirectoryOf(setup.scenario_path));
}

Result<sim::PreparedPoint> PrepareCheckpointWindow(const CandidateSimSetup& setup, sim::CostCache* cache) {
  auto scenario = CheckpointWindowScenario(setup);
  if (!scenario.ok()) return scenario.status();
  auto point = sim::PreparePoint(*scenario, cache);
  if (!point.ok()) return point.status();
  DropCapturedCollective(&*point);
  // A local save writes the node disk (sim/checkpoint.h); its bandwidth is the plan's checkpoint write
  // bandwidth here (model-mode storage reads, where a scenario uses them, read that disk at it too).
  if (setup.checkpoint.target == "local") {
    point->input.model.storage.bandwidth_bytes_per_s = setup.checkpoint.local_write_bytes_per_s;
  }
  return point;
}

namespace {

// A forked run's JSON output, decoded by `from_json`; errors name `what`.
template <typename T>
Result<T> ParseChildOutput(const Result<std::string>& output, const char* what,
                           Result<T> (*from_json)(const nlohmann::json&)) {
  if (!output.ok()) return output.status();
  auto j = nlohmann::json::parse(*output, nullptr, false);
  if (j.is_discarded()) return Status::Internal(std::string(what) + ": output is not JSON");
  auto run = from_json(j);
  if (!run.ok()) return Status::Internal(std::string(what) + ": " + run.status().message());
  return run;
}

Result<CandidateCheckpointRun> CheckpointRunFromJson(const nlohmann::json& c) {
  CandidateCheckpointRun run;
  if (c.is_null()) return run;
  for (const char* key : {"saves", "stall_per_save_s", "write_s_per_save", "bytes_written"}) {
    if (!c.is_object() || !c.contains(key) || !c[key].is_number() || !(c[key].get<double>() >= 0)) {
      return Status::Corruption(std::string("checkpoint: expected null or {saves, stall_per_save_s, write_s_per_save, "
                                            "bytes_written} (numbers >= 0), found ") +
                                c.dump().substr(0, 200));
    }
  }
  run.simulated = true;
  run.saves = c["saves"].get<int64_t>();
  run.stall_per_save_s = c["stall_per_save_s"].get<double>();
  run.write_s_per_save = c["write_s_per_save"].get<double>();
  run.bytes_written = c["bytes_written"].get<double>();
  return run;
}

nlohmann::json CheckpointRunJson(const CandidateCheckpointRun& run) {
  if (!run.simulated) return nullptr;
  return {{"saves", run.saves},
          {"stall_per_save_s", run.stall_per_save_s},
          {"write_s_per_save", run.write_s_per_save},
          {"bytes_written", run.bytes_written}};
}

}  // namespace

sim::IsolatedJob MakeCheckpointWindowJob(const sim::PreparedPoint& window) {
  return [&window]() -> Result<std::string> {
    auto stats = sim::RunSimulation(window.input);
    if (!stats.ok()) return stats.status();
    const sim::CheckpointStats& c = stats->checkpoint;
    if (c.saves <= 0) return Status::Internal("checkpoint window: no save ran");
    CandidateCheckpointRun run;
    run.simulated = true;
    run.saves = c.saves;
    run.stall_per_save_s = c.stall_s / static_cast<double>(c.saves);
    run.write_s_per_save = c.write_s / static_cast<double>(c.saves);
    run.bytes_written = c.bytes_written;
    return CheckpointRunJson(run).dump();
  };
}


Result<CandidateCheckpointRun> ParseCheckpointWindowRun(const Result<std::string>& output) {
  return ParseChildOutput(output, "checkpoint window", CheckpointRunFromJson);
}

Result<sim::PreparedPoint> PrepareCandidate(const CandidateSimSetup& setup, int64_t steps, sim::CostCache* cache) {
  auto scenario = CandidateScenario(setup, steps);
  if (!scenario.ok()) return scenario.status();
  auto point = sim::PreparePoint(*scenario, cache);
  if (!point.ok()) return point.status();
  DropCapturedCollective(&*point);
  return point;
}

sim::IsolatedJob MakeCandidateJob(const sim::PreparedPoint& point) {
  return [&point]() -> Result<std::string> {
    auto stats = sim::RunSimulation(point.input);
    if (!stats.ok()) return stats.status();
    // Every rank records each optimizer step once; no rank can finish step k+1 before every rank has
    // finished step k (the step's collective needs all of them), so the record holds steps in groups of
    // `ranks`, and a step lasts its group's longest interval. A folded cluster records its simulated
    // ranks' steps only (sim/rank_folding.h): the groups are theirs.
    const auto ranks = stats->ranks.empty() ? static_cast<size_t>(point.input.scenario.cluster.Ranks())
                                            : stats->ranks.size();
    CandidateRun run;
    for (size_t i = 0; i + ranks <= stats->step_s.size(); i += ranks) {
      run.interval_s.push_back(*std::max_element(stats->step_s.begin() + static_cast<std::ptrdiff_t>(i),
                                                 stats->step_s.begin() + static_cast<std::ptrdiff_t>(i + ranks)));
    }
    run.collective_s = stats->collective_s;
    run.exposed_comm_s = stats->exposed_comm_s;
    const sim::Bottleneck bottleneck = sim::FindBottleneck(point.input, *stats);
    run.bottleneck_stage = bottleneck.stage;
    run.bottleneck_evidence = bottleneck.evidence;
    return CandidateRunJson(run).dump();
  };
}

Result<CandidateRun> ParseCandidateRun(const Result<std::string>& output) {
  return ParseChildOutput(output, "candidate simulation", CandidateRunFromJson);
}

nlohmann::json CandidateRunJson(const CandidateRun& run) {
  // The point store keeps a result's figures under "metrics" (scenarios/point_store.h).
  return {{"kind", kCandidateRunSchema},
          {"interval_s", run.interval_s},
          {"metrics",
           {{"collective_s", run.collective_s},
            {"exposed_comm_s", run.exposed_comm_s},
            {"bottleneck", {{"stage", run.bottleneck_stage}, {"evidence", run.bottleneck_evidence}}},
            {"checkpoint", CheckpointRunJson(run.checkpoint)}}}};
}

Result<CandidateRun> CandidateRunFromJson(const nlohmann::json& j) {
  auto number = [](const nlohmann::json& o, const char* key) {
    return o.contains(key) && o[key].is_number() && o[key].get<double>() >= 0;
  };
  auto text = [](const nlohmann::json& o, const char* key) { return o.contains(key) && o[key].is_string(); };
  if (!j.is_object() || j.value("kind", "") != kCandidateRunSchema || !j.contains("interval_s") ||
      !j["interval_s"].is_array() || !j.contains("metrics") || !j["metrics"].is_object()) {
    return Status::Corruption(std::string("expected a plan candidate (kind ") + kCandidateRunSchema +
                              ": interval_s, metrics), found another kind of point");
  }
  const nlohmann::json& m = j["metrics"];
  if (!number(m, "collective_s") || !number(m, "exposed_comm_s") || !m.contains("bottleneck") ||
      !m["bottleneck"].is_object() || !text(m["bottleneck"], "stage") || !text(m["bottleneck"], "evidence")) {
    return Status::Corruption(
        "metrics: expected collective_s and exposed_comm_s (numbers >= 0) and bottleneck {stage, evidence}, found " +
        m.dump().substr(0, 200));
  }
  CandidateRun run;
  for (const auto& x : j["interval_s"]) {
    if (!x.is_number() || !(x.get<double>() >= 0)) {
      return Status::Corruption("interval_s: expected non-negative numbers, found " + x.dump());
    }
    run.interval_s.push_back(x.get<double>());
  }
  if (run.interval_s.empty()) return Status::Corruption("interval_s: expected at least one step, found none");
  run.collective_s = m["collective_s"].get<double>();
  run.exposed_comm_s = m["exposed_comm_s"].get<double>();
  run.bottleneck_stage = m["bottleneck"]["stage"].get<std::string>();
  run.bottleneck_evidence = m["bottleneck"]["evidence"].get<std::string>();
  if (!m.contains("checkpoint")) return Status::Corruption("metrics: expected checkpoint (null or an object), found none");
  auto checkpoint = CheckpointRunFromJson(m["checkpoint"]);
  if (!checkpoint.ok()) return checkpoint.status();
  run.checkpoint = *checkpoint;
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
