// The simulation driver: builds the cluster (models::ClusterTopology -> sim/platform.h), one NodeState
// per node, one DataLoader per rank, the collectives, and runs every rank's training loop:
//   next() (data wait) -> H2D copy over PCIe -> GPU step -> on the last micro-batch of an optimizer
//   step, the gradient collectives (bucketed during backward when overlap > 0) -> next step.
// Every CPU cost is a SimGrid execution on the node's CPU host, so oversubscribed cores slow every
// process. A recorded CPU-second is 1e9 flops; the host runs 1e9 x core_speed_scale flops per second
// per core (x a straggler's cpu_speed_scale).
#include "sim/simulation.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <simgrid/s4u.hpp>

#include "models/cluster_topology.h"
#include "sim/collectives.h"
#include "sim/dataloader.h"
#include "sim/node_state.h"
#include "sim/platform.h"
#include "sim/random.h"
#include "sim/rank_context.h"
#include "sim/run_config.h"
#include "sim/sampler.h"

namespace simreplay::sim {

namespace {

namespace sg4 = simgrid::s4u;
using scenarios::Sharding;

class Simulation {
 public:
  Simulation(const SimInput& in, const RunConfig& config, const DistributedSampler& sampler)
      : in_(in),
        config_(config),
        sampler_(sampler),
        topology_(config.cluster),
        recorder_(&stats_, in.record_timeline, in.scenario.timeline_max_events) {}

  Result<SimRawStats> Run();

 private:
  void StartBackgroundLoad(NodeState* node);
  void MainLoop(int rank);
  void CopyToGpu(const RankContext& rank, double bytes);
  double DrawStepTime(const RankContext& rank, Rng* rng) const;
  // The GPU step of one micro-batch; `sync`: the last micro-batch of an optimizer step.
  void Step(const RankContext& rank, Rng* rng, bool sync);
  void Communicate(const RankContext& rank, double forward_end_s, double backward_s);
  void CollectLinkCapacities();

  const SimInput& in_;
  const RunConfig& config_;
  const DistributedSampler& sampler_;
  models::ClusterTopology topology_;
  SimRawStats stats_;
  Recorder recorder_;
  Platform platform_;
  std::vector<std::unique_ptr<NodeState>> nodes_;
  std::vector<RankContext> ranks_;
  std::vector<std::unique_ptr<DataLoader>> loaders_;
  std::unique_ptr<Collectives> collectives_;
  int mains_finished_ = 0;
  std::vector<double> first_batch_s_;
};

// Other processes on the node (measured by calibration, or set in the scenario): B busy cores as
// ceil(B) endless executions, each capped at its share of one core, competing for the cores like any
// other process. Their work is not counted in cpu_utilization.
void Simulation::StartBackgroundLoad(NodeState* node) {
  const double busy = in_.background_threads;
  sg4::Host* host = node->cpu();
  for (int i = 0; i < static_cast<int>(std::ceil(busy)); ++i) {
    const double share = std::min(1.0, busy - i);
    sg4::Actor::create("n" + std::to_string(node->index()) + "background" + std::to_string(i), host, [host, share] {
      sg4::this_actor::exec_init(1e30)->set_bound(share * host->get_speed())->start()->wait();
    })->daemonize();
  }
}

double Simulation::DrawStepTime(const RankContext& rank, Rng* rng) const {
  const auto& gpu = in_.model.gpu;
  const double mean = in_.step_time_s * rank.step_scale;
  if (mean <= 0 || gpu.step_cv <= 0 || config_.step_distribution == StepDistribution::kConstant) return mean;
  if (config_.step_distribution == StepDistribution::kNormal) {
    return std::max(0.0, mean * (1 + gpu.step_cv * rng->Normal()));
  }
  double sigma2 = std::log(1 + gpu.step_cv * gpu.step_cv);
  return std::exp(std::log(mean) - sigma2 / 2 + std::sqrt(sigma2) * rng->Normal());
}

void Simulation::CopyToGpu(const RankContext& rank, double bytes) {
  if (bytes <= 0) return;
  double t0 = sg4::Engine::get_clock();
  sg4::Comm::sendto(nodes_[static_cast<size_t>(rank.node)]->cpu(), rank.gpu, static_cast<uint64_t>(bytes));
  if (!in_.scenario.loader.pin_memory) {
    // A pageable source is staged through a bounce buffer: the copy runs at the pageable rate. (3.32
    // cannot cap the rate of a host-to-host comm, so the difference is added as a delay.)
    const auto& pcie = in_.model.pcie;
    double extra_s = bytes / pcie.h2d_pageable_bytes_per_s - bytes / pcie.h2d_pinned_bytes_per_s;
    if (extra_s > 0) sg4::this_actor::sleep_for(extra_s);
  }
  stats_.h2d_s += sg4::Engine::get_clock() - t0;
  recorder_.Span(rank.rank, kTrackGpu, "H2D", t0);
}

// The optimizer step's communication, from the end of the forward pass. Gradients become ready
// uniformly over the backward pass, bucket by bucket (DDP: reverse parameter order); each bucket's
// collective starts when it is ready and the previous one is done (one communication stream); the
// step ends when the backward pass and the last bucket are both done. Fully sharded (FSDP / ZeRO-3):
// each bucket is a reduce-scatter of gradients, after an all-gather of parameters before forward.
void Simulation::Communicate(const RankContext& rank, double forward_end_s, double backward_s) {
  const double total_bytes = std::max(config_.gradient_bytes, 0.0);
  double ready_bytes = 0;
  auto& rs = stats_.ranks[static_cast<size_t>(rank.rank)];
  for (double bucket : config_.bucket_bytes) {
    ready_bytes += bucket;
    const double ready_s = forward_end_s + (total_bytes > 0 ? backward_s * ready_bytes / total_bytes : backward_s);
    const double now = sg4::Engine::get_clock();
    if (ready_s > now) sg4::this_actor::sleep_for(ready_s - now);
    const double t0 = sg4::Engine::get_clock();
    collectives_->Run(rank.rank,
                      config_.sharding == Sharding::kFull ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce,
                      bucket);
    const double spent_s = sg4::Engine::get_clock() - t0;
    stats_.collective_s += spent_s;
    rs.collective_s += spent_s;
    recorder_.Span(rank.rank, config_.bucket_bytes.size() > 1 ? kTrackComm : kTrackGpu,
                   config_.sharding == Sharding::kFull ? "reduce-scatter" : "all-reduce", t0);
  }
  const double backward_end_s = forward_end_s + backward_s;
  const double now = sg4::Engine::get_clock();
  if (backward_end_s > now) sg4::this_actor::sleep_for(backward_end_s - now);
  const double exposed_s = sg4::Engine::get_clock() - backward_end_s;
  stats_.exposed_comm_s += exposed_s;
  rs.exposed_comm_s += exposed_s;
}

void Simulation::Step(const RankContext& rank, Rng* rng, bool sync) {
  if (in_.pipeline_only) return;
  const double step_s = DrawStepTime(rank, rng);
  auto& rs = stats_.ranks[static_cast<size_t>(rank.rank)];
  const bool communicate = sync && config_.ranks > 1;
  if (communicate && config_.sharding == Sharding::kFull) {
    // Parameters are gathered before the forward pass (exposed: nothing to hide it under).
    const double t0 = sg4::Engine::get_clock();
    collectives_->Run(rank.rank, CollectiveOp::kAllGather, std::max(config_.gradient_bytes, 0.0));
    const double spent_s = sg4::Engine::get_clock() - t0;
    stats_.collective_s += spent_s;
    rs.collective_s += spent_s;
    stats_.exposed_comm_s += spent_s;
    rs.exposed_comm_s += spent_s;
    recorder_.Span(rank.rank, kTrackGpu, "all-gather", t0);
  }
  const double t0 = sg4::Engine::get_clock();
  stats_.gpu_busy_s += step_s;
  rs.gpu_busy_s += step_s;
  if (!communicate) {
    sg4::this_actor::sleep_for(step_s);
    recorder_.Span(rank.rank, kTrackGpu, "GPU step", t0);
    return;
  }
  // The span covers the compute only; the collectives have their own.
  if (recorder_.timeline() && recorder_.Reserve(1)) recorder_.Add({rank.rank, kTrackGpu, "GPU step", t0, step_s});
  const double backward_s = step_s * config_.overlap;
  sg4::this_actor::sleep_for(step_s - backward_s);
  Communicate(rank, sg4::Engine::get_clock(), backward_s);
}

void Simulation::MainLoop(int r) {
  const RankContext& rank = ranks_[static_cast<size_t>(r)];
  NodeState* node = nodes_[static_cast<size_t>(rank.node)].get();
  DataLoader& loader = *loaders_[static_cast<size_t>(r)];
  const auto& scenario = in_.scenario;
  const int grad_accum = scenario.train.grad_accum;
  const int64_t batches_per_epoch = sampler_.batches_per_epoch();
  const int64_t target_steps = scenario.train.steps, target_epochs = scenario.train.epochs;
  Rng step_rng(scenario.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(r) + 1);
  node->AddMemory(in_.model.memory.main_base_bytes +
                  scenario.loader.num_workers * in_.model.memory.worker_base_pss_bytes);
  auto& rs = stats_.ranks[static_cast<size_t>(r)];
  int64_t optimizer_steps = 0, micro_in_step = 0;
  double last_step_end_s = 0;
  bool done = false;
  for (int64_t epoch = 0; !done; ++epoch) {
    loader.StartEpoch(epoch);
    for (int64_t b = 0; b < batches_per_epoch && !done; ++b) {
      const double t0 = sg4::Engine::get_clock();
      FinishedBatch batch = loader.Next(b);
      const double wait = sg4::Engine::get_clock() - t0;
      stats_.wait_s.push_back(wait);
      rs.wait_s += wait;
      recorder_.Span(r, kTrackMain, "wait for data", t0);
      double& first_batch = first_batch_s_[static_cast<size_t>(r)];
      if (first_batch < 0) first_batch = sg4::Engine::get_clock();
      if (b == 0 && epoch > 0 && r == 0) stats_.epoch_boundary_stall_s += wait;

      CopyToGpu(rank, batch.bytes);
      // Gradient accumulation: only the last micro-batch syncs; an epoch-bounded run also steps at
      // the end of each epoch with what it accumulated.
      const bool epoch_end = b + 1 == batches_per_epoch;
      const bool sync = ++micro_in_step == grad_accum || (epoch_end && target_epochs > 0);
      Step(rank, &step_rng, sync);
      node->AddMemory(-batch.bytes * in_.model.memory.batch_bytes_scale);
      stats_.samples_consumed += batch.size;
      rs.samples += batch.size;
      ++stats_.micro_batches;
      if (sync) {
        stats_.step_s.push_back(sg4::Engine::get_clock() - last_step_end_s);
        last_step_end_s = sg4::Engine::get_clock();
        micro_in_step = 0;
        ++optimizer_steps;
        if (target_steps > 0 && optimizer_steps >= target_steps) done = true;
      }
    }
    if (target_epochs > 0 && epoch + 1 >= target_epochs) done = true;
  }
  stats_.makespan_s = std::max(stats_.makespan_s, sg4::Engine::get_clock());
  ++mains_finished_;
}

// Capacity per link class, both directions (bytes are counted by the senders: collectives and
// shared-storage reads add their bytes to every link class on their route).
void Simulation::CollectLinkCapacities() {
  for (const auto& link : topology_.links()) {
    if (link.link_class == models::LinkClass::kPcie) continue;  // H2D is reported as h2d_time_s
    auto& load = stats_.link_load[static_cast<size_t>(link.link_class)];
    load.capacity_bytes_per_s += 2 * link.bytes_per_s;
    ++load.links;
  }
}

Result<SimRawStats> Simulation::Run() {
  std::vector<std::string> args_storage = {"simreplay", "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                                           "--log=root.thresh:critical", "--cfg=contexts/stack-size:256"};
  std::vector<char*> argv;
  for (auto& a : args_storage) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  sg4::Engine engine(&argc, argv.data());
  platform_ = BuildPlatform(topology_, in_.model, config_);
  CollectLinkCapacities();
  stats_.ranks.assign(static_cast<size_t>(config_.ranks), RankStats{});
  stats_.nodes.assign(static_cast<size_t>(config_.nodes), NodeStats{});
  stats_.per_rank_samples = sampler_.per_rank_samples();
  stats_.batches_per_epoch = sampler_.batches_per_epoch();
  for (int n = 0; n < config_.nodes; ++n) {
    nodes_.push_back(
        std::make_unique<NodeState>(n, platform_.nodes[static_cast<size_t>(n)], platform_, in_, config_, &recorder_));
    if (config_.shared_storage) {
      nodes_.back()->SetStorageRoute(
          CountLinkClasses(topology_, topology_.Route(topology_.StorageVertex(), topology_.CpuVertex(n))));
    }
  }
  for (int r = 0; r < config_.ranks; ++r) {
    const int node = r / config_.gpus_per_node;
    ranks_.push_back(RankContext{r, node, r % config_.gpus_per_node, platform_.GpuOfRank(r, config_.gpus_per_node),
                                 config_.node_step_scale[static_cast<size_t>(node)]});
    stats_.ranks.back().node = node;
  }
  for (int r = 0; r < config_.ranks; ++r) {
    const RankContext& rank = ranks_[static_cast<size_t>(r)];
    loaders_.push_back(
        std::make_unique<DataLoader>(rank, nodes_[static_cast<size_t>(rank.node)].get(), sampler_, in_, config_));
  }
  if (config_.ranks > 1) collectives_ = MakeCollectives(config_, topology_, platform_, in_.model, &stats_.link_load);
  first_batch_s_.assign(static_cast<size_t>(config_.ranks), -1.0);
  for (auto& node : nodes_) StartBackgroundLoad(node.get());
  for (int r = 0; r < config_.ranks; ++r) {
    sg4::Actor::create("rank" + std::to_string(r) + "-main",
                       nodes_[static_cast<size_t>(ranks_[static_cast<size_t>(r)].node)]->cpu(),
                       [this, r] { MainLoop(r); });
  }
  engine.run();
  if (mains_finished_ != config_.ranks)
    return Status::Internal("simulation deadlocked: a training loop never finished");
  stats_.time_to_first_batch_s = *std::max_element(first_batch_s_.begin(), first_batch_s_.end());
  stats_.worker_count = static_cast<double>(in_.scenario.loader.num_workers) * config_.ranks;
  for (int n = 0; n < config_.nodes; ++n) {
    stats_.nodes[static_cast<size_t>(n)] = nodes_[static_cast<size_t>(n)]->stats();
    stats_.storage_busy_s = std::max(stats_.storage_busy_s, stats_.nodes[static_cast<size_t>(n)].storage_busy_s);
  }
  return std::move(stats_);
}

}  // namespace

Result<SimRawStats> RunSimulation(const SimInput& input) {
  if (input.costs == nullptr || input.costs->samples.empty()) {
    return Status::InvalidArgument("no per-sample costs to replay");
  }
  const RunConfig config = RunConfig::Resolve(input);
  const auto& loader = input.scenario.loader;
  DistributedSampler sampler(*input.costs, input.scenario.train.dataset_samples, config.ranks, loader.batch_size,
                             loader.drop_last, config.shuffled_order, input.scenario.seed);
  if (sampler.batches_per_epoch() <= 0) {
    return Status::InvalidArgument("an epoch has no batch: " + std::to_string(sampler.per_rank_samples()) +
                                   " samples per rank with batch_size " + std::to_string(loader.batch_size) +
                                   " and drop_last");
  }
  Simulation simulation(input, config, sampler);
  return simulation.Run();
}

}  // namespace simreplay::sim
