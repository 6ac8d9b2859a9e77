// The SimGrid model of one node running G training ranks, each with its own PyTorch DataLoader.
//
// Actors per rank (docs/modelling.md, "DataLoader semantics"):
//   main loop  - iterator start (spawn workers or resume), priming P x W tasks, in-order next() with a
//                reorder buffer (head-of-line blocking), one new task per batch handed over, H2D copy,
//                GPU step, optimizer-step barrier + collective.
//   workers    - task k -> worker k mod W; per sample read -> decode+augment (one CPU execution), then
//                collate; results go to one shared result queue in completion order.
//   pin thread - pins batches in arrival order (pin_memory with workers).
// Every CPU cost is a SimGrid execution on the node host, so oversubscribed cores slow every process.
// A recorded CPU-second is 1e9 flops; the host runs 1e9 x core_speed_scale flops per second per core.
#include "sim/simulation.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <simgrid/s4u.hpp>

#include "common/check.h"
#include "common/random.h"
#include "sim/sim_queue.h"

namespace simreplay::sim {

namespace {

namespace sg4 = simgrid::s4u;

constexpr double kFlopsPerCpuSecond = 1e9;

struct Task {
  int64_t epoch = 0;
  int64_t batch = 0;
  bool stop = false;
};

struct FinishedBatch {
  int64_t batch = -1;  // -1: stop marker for the pin thread
  int64_t size = 0;
  double bytes = 0;
  double ready_s = 0;
};

// One DataLoader iterator's queues: fresh per epoch for non-persistent workers.
struct IteratorQueues {
  std::vector<std::unique_ptr<SimQueue<Task>>> index_queues;  // one per worker
  SimQueue<FinishedBatch> results;                            // workers -> pin thread or main
  SimQueue<FinishedBatch> pinned;                             // pin thread -> main
};

class NodeSimulation {
 public:
  explicit NodeSimulation(const SimInput& in) : in_(in), loader_(in.scenario.loader) {}

  Result<SimRawStats> Run();

 private:
  // Platform and run shape.
  void BuildPlatform();
  void StartBackgroundLoad();
  void PlanEpochs();

  // Actor bodies.
  struct EpochState;
  void MainLoop(int rank);
  void Worker(int rank, int worker, IteratorQueues* queues);
  void PinThread(int rank, IteratorQueues* queues);

  // Pieces of work.
  IteratorQueues* StartIterator(int rank, int64_t epoch, IteratorQueues* previous);
  FinishedBatch NextBatch(int rank, int64_t batch, EpochState* state);
  void GpuStep(int rank, Rng* rng);
  void Synchronize(int rank);
  FinishedBatch LoadBatch(int rank, int track, int64_t epoch, int64_t batch);
  double CostScale(int track) const;  // recorded CPU cost -> simulated, in a worker or inline
  void LoadBatchAggregated(int rank, int track, int64_t first, FinishedBatch* done);
  void RecordSample(int rank, int track, const replay::SampleCost& cost, double t0, double t1, double t2,
                    double cpu_start_s = -1);
  void ReadSample(const replay::SampleCost& cost, int64_t ordinal);
  void Execute(double cpu_s);
  void CopyToGpu(int rank, double bytes);
  double DrawStepTime(Rng* rng) const;

  int64_t BatchSize(int64_t batch) const {
    return batch + 1 == batches_per_epoch_ ? last_batch_size_ : loader_.batch_size;
  }
  const replay::SampleCost& CostAt(int64_t ordinal) const {
    return in_.costs->samples[order_[static_cast<size_t>(ordinal % static_cast<int64_t>(order_.size()))]];
  }
  void AddMemory(double delta_bytes) {
    memory_bytes_ += delta_bytes;
    stats_.peak_host_memory_bytes = std::max(stats_.peak_host_memory_bytes, memory_bytes_);
  }
  void Span(int rank, int track, const char* name, double start_s) {
    if (!in_.record_timeline) return;
    if (static_cast<int64_t>(stats_.timeline.size()) >= in_.scenario.timeline_max_events) {
      stats_.timeline_truncated = true;
      return;
    }
    stats_.timeline.push_back(TimelineEvent{rank, track, name, start_s, sg4::Engine::get_clock() - start_s});
  }

  const SimInput& in_;
  const scenarios::LoaderConfig& loader_;
  int ranks_ = 1;
  sg4::Host* node_ = nullptr;
  sg4::Disk* disk_ = nullptr;
  std::vector<sg4::Host*> gpus_;
  sg4::SemaphorePtr storage_slots_;
  sg4::BarrierPtr step_barrier_;
  std::vector<uint32_t> order_;
  int64_t per_rank_samples_ = 0;
  int64_t batches_per_epoch_ = 0;
  int64_t last_batch_size_ = 0;
  int64_t target_steps_ = 0;   // optimizer steps per rank, when the run is step-bounded
  int64_t target_epochs_ = 0;  // when the run is epoch-bounded
  double collate_per_sample_s_ = 0;
  double memory_bytes_ = 0;
  int storage_in_flight_ = 0;
  double storage_busy_since_s_ = 0;
  int mains_finished_ = 0;
  std::vector<double> first_batch_s_;
  std::vector<std::unique_ptr<IteratorQueues>> iterators_;  // kept until the end: actors may hold them
  SimRawStats stats_;
};

void NodeSimulation::BuildPlatform() {
  const auto& model = in_.model;
  auto* zone = sg4::create_full_zone("node");
  node_ = zone->create_host("node0", kFlopsPerCpuSecond * model.cpu.core_speed_scale);
  node_->set_core_count(in_.cpu_cores);
  const double slowdown = model.cpu.busy_core_slowdown;
  const int cores = in_.cpu_cores;
  if (slowdown > 0 && cores > 1) {
    // The node's capacity with n executions running: min(n, C) cores, each slowed by the shared-core
    // factor (models/model_params.h). Single-threaded executions stay capped at one core each.
    node_->set_sharing_policy(sg4::Host::SharingPolicy::NONLINEAR, [slowdown, cores](double capacity, int n) {
      const int busy = std::min(std::max(n, 1), cores);
      return capacity / cores * busy / (1.0 + slowdown * (busy - 1) / (cores - 1));
    });
  }
  disk_ = node_->create_disk("disk0", model.storage.bandwidth_bytes_per_s, model.storage.bandwidth_bytes_per_s);
  node_->seal();
  for (int r = 0; r < ranks_; ++r) {
    auto* gpu = zone->create_host("gpu" + std::to_string(r), kFlopsPerCpuSecond);
    gpu->seal();
    auto* pcie = zone->create_link("pcie" + std::to_string(r), model.pcie.h2d_pinned_bytes_per_s);
    pcie->set_latency(model.pcie.latency_s);
    pcie->seal();
    zone->add_route(node_->get_netpoint(), gpu->get_netpoint(), nullptr, nullptr, {sg4::LinkInRoute(pcie)}, true);
    gpus_.push_back(gpu);
  }
  zone->seal();
  storage_slots_ = sg4::Semaphore::create(static_cast<unsigned>(model.storage.max_concurrency));
  if (ranks_ > 1) step_barrier_ = sg4::Barrier::create(static_cast<unsigned>(ranks_));
}

// Other processes on the node (measured by calibration, or set in the scenario): B busy cores as
// ceil(B) endless executions, each capped at its share of one core, competing for the cores like any
// other process. Their work is not counted in cpu_utilization.
void NodeSimulation::StartBackgroundLoad() {
  const double busy = in_.background_threads;
  for (int i = 0; i < static_cast<int>(std::ceil(busy)); ++i) {
    const double share = std::min(1.0, busy - i);
    sg4::Actor::create("background" + std::to_string(i), node_, [this, share] {
      sg4::this_actor::exec_init(1e30)->set_bound(share * node_->get_speed())->start()->wait();
    })->daemonize();
  }
}

void NodeSimulation::PlanEpochs() {
  const auto& train = in_.scenario.train;
  int64_t dataset = train.dataset_samples > 0 ? train.dataset_samples : in_.costs->distinct_indices;
  // DistributedSampler pads so every rank gets ceil(N / ranks) samples.
  per_rank_samples_ = (dataset + ranks_ - 1) / ranks_;
  int64_t bs = loader_.batch_size;
  batches_per_epoch_ = loader_.drop_last ? per_rank_samples_ / bs : (per_rank_samples_ + bs - 1) / bs;
  last_batch_size_ = loader_.drop_last ? bs : per_rank_samples_ - (batches_per_epoch_ - 1) * bs;
  target_steps_ = train.steps;
  target_epochs_ = train.epochs;
  collate_per_sample_s_ = in_.costs->measured.mean_collate_per_sample_s >= 0
                              ? in_.costs->measured.mean_collate_per_sample_s
                              : in_.model.cpu.collate_per_sample_s;
  order_.resize(in_.costs->samples.size());
  std::iota(order_.begin(), order_.end(), 0u);
  if (in_.scenario.replay_order == "shuffled") {
    Rng rng(in_.scenario.seed ^ 0x5eedc057ULL);
    for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng.Below(i)]);
  }
}

void NodeSimulation::Execute(double cpu_s) {
  if (cpu_s <= 0) return;
  sg4::this_actor::execute(cpu_s * kFlopsPerCpuSecond);
  stats_.cpu_busy_core_s += cpu_s / in_.model.cpu.core_speed_scale;
}

void NodeSimulation::ReadSample(const replay::SampleCost& cost, int64_t ordinal) {
  const auto& storage = in_.model.storage;
  if (cost.read_s <= 0 && cost.read_bytes <= 0) return;
  if (storage_in_flight_++ == 0) storage_busy_since_s_ = sg4::Engine::get_clock();
  if (storage.mode == "recorded") {
    sg4::this_actor::sleep_for(cost.read_s);
  } else if (storage.page_cache_hit_ratio > 0 && Rng::HashUnit(static_cast<uint64_t>(ordinal) % order_.size(),
                                                               in_.scenario.seed) < storage.page_cache_hit_ratio) {
    sg4::this_actor::sleep_for(static_cast<double>(cost.read_bytes) / storage.page_cache_bytes_per_s);
  } else {
    storage_slots_->acquire();
    sg4::this_actor::sleep_for(storage.latency_s);
    if (cost.read_bytes > 0) disk_->read(static_cast<sg_size_t>(cost.read_bytes));
    storage_slots_->release();
  }
  stats_.storage_read_bytes += cost.read_bytes;
  if (--storage_in_flight_ == 0) stats_.storage_busy_s += sg4::Engine::get_clock() - storage_busy_since_s_;
}

double NodeSimulation::CostScale(int track) const {
  const auto& cpu = in_.model.cpu;
  return track == kTrackMain ? cpu.worker_cost_scale / cpu.worker_overhead_factor : cpu.worker_cost_scale;
}

FinishedBatch NodeSimulation::LoadBatch(int rank, int track, int64_t epoch, int64_t batch) {
  const double scale = CostScale(track);
  const double start_s = sg4::Engine::get_clock();
  FinishedBatch done{batch, BatchSize(batch), 0, 0};
  const int64_t first = epoch * per_rank_samples_ * ranks_ + rank * per_rank_samples_ + batch * loader_.batch_size;
  if (in_.scenario.replay_fidelity == "batch") {
    LoadBatchAggregated(rank, track, first, &done);
  } else {
    for (int64_t i = 0; i < done.size; ++i) {
      const int64_t ordinal = first + i;
      const auto& cost = CostAt(ordinal);
      double t0 = sg4::Engine::get_clock();
      ReadSample(cost, ordinal);
      double t1 = sg4::Engine::get_clock();
      Execute((cost.decode_s + cost.augment_s) * scale);
      RecordSample(rank, track, cost, t0, t1, sg4::Engine::get_clock());
      done.bytes += static_cast<double>(cost.out_bytes);
    }
  }
  AddMemory(done.bytes * in_.model.memory.batch_bytes_scale);
  double t_collate = sg4::Engine::get_clock();
  Execute(collate_per_sample_s_ * static_cast<double>(done.size) * scale);
  Span(rank, track, "collate", t_collate);
  done.ready_s = sg4::Engine::get_clock();
  if (track != kTrackMain) stats_.worker_busy_s += done.ready_s - start_s;
  return done;
}

// fidelity "batch": the batch's recorded reads as one delay and its CPU work as one execution. Exact
// when the worker's CPU share is constant over the batch; 10-30x fewer simulation events. Storage in
// "model" mode still issues one read per sample (concurrency and latency are per operation).
void NodeSimulation::LoadBatchAggregated(int rank, int track, int64_t first, FinishedBatch* done) {
  const double scale = CostScale(track);
  double read_s = 0, cpu_s = 0;
  const double t0 = sg4::Engine::get_clock();
  for (int64_t i = 0; i < done->size; ++i) {
    const auto& cost = CostAt(first + i);
    if (in_.model.storage.mode == "recorded") {
      read_s += cost.read_s;
      stats_.storage_read_bytes += cost.read_bytes;
    } else {
      ReadSample(cost, first + i);
    }
    cpu_s += cost.decode_s + cost.augment_s;
    done->bytes += static_cast<double>(cost.out_bytes);
  }
  if (read_s > 0) {
    sg4::this_actor::sleep_for(read_s);
    stats_.storage_busy_s += read_s;  // approximation: reads of different workers may overlap
  }
  const double t1 = sg4::Engine::get_clock();
  Execute(cpu_s * scale);
  const double t2 = sg4::Engine::get_clock();
  // Attribute the batch's read and CPU time back to its samples in proportion to their recorded costs.
  double read_at = t0, cpu_at = t1;
  for (int64_t i = 0; i < done->size; ++i) {
    const auto& cost = CostAt(first + i);
    double r = read_s > 0 ? (t1 - t0) * cost.read_s / read_s : 0;
    double c = cpu_s > 0 ? (t2 - t1) * (cost.decode_s + cost.augment_s) / cpu_s : 0;
    RecordSample(rank, track, cost, read_at, read_at + r, read_at + r + c, cpu_at);
    read_at += r;
    cpu_at += c;
  }
}

// Stage statistics and timeline spans of one sample: read [t0, t1), then decode + augment for
// (t2 - t1) starting at cpu_start_s (default t1), split by the recorded decode/augment share.
void NodeSimulation::RecordSample(int rank, int track, const replay::SampleCost& cost, double t0, double t1, double t2,
                                  double cpu_start_s) {
  if (cpu_start_s < 0) cpu_start_s = t1;
  const double cpu_total = cost.decode_s + cost.augment_s;
  const double decode_share = cpu_total > 0 ? cost.decode_s / cpu_total : 1.0;
  const double cpu_s = t2 - t1;
  stats_.read_s.push_back(t1 - t0);
  stats_.decode_s.push_back(cpu_s * decode_share);
  stats_.augment_s.push_back(cpu_s * (1 - decode_share));
  if (!in_.record_timeline) return;
  if (static_cast<int64_t>(stats_.timeline.size()) + 3 > in_.scenario.timeline_max_events) {
    stats_.timeline_truncated = true;
    return;
  }
  if (t1 > t0) stats_.timeline.push_back({rank, track, "read", t0, t1 - t0});
  stats_.timeline.push_back({rank, track, "decode", cpu_start_s, cpu_s * decode_share});
  if (decode_share < 1) {
    stats_.timeline.push_back({rank, track, "augment", cpu_start_s + cpu_s * decode_share, cpu_s * (1 - decode_share)});
  }
}

void NodeSimulation::Worker(int rank, int worker, IteratorQueues* queues) {
  double t0 = sg4::Engine::get_clock();
  sg4::this_actor::sleep_for(in_.model.cpu.worker_startup_s);
  Span(rank, kTrackWorker0 + worker, "startup", t0);
  while (true) {
    Task task = queues->index_queues[static_cast<size_t>(worker)]->Pop();
    if (task.stop) return;
    queues->results.Push(LoadBatch(rank, kTrackWorker0 + worker, task.epoch, task.batch));
  }
}

void NodeSimulation::PinThread(int rank, IteratorQueues* queues) {
  while (true) {
    FinishedBatch batch = queues->results.Pop();
    if (batch.batch < 0) return;
    double t0 = sg4::Engine::get_clock();
    Execute(batch.bytes / in_.model.cpu.pin_bytes_per_s);
    stats_.pin_busy_s += sg4::Engine::get_clock() - t0;
    Span(rank, kTrackPin, "pin", t0);
    queues->pinned.Push(batch);
  }
}

IteratorQueues* NodeSimulation::StartIterator(int rank, int64_t epoch, IteratorQueues* previous) {
  const int workers = loader_.num_workers;
  double t0 = sg4::Engine::get_clock();
  IteratorQueues* queues = previous;
  if (previous == nullptr || !loader_.persistent_workers) {
    if (previous != nullptr) {  // shut the previous epoch's workers down
      for (auto& q : previous->index_queues) q->Push(Task{0, 0, true});
      if (loader_.pin_memory) previous->results.Push(FinishedBatch{});
    }
    iterators_.push_back(std::make_unique<IteratorQueues>());
    queues = iterators_.back().get();
    // The main process starts workers one after another; each then pays its own start-up.
    for (int w = 0; w < workers; ++w) {
      sg4::this_actor::sleep_for(in_.model.cpu.worker_spawn_s);
      queues->index_queues.push_back(std::make_unique<SimQueue<Task>>());
      auto actor = sg4::Actor::create("r" + std::to_string(rank) + "w" + std::to_string(w), node_,
                                      [this, rank, w, queues] { Worker(rank, w, queues); });
      actor->daemonize();
      ++stats_.worker_starts;
    }
    if (loader_.pin_memory) {
      sg4::Actor::create("r" + std::to_string(rank) + "pin", node_, [this, rank, queues] {
        PinThread(rank, queues);
      })->daemonize();
    }
    Span(rank, kTrackMain, "iter() start workers", t0);
  } else {
    // persistent_workers: _ResumeIteration to every worker and wait for all acknowledgements.
    sg4::this_actor::sleep_for(in_.model.cpu.worker_resume_s * workers);
    Span(rank, kTrackMain, "iter() resume", t0);
  }
  int64_t primed = std::min<int64_t>(static_cast<int64_t>(loader_.prefetch_factor) * workers, batches_per_epoch_);
  for (int64_t t = 0; t < primed; ++t)
    queues->index_queues[static_cast<size_t>(t % workers)]->Push(Task{epoch, t, false});
  return queues;
}

double NodeSimulation::DrawStepTime(Rng* rng) const {
  const auto& gpu = in_.model.gpu;
  double mean = in_.step_time_s;
  if (mean <= 0 || gpu.step_cv <= 0 || gpu.distribution == "constant") return mean;
  if (gpu.distribution == "normal") return std::max(0.0, mean * (1 + gpu.step_cv * rng->Normal()));
  double sigma2 = std::log(1 + gpu.step_cv * gpu.step_cv);
  return std::exp(std::log(mean) - sigma2 / 2 + std::sqrt(sigma2) * rng->Normal());
}

void NodeSimulation::CopyToGpu(int rank, double bytes) {
  if (bytes <= 0) return;
  double t0 = sg4::Engine::get_clock();
  sg4::Comm::sendto(node_, gpus_[static_cast<size_t>(rank)], static_cast<uint64_t>(bytes));
  if (!loader_.pin_memory) {
    // A pageable source is staged through a bounce buffer: the copy runs at the pageable rate. (3.32
    // cannot cap the rate of a host-to-host comm, so the difference is added as a delay.)
    const auto& pcie = in_.model.pcie;
    double extra_s = bytes / pcie.h2d_pageable_bytes_per_s - bytes / pcie.h2d_pinned_bytes_per_s;
    if (extra_s > 0) sg4::this_actor::sleep_for(extra_s);
  }
  stats_.h2d_s += sg4::Engine::get_clock() - t0;
  Span(rank, kTrackGpu, "H2D", t0);
}

// One DataLoader iterator's state as the training loop sees it (per epoch).
struct NodeSimulation::EpochState {
  int64_t epoch = 0;
  IteratorQueues* queues = nullptr;
  std::map<int64_t, FinishedBatch> reorder;  // _task_info: results that arrived before their turn
  int64_t next_task = 0;                     // next task index to send
};

// next(): batch b of the epoch, loaded inline (num_workers=0) or taken in order from the workers.
FinishedBatch NodeSimulation::NextBatch(int rank, int64_t b, EpochState* state) {
  const double t0 = sg4::Engine::get_clock();
  if (loader_.num_workers == 0) {
    FinishedBatch batch = LoadBatch(rank, kTrackMain, state->epoch, b);
    if (loader_.pin_memory) Execute(batch.bytes / in_.model.cpu.pin_bytes_per_s);
    stats_.main_busy_s += sg4::Engine::get_clock() - t0;
    return batch;
  }
  SimQueue<FinishedBatch>& source = loader_.pin_memory ? state->queues->pinned : state->queues->results;
  while (!state->reorder.count(b)) {
    FinishedBatch arrived = source.Pop();
    state->reorder[arrived.batch] = arrived;
  }
  FinishedBatch batch = state->reorder[b];
  state->reorder.erase(b);
  stats_.queue_wait_s.push_back(std::max(0.0, sg4::Engine::get_clock() - batch.ready_s));
  const double t_main = sg4::Engine::get_clock();
  Execute(in_.model.cpu.main_per_batch_s);
  stats_.main_busy_s += sg4::Engine::get_clock() - t_main;
  // Handing a batch over is what sends the next task (_try_put_index), to worker (task mod W).
  if (state->next_task < batches_per_epoch_) {
    state->queues->index_queues[static_cast<size_t>(state->next_task % loader_.num_workers)]->Push(
        Task{state->epoch, state->next_task, false});
    ++state->next_task;
  }
  return batch;
}

// The model step of one micro-batch on the GPU (skipped in the pipeline-only run).
void NodeSimulation::GpuStep(int rank, Rng* rng) {
  if (in_.pipeline_only) return;
  const double step_s = DrawStepTime(rng);
  const double t0 = sg4::Engine::get_clock();
  sg4::this_actor::sleep_for(step_s);
  stats_.gpu_busy_s += step_s;
  Span(rank, kTrackGpu, "GPU step", t0);
}

// The optimizer step: every rank waits for the slowest at the barrier, then the all-reduce runs.
void NodeSimulation::Synchronize(int rank) {
  if (ranks_ <= 1 || in_.pipeline_only) return;
  const double t0 = sg4::Engine::get_clock();
  step_barrier_->wait();
  sg4::this_actor::sleep_for(in_.model.CollectiveTimeS(ranks_));
  stats_.collective_s += sg4::Engine::get_clock() - t0;
  Span(rank, kTrackGpu, "all-reduce", t0);
}

void NodeSimulation::MainLoop(int rank) {
  const int workers = loader_.num_workers;
  const int grad_accum = in_.scenario.train.grad_accum;
  Rng step_rng(in_.scenario.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(rank) + 1);
  AddMemory(in_.model.memory.main_base_bytes + workers * in_.model.memory.worker_base_pss_bytes);
  EpochState state;
  int64_t optimizer_steps = 0, micro_in_step = 0;
  double last_step_end_s = 0;
  bool done = false;
  for (int64_t epoch = 0; !done; ++epoch) {
    state.epoch = epoch;
    state.reorder.clear();
    if (workers > 0) state.queues = StartIterator(rank, epoch, state.queues);
    state.next_task = std::min<int64_t>(static_cast<int64_t>(loader_.prefetch_factor) * workers, batches_per_epoch_);
    for (int64_t b = 0; b < batches_per_epoch_ && !done; ++b) {
      const double t0 = sg4::Engine::get_clock();
      FinishedBatch batch = NextBatch(rank, b, &state);
      const double wait = sg4::Engine::get_clock() - t0;
      stats_.wait_s.push_back(wait);
      Span(rank, kTrackMain, "wait for data", t0);
      double& first_batch = first_batch_s_[static_cast<size_t>(rank)];
      if (first_batch < 0) first_batch = sg4::Engine::get_clock();
      if (b == 0 && epoch > 0 && rank == 0) stats_.epoch_boundary_stall_s += wait;

      CopyToGpu(rank, batch.bytes);
      GpuStep(rank, &step_rng);
      AddMemory(-batch.bytes * in_.model.memory.batch_bytes_scale);
      stats_.samples_consumed += batch.size;
      ++stats_.micro_batches;
      // Gradient accumulation: only the last micro-batch syncs; an epoch-bounded run also steps at
      // the end of each epoch with what it accumulated.
      const bool epoch_end = b + 1 == batches_per_epoch_;
      if (++micro_in_step == grad_accum || (epoch_end && target_epochs_ > 0)) {
        Synchronize(rank);
        stats_.step_s.push_back(sg4::Engine::get_clock() - last_step_end_s);
        last_step_end_s = sg4::Engine::get_clock();
        micro_in_step = 0;
        ++optimizer_steps;
        if (target_steps_ > 0 && optimizer_steps >= target_steps_) done = true;
      }
    }
    if (target_epochs_ > 0 && epoch + 1 >= target_epochs_) done = true;
  }
  stats_.makespan_s = std::max(stats_.makespan_s, sg4::Engine::get_clock());
  ++mains_finished_;
}

Result<SimRawStats> NodeSimulation::Run() {
  ranks_ = in_.scenario.hardware.gpus;
  if (in_.costs == nullptr || in_.costs->samples.empty())
    return Status::InvalidArgument("no per-sample costs to replay");
  PlanEpochs();
  if (batches_per_epoch_ <= 0) {
    return Status::InvalidArgument("an epoch has no batch: " + std::to_string(per_rank_samples_) +
                                   " samples per rank with batch_size " + std::to_string(loader_.batch_size) +
                                   " and drop_last");
  }
  std::vector<std::string> args_storage = {"simreplay", "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                                           "--log=root.thresh:critical", "--cfg=contexts/stack-size:256"};
  std::vector<char*> argv;
  for (auto& a : args_storage) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  sg4::Engine engine(&argc, argv.data());
  BuildPlatform();
  first_batch_s_.assign(static_cast<size_t>(ranks_), -1.0);
  StartBackgroundLoad();
  for (int r = 0; r < ranks_; ++r) {
    sg4::Actor::create("rank" + std::to_string(r) + "-main", node_, [this, r] { MainLoop(r); });
  }
  engine.run();
  if (mains_finished_ != ranks_) return Status::Internal("simulation deadlocked: a training loop never finished");
  stats_.time_to_first_batch_s = *std::max_element(first_batch_s_.begin(), first_batch_s_.end());
  stats_.worker_count = static_cast<double>(loader_.num_workers) * ranks_;
  return std::move(stats_);
}

}  // namespace

Result<SimRawStats> RunSimulation(const SimInput& input) {
  NodeSimulation simulation(input);
  return simulation.Run();
}

}  // namespace simreplay::sim
