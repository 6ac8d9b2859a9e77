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

#include <fmt/format.h>
#include <simgrid/s4u.hpp>
#include <xbt/config.hpp>

#include "common/random.h"
#include "models/cluster_topology.h"
#include "scenarios/memory_limit.h"
#include "scenarios/simulation_budget.h"
#include "sim/checkpoint.h"
#include "sim/collectives.h"
#include "sim/dataloader.h"
#include "sim/isolated_run.h"
#include "sim/node_state.h"
#include "sim/platform.h"
#include "sim/rank_context.h"
#include "sim/rank_folding.h"
#include "sim/raw_stats_codec.h"
#include "sim/run_config.h"
#include "sim/sampler.h"

namespace simreplay::sim {

namespace {

namespace sg4 = simgrid::s4u;
using scenarios::CollectiveAlgorithm;
using scenarios::Sharding;

class Simulation {
 public:
  // `folding`: PlanRankFolding's decision for this run.
  Simulation(const SimInput& in, const SimOptions& options, const RunConfig& config,
             const DistributedSampler& sampler, const RankFolding& folding)
      : in_(in),
        options_(options),
        config_(config),
        sampler_(sampler),
        topology_(config.cluster),
        recorder_(&stats_, in.record_timeline, in.scenario.timeline_max_events),
        folding_(folding),
        simulated_ranks_(folding_.simulated_nodes * config.gpus_per_node),
        fold_rng_(Rng::DeriveSeed(in.scenario.seed, 0x666f6c64)) {}

  Result<SimRawStats> Run();

 private:
  void MainLoop(int rank);
  double CopyToGpuS(double bytes) const;
  double DrawStepTime(const RankContext& rank, Rng* rng) const;
  // The GPU step of one micro-batch; `sync`: the last micro-batch of an optimizer step.
  void Step(const RankContext& rank, Rng* rng, bool sync, double h2d_s);
  void Communicate(const RankContext& rank, double forward_end_s, double backward_s);
  void CommunicateTogether(const RankContext& rank, double forward_end_s, double backward_s);
  void CommunicateSharded(const RankContext& rank, double forward_end_s, double backward_s);
  void RunCollective(const RankContext& rank, CollectiveOp op, double bytes, const char* name);
  void StepHostCpu(const RankContext& rank);
  void StepWakeUp(const RankContext& rank);
  void FinishBackward(const RankContext& rank, double backward_end_s, double compute_end_s);
  void CollectLinkCapacities();
  double ActorCount() const;
  void AddPhantomRank();
  void ScaleToCluster();

  const SimInput& in_;
  const SimOptions options_;
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
  std::unique_ptr<CheckpointSaver> checkpoint_;  // when the scenario saves checkpoints
  // CommunicateTogether's step in progress: ranks arrived, the latest entry and bucket ready instants
  // among them, and (once run) when each bucket's collective ended.
  simgrid::s4u::BarrierPtr together_barrier_;
  int together_arrived_ = 0;
  double together_latest_entry_s_ = 0;
  std::vector<double> together_latest_ready_s_, together_end_s_;
  int mains_finished_ = 0;
  double tcp_gamma_ = 0;  // SimGrid's network/TCP-gamma: CM02 bounds a flow at gamma / (2 x latency)
  std::vector<double> first_batch_s_;
  // Rank folding (sim/rank_folding.h): how many ranks are simulated in full; per simulated rank when
  // its current optimizer step began and the GPU step it drew; the phantom rank's state.
  RankFolding folding_;
  int simulated_ranks_ = 0;
  Rng fold_rng_;
  std::vector<double> step_begin_s_, step_draw_s_;
  // Per rank: the loop thread's extra host CPU still to run in its next step after forking workers
  // (gpu.step_host_cpu_after_fork_s), set at an epoch start that forks them.
  std::vector<double> after_fork_cpu_s_;
  double together_max_overhead_s_ = 0;  // the step's largest time before the collectives beyond the GPU step
  double together_min_overhead_s_ = 0;  // ... and the smallest
  double overhead_spread_s_ = 0;        // sum over steps of largest - smallest (folded runs)
  double together_release_s_ = 0;       // when the previous step's last bucket ended
  double phantom_compute_end_s_ = 0;    // when the phantom rank's previous backward pass ended
};

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

// The host-to-device copy of a batch: the GPU's PCIe link carries nothing else (one rank per GPU;
// shared-storage reads use the host link), so the SimGrid flow it used to be took exactly the CM02
// time, latency + bytes / min(link rate, TCP-gamma / (2 x latency)); it is now that closed form, slept
// together with the GPU step that follows (one activity instead of three per batch: docs/performance.md).
// A pageable source is staged through a bounce buffer: the copy runs at the pageable rate.
double Simulation::CopyToGpuS(double bytes) const {
  if (bytes <= 0) return 0;
  const auto& spec = topology_.spec();
  double rate = spec.pcie_bytes_per_s;
  if (spec.pcie_latency_s > 0 && tcp_gamma_ > 0) rate = std::min(rate, tcp_gamma_ / (2 * spec.pcie_latency_s));
  double copy_s = spec.pcie_latency_s + bytes / rate;
  if (!in_.scenario.loader.pin_memory) {
    const auto& pcie = in_.model.pcie;
    const double extra_s = bytes / pcie.h2d_pageable_bytes_per_s - bytes / pcie.h2d_pinned_bytes_per_s;
    if (extra_s > 0) copy_s += extra_s;
  }
  return copy_s;
}

// The optimizer step's communication, from the end of the forward pass. Gradients become ready
// uniformly over the backward pass, bucket by bucket (DDP: reverse parameter order); each bucket's
// collective starts when it is ready and the previous one is done (one communication stream); the
// step ends when the backward pass and the last bucket are both done. Fully sharded (FSDP / ZeRO-3):
// see CommunicateSharded.
void Simulation::Communicate(const RankContext& rank, double forward_end_s, double backward_s) {
  if (config_.sharding == Sharding::kFull) {
    CommunicateSharded(rank, forward_end_s, backward_s);
    return;
  }
  if (!options_.full_reference && collectives_->RunsForAll()) {
    CommunicateTogether(rank, forward_end_s, backward_s);
    return;
  }
  const double total_bytes = std::max(config_.gradient_bytes, 0.0);
  double ready_bytes = 0;
  for (double bucket : config_.bucket_bytes) {
    ready_bytes += bucket;
    const double ready_s = forward_end_s + (total_bytes > 0 ? backward_s * ready_bytes / total_bytes : backward_s);
    const double now = sg4::Engine::get_clock();
    if (ready_s > now) sg4::this_actor::sleep_for(ready_s - now);
    RunCollective(rank, CollectiveOp::kAllReduce, bucket, "all-reduce");
  }
  FinishBackward(rank, forward_end_s + backward_s, forward_end_s + backward_s);
}

// The same bucket schedule when the collectives run for all ranks from one actor (Collectives::
// RunsForAll): each rank hands in its buckets' ready instants and waits once; the last rank to arrive
// runs bucket k's collective from max(the latest rank's ready instant of bucket k, the end of bucket
// k - 1), which is when the last rank reached bucket k's barrier in Communicate, and releases everyone
// after the last bucket. Each rank then books bucket k from max(its own ready instant, the end of
// bucket k - 1) to the end of bucket k, as Communicate does. One blocking call per rank and step
// instead of two per bucket (docs/performance.md, "Large clusters").
void Simulation::CommunicateTogether(const RankContext& rank, double forward_end_s, double backward_s) {
  const auto& buckets = config_.bucket_bytes;
  const double total_bytes = std::max(config_.gradient_bytes, 0.0);
  const double entry_s = sg4::Engine::get_clock();
  std::vector<double> ready_s(buckets.size());
  double ready_bytes = 0;
  for (size_t k = 0; k < buckets.size(); ++k) {
    ready_bytes += buckets[k];
    ready_s[k] = forward_end_s + (total_bytes > 0 ? backward_s * ready_bytes / total_bytes : backward_s);
  }
  const size_t r = static_cast<size_t>(rank.rank);
  // What this rank spent in the step besides its GPU compute before the collectives: data wait, copy,
  // wake-up, host CPU (the phantom rank's, when folded, is the largest of these).
  const double overhead_s = entry_s - step_begin_s_[r] - (step_draw_s_[r] - backward_s);
  if (together_arrived_ == 0) {
    together_latest_entry_s_ = entry_s;
    together_latest_ready_s_ = ready_s;
    together_max_overhead_s_ = together_min_overhead_s_ = overhead_s;
  }
  together_min_overhead_s_ = std::min(together_min_overhead_s_, overhead_s);
  together_max_overhead_s_ = std::max(together_max_overhead_s_, overhead_s);
  together_latest_entry_s_ = std::max(together_latest_entry_s_, entry_s);
  for (size_t k = 0; k < buckets.size(); ++k) {
    together_latest_ready_s_[k] = std::max(together_latest_ready_s_[k], ready_s[k]);
  }
  if (++together_arrived_ == simulated_ranks_) {
    together_arrived_ = 0;
    if (folding_.folded()) {
      overhead_spread_s_ += together_max_overhead_s_ - together_min_overhead_s_;
      AddPhantomRank();
    }
    together_end_s_.assign(buckets.size(), 0.0);
    double previous_end_s = together_latest_entry_s_;
    for (size_t k = 0; k < buckets.size(); ++k) {
      const double start_s = std::max(together_latest_ready_s_[k], previous_end_s);
      const double now = sg4::Engine::get_clock();
      if (start_s > now) sg4::this_actor::sleep_for(start_s - now);
      collectives_->RunForAll(CollectiveOp::kAllReduce, buckets[k]);
      previous_end_s = together_end_s_[k] = sg4::Engine::get_clock();
    }
    together_release_s_ = previous_end_s;
  }
  together_barrier_->wait();
  auto& rs = stats_.ranks[static_cast<size_t>(rank.rank)];
  const int track = buckets.size() > 1 ? kTrackComm : kTrackGpu;
  double previous_end_s = entry_s;
  for (size_t k = 0; k < buckets.size(); ++k) {
    const double start_s = std::max(ready_s[k], previous_end_s);
    const double spent_s = together_end_s_[k] - start_s;
    stats_.collective_s += spent_s;
    rs.collective_s += spent_s;
    if (recorder_.timeline() && recorder_.Reserve(1)) recorder_.Add({rank.rank, track, "all-reduce", start_s, spent_s});
    previous_end_s = together_end_s_[k];
  }
  FinishBackward(rank, forward_end_s + backward_s, forward_end_s + backward_s);
}

// The other ranks of a folded cluster, as the slowest of them (sim/rank_folding.h): it began its step
// when the previous step's collectives released it (or its backward pass ended, if later), spent the
// largest non-compute time a simulated rank spent in this step, and drew the largest of the other
// ranks' GPU steps. Its bucket ready instants join the simulated ranks' before the collectives run.
void Simulation::AddPhantomRank() {
  const int64_t others = static_cast<int64_t>(config_.ranks) - simulated_ranks_;
  const double step_s =
      MaxOfStepDraws(in_.step_time_s, in_.model.gpu.step_cv, config_.step_distribution, others, fold_rng_.Unit());
  const double backward_s = step_s * config_.overlap;
  const double begin_s = std::max(together_release_s_, phantom_compute_end_s_);
  const double entry_s = begin_s + together_max_overhead_s_ + (step_s - backward_s);
  const double total_bytes = std::max(config_.gradient_bytes, 0.0);
  double ready_bytes = 0;
  for (size_t k = 0; k < config_.bucket_bytes.size(); ++k) {
    ready_bytes += config_.bucket_bytes[k];
    const double ready_s = entry_s + (total_bytes > 0 ? backward_s * ready_bytes / total_bytes : backward_s);
    together_latest_ready_s_[k] = std::max(together_latest_ready_s_[k], ready_s);
  }
  together_latest_entry_s_ = std::max(together_latest_entry_s_, entry_s);
  phantom_compute_end_s_ = entry_s + backward_s;
}

// FSDP (FULL_SHARD, backward_prefetch BACKWARD_PRE): each bucket is one unit, in backward order. A
// unit's backward compute needs its parameters gathered again (they were freed after forward), so unit
// 0's all-gather is exposed at the start of backward; unit k+1's all-gather is issued before unit k's
// reduce-scatter (the prefetch), so it hides under unit k's compute when the network keeps up; unit
// k's reduce-scatter starts when its compute is done. Compute is GPU time, tracked here as instants:
// unit k runs from max(unit k-1 done, its all-gather done) for backward x unit bytes / S.
void Simulation::CommunicateSharded(const RankContext& rank, double forward_end_s, double backward_s) {
  const auto& units = config_.bucket_bytes;
  const double total_bytes = std::max(config_.gradient_bytes, 0.0);
  auto compute_s = [&](double unit) { return total_bytes > 0 ? backward_s * unit / total_bytes : backward_s; };
  RunCollective(rank, CollectiveOp::kAllGather, units.empty() ? 0.0 : units[0], "all-gather");
  std::vector<double> done_s(units.size());
  if (!units.empty()) done_s[0] = std::max(forward_end_s, sg4::Engine::get_clock()) + compute_s(units[0]);
  for (size_t k = 0; k < units.size(); ++k) {
    if (k + 1 < units.size()) {
      RunCollective(rank, CollectiveOp::kAllGather, units[k + 1], "all-gather");
      done_s[k + 1] = std::max(done_s[k], sg4::Engine::get_clock()) + compute_s(units[k + 1]);
    }
    const double now = sg4::Engine::get_clock();
    if (done_s[k] > now) sg4::this_actor::sleep_for(done_s[k] - now);
    RunCollective(rank, CollectiveOp::kReduceScatter, units[k], "reduce-scatter");
  }
  FinishBackward(rank, forward_end_s + backward_s, units.empty() ? forward_end_s + backward_s : done_s.back());
}

void Simulation::RunCollective(const RankContext& rank, CollectiveOp op, double bytes, const char* name) {
  const double t0 = sg4::Engine::get_clock();
  collectives_->Run(rank.rank, op, bytes);
  const double spent_s = sg4::Engine::get_clock() - t0;
  stats_.collective_s += spent_s;
  stats_.ranks[static_cast<size_t>(rank.rank)].collective_s += spent_s;
  recorder_.Span(rank.rank, config_.bucket_bytes.size() > 1 ? kTrackComm : kTrackGpu, name, t0);
}

// Waits for the backward compute to end (`compute_end_s`), then counts what the step spent beyond
// its compute (`backward_end_s` = forward end + backward time) as exposed communication.
void Simulation::FinishBackward(const RankContext& rank, double backward_end_s, double compute_end_s) {
  const double now = sg4::Engine::get_clock();
  if (compute_end_s > now) sg4::this_actor::sleep_for(compute_end_s - now);
  const double exposed_s = sg4::Engine::get_clock() - backward_end_s;
  stats_.exposed_comm_s += exposed_s;
  stats_.ranks[static_cast<size_t>(rank.rank)].exposed_comm_s += exposed_s;
}

// The batch's host-to-device copy (`h2d_s`, CopyToGpuS), then the GPU step of the micro-batch; `sync`:
// the last micro-batch of an optimizer step. The copy and the compute before any collective are one
// sleep: nothing can happen to this rank in between.
// The loop thread's own CPU work of the step (model.gpu.step_host_cpu_s) on the node's cores, after
// the accelerator's part and before the gradient collectives: the order of the emulated step the
// capture bench runs (a sleep, then the real forward/backward/optimizer on the CPU). It is busy time,
// as the measured step counts it.
// The first step after the loop forks DataLoader workers also pays the copy-on-write faults of the
// pages it writes (gpu.step_host_cpu_after_fork_s).
void Simulation::StepHostCpu(const RankContext& rank) {
  double& after_fork_s = after_fork_cpu_s_[static_cast<size_t>(rank.rank)];
  const double cpu_s = in_.model.gpu.step_host_cpu_s + after_fork_s;
  after_fork_s = 0;
  if (cpu_s <= 0) return;
  const double t0 = sg4::Engine::get_clock();
  nodes_[static_cast<size_t>(rank.node)]->Execute(cpu_s);
  const double spent_s = sg4::Engine::get_clock() - t0;
  stats_.gpu_busy_s += spent_s;
  stats_.ranks[static_cast<size_t>(rank.rank)].gpu_busy_s += spent_s;
  recorder_.Span(rank.rank, kTrackGpu, "step host CPU", t0);
}

// The loop thread blocked while the accelerator worked; it resumes after the scheduler's wake-up delay
// at the CPU work running on its node then (NodeState::WakeUp). An emulated step is that sleeping
// thread, so the delay is part of the step as the capture measures it (busy); after a real GPU's step
// (CUDA events time the GPU alone) it is idle accelerator time.
void Simulation::StepWakeUp(const RankContext& rank) {
  const double t0 = sg4::Engine::get_clock();
  const double delay_s = nodes_[static_cast<size_t>(rank.node)]->WakeUp();
  if (delay_s <= 0) return;
  if (in_.model.gpu.accelerator != "cuda") {
    stats_.gpu_busy_s += delay_s;
    stats_.ranks[static_cast<size_t>(rank.rank)].gpu_busy_s += delay_s;
  }
  recorder_.Span(rank.rank, kTrackGpu, "wake-up", t0);
}

void Simulation::Step(const RankContext& rank, Rng* rng, bool sync, double h2d_s) {
  const double copy_start_s = sg4::Engine::get_clock();
  stats_.h2d_s += h2d_s;
  if (h2d_s > 0 && recorder_.timeline() && recorder_.Reserve(1)) {
    recorder_.Add({rank.rank, kTrackGpu, "H2D", copy_start_s, h2d_s});
  }
  if (in_.pipeline_only) {
    if (h2d_s > 0) sg4::this_actor::sleep_for(h2d_s);
    return;
  }
  const double step_s = DrawStepTime(rank, rng);
  step_draw_s_[static_cast<size_t>(rank.rank)] = step_s;
  auto& rs = stats_.ranks[static_cast<size_t>(rank.rank)];
  const bool communicate = sync && config_.ranks > 1;
  double pending_s = h2d_s;  // copy time not slept yet
  if (communicate && config_.sharding == Sharding::kFull) {
    if (pending_s > 0) sg4::this_actor::sleep_for(pending_s);
    pending_s = 0;
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
  const double t0 = sg4::Engine::get_clock() + pending_s;
  stats_.gpu_busy_s += step_s;
  rs.gpu_busy_s += step_s;
  // The span covers the compute only; the collectives have their own.
  if (recorder_.timeline() && recorder_.Reserve(1)) recorder_.Add({rank.rank, kTrackGpu, "GPU step", t0, step_s});
  if (!communicate) {
    sg4::this_actor::sleep_for(pending_s + step_s);
    StepWakeUp(rank);
    StepHostCpu(rank);
    return;
  }
  const double backward_s = step_s * config_.overlap;
  sg4::this_actor::sleep_for(pending_s + (step_s - backward_s));
  StepWakeUp(rank);
  StepHostCpu(rank);
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
  // Each rank's step-time jitter draws from a stream of its own ("step", then the rank).
  Rng step_rng(Rng::DeriveSeed(Rng::DeriveSeed(scenario.seed, 0x73746570), static_cast<uint64_t>(r)));
  node->AddMemory(in_.model.memory.main_base_bytes +
                  scenario.loader.num_workers * in_.model.memory.worker_base_pss_bytes);
  auto& rs = stats_.ranks[static_cast<size_t>(r)];
  int64_t optimizer_steps = 0, micro_in_step = 0;
  double last_step_end_s = 0;
  bool done = false;
  for (int64_t epoch = 0; !done; ++epoch) {
    const bool forked = loader.StartEpoch(epoch);
    // A later epoch's fork; the first epoch's is part of the run's warm-up, which calibration leaves
    // out of the steady step (FindStepWarmup).
    if (forked && epoch > 0) after_fork_cpu_s_[static_cast<size_t>(r)] = in_.model.gpu.step_host_cpu_after_fork_s;
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

      const double h2d_s = CopyToGpuS(batch.bytes);
      // Gradient accumulation: only the last micro-batch syncs; an epoch-bounded run also steps at
      // the end of each epoch with what it accumulated.
      const bool epoch_end = b + 1 == batches_per_epoch;
      const bool sync = ++micro_in_step == grad_accum || (epoch_end && target_epochs > 0);
      Step(rank, &step_rng, sync, h2d_s);
      node->AddMemory(-batch.bytes * in_.model.memory.batch_bytes_scale);
      stats_.samples_consumed += batch.size;
      rs.samples += batch.size;
      ++stats_.micro_batches;
      if (sync) {
        stats_.step_s.push_back(sg4::Engine::get_clock() - last_step_end_s);
        last_step_end_s = step_begin_s_[static_cast<size_t>(r)] = sg4::Engine::get_clock();
        micro_in_step = 0;
        ++optimizer_steps;
        if (target_steps > 0 && optimizer_steps >= target_steps) done = true;
        if (checkpoint_ && checkpoint_->DueAfter(optimizer_steps)) {
          const double save_start_s = sg4::Engine::get_clock();
          checkpoint_->Save(rank, optimizer_steps);
          recorder_.Span(r, kTrackMain, "checkpoint save", save_start_s);
        }
      }
    }
    if (target_epochs > 0 && epoch + 1 >= target_epochs) done = true;
  }
  stats_.makespan_s = std::max(stats_.makespan_s, sg4::Engine::get_clock());
  if (checkpoint_) checkpoint_->Finish(rank);  // after training's end: the last async write lands
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

// The most actors alive at once (of the simulated nodes, when folded): per rank its training loop, its
// workers and pin-memory thread, and the per-message tree's two actors per tree; per node the daemon
// of its cores (sim/core_scheduler.h).
double Simulation::ActorCount() const {
  const auto& loader = in_.scenario.loader;
  double per_rank = 1 + loader.num_workers + (loader.pin_memory ? 1 : 0);
  if (config_.algorithm == CollectiveAlgorithm::kTree &&
      config_.collective_fidelity == scenarios::CollectiveFidelity::kPerMessage) {
    per_rank += 4;
  }
  return per_rank * simulated_ranks_ + folding_.simulated_nodes;
}

Result<SimRawStats> Simulation::Run() {
  std::vector<std::string> args_storage = {"simreplay", "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                                           "--log=root.thresh:critical",
                                           "--cfg=contexts/stack-size:" + std::to_string(scenarios::kActorStackKib)};
  // Past the mappings guard pages need (scenarios/simulation_budget.h), stacks go unguarded rather
  // than SimGrid aborting. Guards change no simulated time.
  if (ActorCount() > scenarios::kMaxGuardedActors) args_storage.emplace_back("--cfg=contexts/guard-size:0");
  std::vector<char*> argv;
  for (auto& a : args_storage) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  sg4::Engine engine(&argc, argv.data());
  platform_ = BuildPlatform(topology_, in_.model, config_);
  tcp_gamma_ = simgrid::config::get_value<double>("network/TCP-gamma");
  CollectLinkCapacities();
  // A folded cluster keeps the per-rank and per-node figures of the nodes it simulates.
  stats_.ranks.assign(static_cast<size_t>(simulated_ranks_), RankStats{});
  stats_.nodes.assign(static_cast<size_t>(folding_.simulated_nodes), NodeStats{});
  stats_.simulated_nodes = folding_.simulated_nodes;
  step_begin_s_.assign(static_cast<size_t>(simulated_ranks_), 0.0);
  step_draw_s_.assign(static_cast<size_t>(simulated_ranks_), 0.0);
  after_fork_cpu_s_.assign(static_cast<size_t>(simulated_ranks_), 0.0);
  stats_.per_rank_samples = sampler_.per_rank_samples();
  stats_.batches_per_epoch = sampler_.batches_per_epoch();
  for (int n = 0; n < config_.nodes; ++n) {
    nodes_.push_back(
        std::make_unique<NodeState>(n, platform_.nodes[static_cast<size_t>(n)], platform_, in_, config_, &recorder_));
    if (config_.nodes_share_cores && n > 0) nodes_.back()->ShareCoresOf(nodes_.front().get());
    if (config_.shared_storage) {
      nodes_.back()->SetStorageRoute(
          CountLinkClasses(topology_, topology_.Route(topology_.StorageVertex(), topology_.CpuVertex(n))));
    }
  }
  for (int r = 0; r < simulated_ranks_; ++r) {
    const int node = r / config_.gpus_per_node;
    ranks_.push_back(RankContext{r, node, r % config_.gpus_per_node, platform_.GpuOfRank(r, config_.gpus_per_node),
                                 config_.rank_step_scale[static_cast<size_t>(r)]});
    stats_.ranks[static_cast<size_t>(r)].node = node;
  }
  for (int r = 0; r < simulated_ranks_; ++r) {
    const RankContext& rank = ranks_[static_cast<size_t>(r)];
    loaders_.push_back(
        std::make_unique<DataLoader>(rank, nodes_[static_cast<size_t>(rank.node)].get(), sampler_, in_, config_));
  }
  if (config_.ranks > 1) {
    std::vector<NodeState*> nodes;
    for (auto& node : nodes_) nodes.push_back(node.get());
    collectives_ = MakeCollectives(config_, topology_, platform_, in_.model, nodes, &stats_.link_load,
                                   !options_.full_reference);
    together_barrier_ = sg4::Barrier::create(static_cast<unsigned>(simulated_ranks_));
  }
  if (config_.checkpoint.enabled()) {
    // Saves to the shared store cross the node's NIC and the storage link: their bytes count in the
    // link statistics as the reads' do.
    std::vector<LinkClassCounts> storage_routes;
    if (config_.checkpoint.target == scenarios::CheckpointTarget::kShared) {
      for (int n = 0; n < config_.nodes; ++n) {
        storage_routes.push_back(
            CountLinkClasses(topology_, topology_.Route(topology_.CpuVertex(n), topology_.StorageVertex())));
      }
    }
    checkpoint_ = std::make_unique<CheckpointSaver>(config_, platform_, std::move(storage_routes), &stats_.link_load,
                                                    simulated_ranks_);
  }
  first_batch_s_.assign(static_cast<size_t>(simulated_ranks_), -1.0);
  for (int r = 0; r < simulated_ranks_; ++r) {
    sg4::Actor::create("rank" + std::to_string(r) + "-main",
                       nodes_[static_cast<size_t>(ranks_[static_cast<size_t>(r)].node)]->cpu(),
                       [this, r] { MainLoop(r); });
  }
  engine.run();
  if (mains_finished_ != simulated_ranks_)
    return Status::Internal("simulation deadlocked: a training loop never finished");
  if (checkpoint_) checkpoint_->Collect(&stats_.checkpoint);
  stats_.time_to_first_batch_s = *std::max_element(first_batch_s_.begin(), first_batch_s_.end());
  stats_.worker_count = static_cast<double>(in_.scenario.loader.num_workers) * config_.ranks;
  for (int n = 0; n < folding_.simulated_nodes; ++n) {
    nodes_[static_cast<size_t>(n)]->Finish(sg4::Engine::get_clock());
    stats_.nodes[static_cast<size_t>(n)] = nodes_[static_cast<size_t>(n)]->stats();
    stats_.storage_busy_s = std::max(stats_.storage_busy_s, stats_.nodes[static_cast<size_t>(n)].storage_busy_s);
  }
  if (folding_.folded()) {
    ScaleToCluster();
    stats_.rank_folding_wait_spread = overhead_spread_s_ / std::max(stats_.makespan_s, 1e-12);
  }
  return std::move(stats_);
}

// A folded run's sums over ranks and nodes, from the simulated ones to the whole cluster (every node
// is the same system, so each stands for nodes / simulated nodes of them). Lists of per-step values
// (waits, step intervals) stay samples of the simulated ranks: their distributions are the cluster's.
void Simulation::ScaleToCluster() {
  const int64_t all = config_.ranks, simulated = simulated_ranks_;
  const double f = static_cast<double>(all) / static_cast<double>(simulated);
  stats_.samples_consumed = stats_.samples_consumed * all / simulated;
  stats_.micro_batches = stats_.micro_batches * all / simulated;
  stats_.worker_starts = stats_.worker_starts * all / simulated;
  stats_.storage_read_bytes = stats_.storage_read_bytes * all / simulated;
  for (double* sum : {&stats_.gpu_busy_s, &stats_.h2d_s, &stats_.collective_s, &stats_.exposed_comm_s,
                      &stats_.cpu_busy_core_s, &stats_.worker_busy_s, &stats_.main_busy_s, &stats_.pin_busy_s}) {
    *sum *= f;
  }
  // Node-local checkpoint writes: every node's writers wrote what the simulated nodes' did (rank 0
  // alone writes once, and it is simulated).
  if (config_.checkpoint.enabled() && config_.checkpoint.writers != scenarios::CheckpointWriters::kRank0) {
    stats_.checkpoint.bytes_written *= f;
  }
}

RankFolding PlanFolding(const SimInput& input, const RunConfig& config, const SimOptions& options) {
  return PlanRankFolding(input, config, !options.full_reference && input.scenario.rank_folding);
}

Status CheckFits(const SimInput& input, const RunConfig& config, const RankFolding& folding) {
  const double bytes = scenarios::EstimatedSimulationBytes(input.scenario, folding.simulated_nodes);
  if (bytes <= scenarios::SimulationMemoryLimitBytes()) return Status::Ok();
  const std::string how = folding.folded() ? fmt::format("folded to {} nodes", folding.simulated_nodes)
                                           : std::string("every rank");
  const std::string why_not_folded =
      folding.folded() ? std::string() : ", and rank folding does not apply: " + folding.off_reason;
  return Status::InvalidArgument(fmt::format(
      "{}{} nodes x {} GPUs with {} workers per rank need an estimated {} to simulate {}, more than {}{} "
      "(fewer nodes, workers or steps)",
      input.scenario.path.empty() ? "" : input.scenario.path + ": cluster: ", config.nodes, config.gpus_per_node,
      input.scenario.loader.num_workers, scenarios::ShowGigabytes(bytes), how, scenarios::DescribeSimulationMemoryLimit(),
      why_not_folded));
}

}  // namespace

Status CheckSimulationFits(const SimInput& input, const SimOptions& options) {
  const RunConfig config = RunConfig::Resolve(input);
  return CheckFits(input, config, PlanFolding(input, config, options));
}

double EstimatedBytesAsSimulated(const SimInput& input, const SimOptions& options) {
  const RunConfig config = RunConfig::Resolve(input);
  const RankFolding folding = PlanFolding(input, config, options);
  const double as_planned = scenarios::EstimatedSimulationBytes(input.scenario, folding.simulated_nodes);
  if (!folding.folded()) return as_planned;
  // A fold whose ranks' waits differ too much falls back to every rank where that fits (RunSimulation).
  const double full = scenarios::EstimatedSimulationBytes(input.scenario);
  const bool may_fall_back = full <= std::min(kMaxUnfoldedFallbackBytes, scenarios::SimulationMemoryLimitBytes());
  return may_fall_back ? std::max(as_planned, full) : as_planned;
}

Result<SimRawStats> RunSimulation(const SimInput& input, const SimOptions& options) {
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
  const RankFolding folding = PlanFolding(input, config, options);
  SIMREPLAY_RETURN_IF_ERROR(CheckFits(input, config, folding));
  if (!folding.folded()) return Simulation(input, options, config, sampler, folding).Run();
  // Folded, in a child of its own (SimGrid runs once per process), so that a fold whose ranks' waits
  // differ too much can be refused and the cluster simulated in full here (sim/rank_folding.h).
  auto attempt = RunIsolated({[&]() -> Result<std::string> {
                               auto stats = Simulation(input, options, config, sampler, folding).Run();
                               if (!stats.ok()) return stats.status();
                               return EncodeRawStats(*stats);
                             }},
                             1);
  if (!attempt[0].ok()) return attempt[0].status();
  auto folded = DecodeRawStats(*attempt[0]);
  if (!folded.ok() || folded->rank_folding_wait_spread <= kMaxFoldedWaitSpread ||
      scenarios::EstimatedSimulationBytes(input.scenario) >
          std::min(kMaxUnfoldedFallbackBytes, scenarios::SimulationMemoryLimitBytes())) {
    return folded;
  }
  RankFolding full = folding;
  full.simulated_nodes = full.nodes;
  auto stats = Simulation(input, options, config, sampler, full).Run();
  if (stats.ok()) stats->rank_folding_wait_spread = folded->rank_folding_wait_spread;
  return stats;
}

}  // namespace simreplay::sim
