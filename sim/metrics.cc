#include "sim/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "common/quantile.h"
#include "models/cluster_topology.h"
#include "sim/rank_folding.h"

namespace simreplay::sim {

double Round9(double value) {
  if (!std::isfinite(value)) return 0.0;
  return std::stod(fmt::format("{:.9g}", value));
}

nlohmann::json Distribution(std::vector<double> values) {
  if (values.empty()) return {{"mean", 0.0}, {"p50", 0.0}, {"p95", 0.0}, {"p99", 0.0}, {"max", 0.0}};
  std::sort(values.begin(), values.end());
  auto percentile = [&](double p) { return SortedQuantileLinear(values, p); };
  double mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  return {{"mean", Round9(mean)},
          {"p50", Round9(percentile(0.50))},
          {"p95", Round9(percentile(0.95))},
          {"p99", Round9(percentile(0.99))},
          {"max", Round9(values.back())}};
}

nlohmann::json Distribution(const LatencySummary& summary) {
  const LatencySummary::Figures f = summary.Summarize();
  return {{"mean", Round9(f.mean)},
          {"p50", Round9(f.p50)},
          {"p95", Round9(f.p95)},
          {"p99", Round9(f.p99)},
          {"max", Round9(f.max)}};
}

namespace {

// The figures the verdict rules read, each a fraction of the run unless its name says otherwise.
struct Signals {
  int ranks = 1, nodes = 1, workers = 0, cores = 1;
  double gpu_busy = 0, cpu_util = 0, storage_busy = 0, collective = 0, h2d = 0, main_busy = 0, pin_busy = 0,
         worker_busy = 0, restart = 0, exposed_comm = 0;
  double nic_util_while_communicating = 0;  // NIC bytes / (NIC capacity x mean collective time per rank)
  double storage_link_util = 0;             // shared storage: its aggregate link over the run
  double slowest_over_fastest_gpu = 1;      // per-rank GPU busy time, slowest rank / fastest rank
  int slowest_rank = 0;
  bool storage_model = false, shared_storage = false, persistent_workers = false;
  bool network_collective = false;  // the collectives run as network flows (not the analytic estimate)
  int64_t per_rank_samples = 0, batches_per_epoch = 0;
  int batch_size = 1;
  double time_to_first_batch_s = 0, epoch_boundary_stall_s = 0;
};

std::string Pct(double f) { return fmt::format("{:.1f}%", 100 * f); }

// Sets of cpu_cores the run had: one per node, or one for all (cluster.nodes_share_cores).
int CoreSets(const SimInput& input) {
  return input.scenario.cluster.nodes_share_cores ? 1 : input.scenario.cluster.nodes;
}

Signals Measure(const SimInput& input, const SimRawStats& s) {
  Signals g;
  const double T = std::max(s.makespan_s, 1e-12);
  g.nodes = input.scenario.cluster.nodes;
  g.ranks = g.nodes * input.scenario.hardware.gpus;
  g.workers = input.scenario.loader.num_workers;
  g.cores = input.cpu_cores;
  g.gpu_busy = s.gpu_busy_s / (g.ranks * T);
  g.cpu_util = s.cpu_busy_core_s / (input.cpu_cores * CoreSets(input) * T);
  g.storage_busy = s.storage_busy_s / T;
  g.collective = s.collective_s / (g.ranks * T);
  g.h2d = s.h2d_s / (g.ranks * T);
  g.main_busy = s.main_busy_s / (g.ranks * T);
  g.pin_busy = s.pin_busy_s / (g.ranks * T);
  g.worker_busy = g.workers > 0 ? s.worker_busy_s / (s.worker_count * T) : 0.0;
  g.restart = (s.time_to_first_batch_s + s.epoch_boundary_stall_s) / T;
  g.exposed_comm = s.exposed_comm_s / (g.ranks * T);
  const auto& nic = s.link_load[static_cast<size_t>(models::LinkClass::kNic)];
  const double comm_s = s.collective_s / g.ranks;
  if (nic.capacity_bytes_per_s > 0 && comm_s > 0) {
    g.nic_util_while_communicating = nic.bytes / (nic.capacity_bytes_per_s * comm_s);
  }
  const auto& storage = s.link_load[static_cast<size_t>(models::LinkClass::kStorage)];
  // The storage link is only read from: its capacity counts one direction.
  if (storage.capacity_bytes_per_s > 0) g.storage_link_util = storage.bytes / (storage.capacity_bytes_per_s / 2 * T);
  double fastest = 0, slowest = 0;
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const double busy = s.ranks[r].gpu_busy_s;
    if (r == 0 || busy < fastest) fastest = busy;
    if (r == 0 || busy > slowest) {
      slowest = busy;
      g.slowest_rank = static_cast<int>(r);
    }
  }
  if (fastest > 0) g.slowest_over_fastest_gpu = slowest / fastest;
  g.storage_model = input.model.storage.mode == "model";
  g.shared_storage = input.scenario.storage.kind == scenarios::StorageKind::kShared;
  g.persistent_workers = input.scenario.loader.persistent_workers;
  g.network_collective = input.scenario.collective.algorithm != scenarios::CollectiveAlgorithm::kAnalytic;
  g.per_rank_samples = s.per_rank_samples;
  g.batches_per_epoch = s.batches_per_epoch;
  g.batch_size = input.scenario.loader.batch_size;
  g.time_to_first_batch_s = s.time_to_first_batch_s;
  g.epoch_boundary_stall_s = s.epoch_boundary_stall_s;
  return g;
}

// Named thresholds of the utilisation signal (docs/result-format.md, "bottleneck"). Each is the share
// of the run (or a ratio) at which a stage's utilisation is flagged. This is a signal, not a causal
// verdict: it recommends nothing, and `simreplay diagnose` (advise/causal_profile.h) is what says
// which relief buys most.
constexpr double kGpuBound = 0.90;               // GPU busy: the input pipeline keeps up
constexpr double kStragglerRatio = 1.10;         // slowest rank's GPU time / fastest rank's
constexpr double kStragglerWait = 0.10;          // ... while ranks spend this share in collectives (waiting)
constexpr double kSharedStorageBusy = 0.70;      // shared storage link busy over the run
constexpr double kExposedComm = 0.15;            // communication not hidden under backward
constexpr double kNicWhileCommunicating = 0.50;  // NIC busy while collectives run: bandwidth-bound
constexpr double kCollectiveShare = 0.25;        // barrier + collective share (one node, alpha-beta)
constexpr double kCpuSaturated = 0.85;
constexpr double kStorageSaturated = 0.85;
constexpr double kPinSaturated = 0.85;
constexpr double kMainBusy = 0.50;
constexpr double kH2dShare = 0.30;
constexpr double kRestartShare = 0.20;
constexpr double kWorkersBusy = 0.80;
constexpr double kLowActivity = 0.50;

struct Rule {
  const char* stage;
  bool (*applies)(const Signals&);
  std::string (*evidence)(const Signals&);
};

// First match wins: the order is part of the definition (docs/result-format.md lists it).
const std::vector<Rule>& Rules() {
  static const std::vector<Rule> rules = {
      {"gpu_compute", [](const Signals& g) { return g.gpu_busy >= kGpuBound; },
       [](const Signals& g) { return "GPU busy " + Pct(g.gpu_busy) + " of the run: the input pipeline keeps up"; }},
      {"epoch_every_step", [](const Signals& g) { return g.batches_per_epoch <= 1; },
       [](const Signals& g) {
         return fmt::format(
             "each rank's share of the dataset is {} samples for batch_size {} ({} ranks): every step is a whole "
             "epoch, so every step restarts the DataLoader",
             g.per_rank_samples, g.batch_size, g.ranks);
       }},
      {"straggler",
       [](const Signals& g) {
         return g.ranks > 1 && g.slowest_over_fastest_gpu >= kStragglerRatio && g.collective >= kStragglerWait;
       },
       [](const Signals& g) {
         return fmt::format(
             "rank {} computes {:.2f}x as long as the fastest rank and the others wait for it: ranks spend {} of the "
             "run in collectives (a synchronous step runs at the slowest rank's pace)",
             g.slowest_rank, g.slowest_over_fastest_gpu, Pct(g.collective));
       }},
      {"shared_storage", [](const Signals& g) { return g.shared_storage && g.storage_link_util >= kSharedStorageBusy; },
       [](const Signals& g) {
         return "shared storage delivers at " + Pct(g.storage_link_util) +
                " of its aggregate bandwidth over the run: all nodes' loaders compete for it";
       }},
      {"network",
       [](const Signals& g) {
         return g.network_collective && g.exposed_comm >= kExposedComm &&
                g.nic_util_while_communicating >= kNicWhileCommunicating;
       },
       [](const Signals& g) {
         return "communication not hidden under backward takes " + Pct(g.exposed_comm) +
                " of the run and the NICs run at " + Pct(g.nic_util_while_communicating) +
                " of capacity while collectives are in flight: bandwidth-bound";
       }},
      {"collective", [](const Signals& g) { return g.network_collective && g.exposed_comm >= kExposedComm; },
       [](const Signals& g) {
         return "communication not hidden under backward takes " + Pct(g.exposed_comm) +
                " of the run with the NICs at " + Pct(g.nic_util_while_communicating) +
                " while collectives run: latency and synchronisation rather than bandwidth";
       }},
      {"collective", [](const Signals& g) { return g.collective >= kCollectiveShare && g.collective >= g.h2d; },
       [](const Signals& g) {
         return "ranks spend " + Pct(g.collective) + " in barrier + all-reduce (slowest rank sets the pace)";
       }},
      {"cpu", [](const Signals& g) { return g.cpu_util >= kCpuSaturated; },
       [](const Signals& g) {
         return "CPU cores " + Pct(g.cpu_util) + " busy on " + std::to_string(g.cores) +
                " cores";
       }},
      {"storage", [](const Signals& g) { return g.storage_model && g.storage_busy >= kStorageSaturated; },
       [](const Signals& g) { return "storage busy " + Pct(g.storage_busy) + " of the run"; }},
      {"main_process_loading", [](const Signals& g) { return g.workers == 0; },
       [](const Signals& g) {
         return "num_workers=0: the training loop loads every batch itself (" + Pct(g.main_busy) + " of the run)";
       }},
      {"pin_memory", [](const Signals& g) { return g.pin_busy >= kPinSaturated; },
       [](const Signals& g) { return "pin thread busy " + Pct(g.pin_busy); }},
      {"main_process", [](const Signals& g) { return g.main_busy >= kMainBusy; },
       [](const Signals& g) { return "main process busy " + Pct(g.main_busy) + " receiving batches"; }},
      {"h2d", [](const Signals& g) { return g.h2d >= kH2dShare; },
       [](const Signals& g) { return "host-to-device copies take " + Pct(g.h2d) + " of the run"; }},
      {"epoch_restarts", [](const Signals& g) { return g.restart >= kRestartShare; },
       [](const Signals& g) {
         return fmt::format(
             "{} of the run waits for the first batch of an epoch (start-up {:.3f} s, later epochs {:.3f} s){}",
             Pct(g.restart), g.time_to_first_batch_s, g.epoch_boundary_stall_s,
             g.persistent_workers ? "" : " (non-persistent workers restart every epoch)");
       }},
      {"workers", [](const Signals& g) { return g.worker_busy >= kWorkersBusy; },
       [](const Signals& g) {
         return "each worker busy " + Pct(g.worker_busy) + " with CPU " + Pct(g.cpu_util) +
                " used";
       }},
      {"startup_or_latency", [](const Signals& g) { return g.gpu_busy < kLowActivity && g.worker_busy < kLowActivity; },
       [](const Signals& g) {
         return "workers busy only " + Pct(g.worker_busy) +
                ": time goes to worker start-up, epoch boundaries or head-of-line waits";
       }},
      {"balanced", [](const Signals&) { return true; },
       [](const Signals& g) {
         return "no single stage above its threshold (workers " + Pct(g.worker_busy) + ", CPU " + Pct(g.cpu_util) + ")";
       }},
  };
  return rules;
}

}  // namespace

Bottleneck FindBottleneck(const SimInput& input, const SimRawStats& s) {
  const Signals g = Measure(input, s);
  for (const Rule& rule : Rules()) {
    if (!rule.applies(g)) continue;
    const std::string evidence = rule.evidence(g);
    // Every verdict but "GPU-bound" leads with how idle the GPUs were.
    if (std::string(rule.stage) == "gpu_compute") return {rule.stage, evidence};
    return {rule.stage, "GPU idle " + Pct(1 - g.gpu_busy) + "; " + evidence};
  }
  return {"balanced", ""};  // unreachable: the last rule always applies
}

namespace {

// Per-node and per-rank figures, collective and exposed communication, link utilisation per class.
nlohmann::json ClusterMetrics(const SimInput& input, const SimRawStats& s) {
  const double T = std::max(s.makespan_s, 1e-12);
  const auto& c = input.scenario.cluster;
  nlohmann::json j = nlohmann::json::object();
  j["nodes"] = c.nodes;
  j["gpus_per_node"] = input.scenario.hardware.gpus;
  const int64_t cluster_ranks = static_cast<int64_t>(c.nodes) * input.scenario.hardware.gpus;
  j["ranks"] = cluster_ranks;
  j["topology"] = scenarios::TopologyName(c.topology);
  j["collective_algorithm"] = scenarios::AlgorithmName(input.scenario.collective.algorithm);
  j["storage_kind"] = scenarios::StorageKindName(input.scenario.storage.kind);
  j["exposed_comm_time_s"] = Round9(s.exposed_comm_s);
  j["exposed_comm_fraction"] =
      Round9(s.exposed_comm_s / (static_cast<double>(std::max<int64_t>(cluster_ranks, 1)) * T));
  if (s.simulated_nodes > 0 && s.simulated_nodes < c.nodes) {
    j["rank_folding"] = {{"simulated_nodes", s.simulated_nodes},
                         {"method", "representative nodes, the others as the slowest of their ranks per step"},
                         {"wait_spread", Round9(s.rank_folding_wait_spread)}};
    if (s.rank_folding_wait_spread > kMaxFoldedWaitSpread) {
      j["rank_folding"]["caveat"] =
          "the ranks' waits differ within steps: the slowest of all ranks may wait longer than the slowest simulated "
          "one, so step-time tails can be understated (too large to simulate every rank instead)";
    }
  } else if (s.rank_folding_wait_spread > 0) {
    j["rank_folding"] = {{"simulated_nodes", c.nodes},
                         {"refused", "the ranks' waits differ within steps: every rank simulated"},
                         {"wait_spread", Round9(s.rank_folding_wait_spread)}};
  }
  nlohmann::json links = nlohmann::json::object();
  for (int k = 0; k < models::kLinkClassCount; ++k) {
    const auto& load = s.link_load[static_cast<size_t>(k)];
    if (load.links == 0) continue;
    links[models::LinkClassName(static_cast<models::LinkClass>(k))] = {
        {"links", load.links},
        {"bytes", Round9(load.bytes)},
        {"utilization", Round9(load.capacity_bytes_per_s > 0 ? load.bytes / (load.capacity_bytes_per_s * T) : 0)}};
  }
  j["link_utilization"] = links;
  nlohmann::json nodes = nlohmann::json::array();
  for (size_t n = 0; n < s.nodes.size(); ++n) {
    const auto& node = s.nodes[n];
    nodes.push_back({{"node", static_cast<int64_t>(n)},
                     {"cpu_utilization", Round9(std::min(1.0, node.cpu_busy_core_s / (input.cpu_cores * T)))},
                     {"storage_read_bytes_per_s", Round9(static_cast<double>(node.storage_read_bytes) / T)},
                     {"peak_host_memory_bytes", Round9(node.peak_host_memory_bytes)}});
  }
  j["per_node"] = nodes;
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const auto& rank = s.ranks[r];
    ranks.push_back({{"rank", static_cast<int64_t>(r)},
                     {"node", rank.node},
                     {"gpu_idle_fraction", Round9(std::clamp(1.0 - rank.gpu_busy_s / T, 0.0, 1.0))},
                     {"data_wait_s", Round9(rank.wait_s)},
                     {"collective_time_s", Round9(rank.collective_s)},
                     {"exposed_comm_time_s", Round9(rank.exposed_comm_s)},
                     {"samples", rank.samples}});
  }
  j["per_rank"] = ranks;
  return j;
}

// metrics.checkpoint (docs/result-format.md): per-save figures are means over the run's saves.
nlohmann::json CheckpointMetrics(const CheckpointStats& c) {
  const double saves = static_cast<double>(std::max<int64_t>(c.saves, 1));
  nlohmann::json j = nlohmann::json::object();
  j["saves"] = c.saves;
  j["stall_s"] = Round9(c.stall_s);
  j["stall_per_save_s"] = Round9(c.stall_s / saves);
  j["write_s_per_save"] = Round9(c.write_s / saves);
  j["bytes_written"] = Round9(c.bytes_written);
  return j;
}

}  // namespace

nlohmann::json SummarizeMetrics(const SimInput& input, const SimRawStats& full) {
  const double T = std::max(full.makespan_s, 1e-12);
  const int nodes = input.scenario.cluster.nodes;
  const int ranks = nodes * input.scenario.hardware.gpus;
  Bottleneck bottleneck = FindBottleneck(input, full);
  nlohmann::json m = nlohmann::json::object();
  m["train_throughput_samples_per_s"] = Round9(static_cast<double>(full.samples_consumed) / T);
  m["gpu_idle_fraction"] = Round9(std::clamp(1.0 - full.gpu_busy_s / (ranks * T), 0.0, 1.0));
  m["step_time_s"] = Distribution(full.step_s);
  m["data_wait_s"] = Distribution(full.wait_s);
  m["time_to_first_batch_s"] = Round9(full.time_to_first_batch_s);
  m["epoch_boundary_stall_s"] = Round9(full.epoch_boundary_stall_s);
  m["peak_host_memory_bytes"] = Round9(full.peak_host_memory_bytes);
  m["worker_pss_bytes"] = Round9(input.model.memory.worker_base_pss_bytes);
  m["storage_read_bytes_per_s"] = Round9(static_cast<double>(full.storage_read_bytes) / T);
  m["cpu_utilization"] = Round9(std::min(1.0, full.cpu_busy_core_s / (input.cpu_cores * CoreSets(input) * T)));
  m["h2d_time_s"] = Round9(full.h2d_s);
  m["collective_time_s"] = Round9(full.collective_s);
  m["queue_wait_s"] = Distribution(full.queue_wait_s);
  m["stage_latency_s"] = {{"read", Distribution(full.read_s)},
                          {"decode", Distribution(full.decode_s)},
                          {"augment", Distribution(full.augment_s)}};
  m["simulated_time_s"] = Round9(full.makespan_s);
  m["samples"] = full.samples_consumed;
  // A folded run's step intervals are the simulated ranks'; the cluster's count is every rank's.
  const int64_t sampled_ranks =
      full.simulated_nodes > 0 ? static_cast<int64_t>(full.simulated_nodes) * input.scenario.hardware.gpus : ranks;
  m["optimizer_steps"] = static_cast<int64_t>(full.step_s.size()) * ranks / std::max<int64_t>(sampled_ranks, 1);
  m["worker_starts"] = full.worker_starts;
  m["bottleneck"] = {{"stage", bottleneck.stage}, {"evidence", bottleneck.evidence}};
  if (ranks > 1 || input.scenario.storage.kind == scenarios::StorageKind::kShared) {
    m["cluster"] = ClusterMetrics(input, full);
  }
  if (input.scenario.checkpoint.enabled()) m["checkpoint"] = CheckpointMetrics(full.checkpoint);
  return m;
}

}  // namespace simreplay::sim
