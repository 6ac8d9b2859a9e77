#include "sim/dataloader.h"

#include <algorithm>
#include <string>

#include "sim/remote_storage.h"

namespace simreplay::sim {

namespace {
namespace sg4 = simgrid::s4u;
}  // namespace

DataLoader::DataLoader(const RankContext& rank, NodeState* node, const DistributedSampler& sampler,
                       const SimInput& input, const RunConfig& config)
    : rank_(rank),
      node_(node),
      sampler_(sampler),
      input_(input),
      config_(config),
      loader_(input.scenario.loader),
      collate_per_sample_s_(input.costs->measured.mean_collate_per_sample_s >= 0
                                ? input.costs->measured.mean_collate_per_sample_s
                                : input.model.cpu.collate_per_sample_s),
      // A streamed tier: only the workers that were assigned a shard deliver (sim/remote_storage.h).
      active_workers_(ActiveStreamWorkers(
          StreamShards(input.scenario, sampler.per_rank_samples() * std::max(1, config.ranks)),
          std::max(1, config.ranks), rank.rank, input.scenario.loader.num_workers)) {
  if (const models::StorageTier* streamed = StreamedTier(input.scenario)) {
    task_workers_ = StreamTaskWorkers(sampler.per_rank_samples() * std::max(1, config.ranks), streamed->shard_samples,
                                      std::max(1, config.ranks), rank.rank, loader_.num_workers,
                                      sampler.batches_per_epoch());
  }
}

SimQueue<DataLoader::Task>& DataLoader::QueueOfTask(int64_t task) const {
  const int64_t worker = task_workers_.empty() ? task % active_workers_ : task_workers_[static_cast<size_t>(task)];
  return *queues_->index_queues[static_cast<size_t>(worker)];
}

double DataLoader::CostScale(int track) const {
  const auto& cpu = input_.model.cpu;
  return track == kTrackMain ? cpu.worker_cost_scale / cpu.worker_overhead_factor : cpu.worker_cost_scale;
}

double DataLoader::OverheadPerSample(int track) const {
  return track == kTrackMain ? 0.0 : input_.model.cpu.worker_overhead_per_sample_s;
}

FinishedBatch DataLoader::LoadBatch(int track, int64_t epoch, int64_t batch) {
  const double scale = CostScale(track);
  const double overhead_s = OverheadPerSample(track);
  const double start_s = sg4::Engine::get_clock();
  FinishedBatch done{batch, sampler_.BatchSize(batch), 0, 0};
  const int64_t first = sampler_.FirstOrdinal(epoch, rank_.rank, batch);
  const double collate_s = collate_per_sample_s_ * static_cast<double>(done.size) * scale;
  if (config_.fidelity == ReplayFidelity::kBatch) {
    LoadBatchAggregated(track, epoch, first, collate_s, &done);
  } else {
    for (int64_t i = 0; i < done.size; ++i) {
      const int64_t ordinal = first + i;
      const auto& cost = sampler_.CostAt(ordinal);
      double t0 = sg4::Engine::get_clock();
      node_->ReadSample(cost, sampler_.CacheKey(ordinal), epoch);
      double t1 = sg4::Engine::get_clock();
      node_->Execute((cost.decode_s + cost.augment_s) * scale + overhead_s);
      RecordSample(track, cost, t0, t1, sg4::Engine::get_clock());
      done.bytes += static_cast<double>(cost.out_bytes);
    }
    node_->AddMemory(done.bytes * input_.model.memory.batch_bytes_scale);
    double t_collate = sg4::Engine::get_clock();
    node_->Execute(collate_s);
    node_->recorder().Span(rank_.rank, track, "collate", t_collate);
  }
  done.ready_s = sg4::Engine::get_clock();
  if (track != kTrackMain) node_->recorder().stats().worker_busy_s += done.ready_s - start_s;
  return done;
}

// fidelity "batch": the batch's recorded reads as one delay and its CPU work, collate included, as one
// execution. Exact when the worker's CPU share is constant over the batch; 10-30x fewer simulation
// events. Storage in "model" mode and shared storage still issue one read per sample (concurrency and
// latency are per operation).
void DataLoader::LoadBatchAggregated(int track, int64_t epoch, int64_t first, double collate_s, FinishedBatch* done) {
  const double scale = CostScale(track);
  const bool aggregate_reads = config_.storage_mode == StorageMode::kRecorded && !config_.shared_storage &&
                               input_.scenario.storage.tiers.empty();
  double read_s = 0, cpu_s = 0;
  int64_t read_bytes = 0;
  const double t0 = sg4::Engine::get_clock();
  for (int64_t i = 0; i < done->size; ++i) {
    const auto& cost = sampler_.CostAt(first + i);
    if (aggregate_reads) {
      read_s += cost.read_s;
      read_bytes += cost.read_bytes;
    } else {
      node_->ReadSample(cost, sampler_.CacheKey(first + i), epoch);
    }
    cpu_s += cost.decode_s + cost.augment_s;
    done->bytes += static_cast<double>(cost.out_bytes);
  }
  if (aggregate_reads) node_->SleepRecordedReads(read_s, read_bytes);
  const double t1 = sg4::Engine::get_clock();
  const double sample_cpu_s = cpu_s * scale + OverheadPerSample(track) * static_cast<double>(done->size);
  const double work = sample_cpu_s + collate_s;
  node_->Execute(work);
  const double t3 = sg4::Engine::get_clock();
  // Counted once the batch is collated (per-sample fidelity counts it before collate: a collate later).
  node_->AddMemory(done->bytes * input_.model.memory.batch_bytes_scale);
  const double t2 = work > 0 ? t1 + (t3 - t1) * sample_cpu_s / work : t1;  // decode+augment end, collate start
  // Attribute the batch's read and CPU time back to its samples in proportion to their recorded costs.
  double read_at = t0, cpu_at = t1;
  for (int64_t i = 0; i < done->size; ++i) {
    const auto& cost = sampler_.CostAt(first + i);
    double r = read_s > 0 ? (t1 - t0) * cost.read_s / read_s : 0;
    double c = cpu_s > 0 ? (t2 - t1) * (cost.decode_s + cost.augment_s) / cpu_s : 0;
    RecordSample(track, cost, read_at, read_at + r, read_at + r + c, cpu_at);
    read_at += r;
    cpu_at += c;
  }
  node_->recorder().Span(rank_.rank, track, "collate", t2);
}

// Stage statistics and timeline spans of one sample: read [t0, t1), then decode + augment for
// (t2 - t1) starting at cpu_start_s (default t1), split by the recorded decode/augment share.
void DataLoader::RecordSample(int track, const replay::SampleCost& cost, double t0, double t1, double t2,
                              double cpu_start_s) {
  if (cpu_start_s < 0) cpu_start_s = t1;
  const double cpu_total = cost.decode_s + cost.augment_s;
  const double decode_share = cpu_total > 0 ? cost.decode_s / cpu_total : 1.0;
  const double cpu_s = t2 - t1;
  auto& recorder = node_->recorder();
  auto& stats = recorder.stats();
  stats.read_s.Add(t1 - t0);
  stats.decode_s.Add(cpu_s * decode_share);
  stats.augment_s.Add(cpu_s * (1 - decode_share));
  if (!recorder.timeline() || !recorder.Reserve(3)) return;
  const int rank = rank_.rank;
  if (t1 > t0) recorder.Add({rank, track, "read", t0, t1 - t0});
  recorder.Add({rank, track, "decode", cpu_start_s, cpu_s * decode_share});
  if (decode_share < 1) {
    recorder.Add({rank, track, "augment", cpu_start_s + cpu_s * decode_share, cpu_s * (1 - decode_share)});
  }
}

void DataLoader::Worker(int worker, IteratorQueues* queues) {
  double t0 = sg4::Engine::get_clock();
  sg4::this_actor::sleep_for(input_.model.cpu.worker_startup_s);
  // A fresh process's first samples cost more than later ones: that CPU, on the node's cores.
  node_->Execute(input_.model.cpu.worker_warmup_cpu_s);
  node_->recorder().Span(rank_.rank, kTrackWorker0 + worker, "startup", t0);
  while (true) {
    Task task = queues->index_queues[static_cast<size_t>(worker)]->Pop();
    if (task.stop) return;
    queues->results.Push(LoadBatch(kTrackWorker0 + worker, task.epoch, task.batch));
  }
}

void DataLoader::PinThread(IteratorQueues* queues) {
  while (true) {
    FinishedBatch batch = queues->results.Pop();
    if (batch.batch < 0) return;
    double t0 = sg4::Engine::get_clock();
    node_->Execute(batch.bytes / input_.model.cpu.pin_bytes_per_s);
    node_->recorder().stats().pin_busy_s += sg4::Engine::get_clock() - t0;
    node_->recorder().Span(rank_.rank, kTrackPin, "pin", t0);
    queues->pinned.Push(batch);
  }
}

void DataLoader::StartEpoch(int64_t epoch) {
  epoch_ = epoch;
  reorder_.clear();
  const int workers = loader_.num_workers;
  next_task_ =
      std::min<int64_t>(static_cast<int64_t>(loader_.prefetch_factor) * active_workers_, sampler_.batches_per_epoch());
  if (workers == 0) return;
  double t0 = sg4::Engine::get_clock();
  IteratorQueues* previous = queues_;
  auto& recorder = node_->recorder();
  if (previous == nullptr || !loader_.persistent_workers) {
    if (previous != nullptr) {  // shut the previous epoch's workers down: the main joins them one by one
      for (auto& q : previous->index_queues) q->Push(Task{0, 0, true});
      if (loader_.pin_memory) previous->results.Push(FinishedBatch{});
      const double shutdown_s = input_.model.cpu.worker_shutdown_s * static_cast<double>(previous->index_queues.size());
      if (shutdown_s > 0) {
        sg4::this_actor::sleep_for(shutdown_s);
        recorder.Span(rank_.rank, kTrackMain, "shut workers down", t0);
        t0 = sg4::Engine::get_clock();
      }
    }
    iterators_.push_back(std::make_unique<IteratorQueues>());
    queues_ = iterators_.back().get();
    IteratorQueues* queues = queues_;
    // The main process starts workers one after another; each then pays its own start-up.
    const std::string prefix = "r" + std::to_string(rank_.rank);
    for (int w = 0; w < workers; ++w) {
      sg4::this_actor::sleep_for(input_.model.cpu.worker_spawn_s);
      queues->index_queues.push_back(std::make_unique<SimQueue<Task>>());
      sg4::Actor::create(prefix + "w" + std::to_string(w), node_->cpu(), [this, w, queues] {
        Worker(w, queues);
      })->daemonize();
      ++recorder.stats().worker_starts;
    }
    if (loader_.pin_memory) {
      sg4::Actor::create(prefix + "pin", node_->cpu(), [this, queues] { PinThread(queues); })->daemonize();
    }
    recorder.Span(rank_.rank, kTrackMain, "iter() start workers", t0);
  } else {
    // persistent_workers: _ResumeIteration to every worker and wait for all acknowledgements.
    sg4::this_actor::sleep_for(input_.model.cpu.worker_resume_s * workers);
    recorder.Span(rank_.rank, kTrackMain, "iter() resume", t0);
  }
  for (int64_t t = 0; t < next_task_; ++t) QueueOfTask(t).Push(Task{epoch, t, false});
}

FinishedBatch DataLoader::Next(int64_t b) {
  const double t0 = sg4::Engine::get_clock();
  auto& stats = node_->recorder().stats();
  if (loader_.num_workers == 0) {
    FinishedBatch batch = LoadBatch(kTrackMain, epoch_, b);
    if (loader_.pin_memory) node_->Execute(batch.bytes / input_.model.cpu.pin_bytes_per_s);
    stats.main_busy_s += sg4::Engine::get_clock() - t0;
    return batch;
  }
  SimQueue<FinishedBatch>& source = loader_.pin_memory ? queues_->pinned : queues_->results;
  bool blocked = false;
  while (!reorder_.count(b)) {
    blocked = blocked || source.size() == 0;
    FinishedBatch arrived = source.Pop();
    reorder_[arrived.batch] = arrived;
  }
  // The loop slept in next() until a worker delivered: it runs again after the scheduler's wake-up delay.
  if (blocked) node_->WakeUp();
  FinishedBatch batch = reorder_[b];
  reorder_.erase(b);
  stats.queue_wait_s.push_back(std::max(0.0, sg4::Engine::get_clock() - batch.ready_s));
  const double t_main = sg4::Engine::get_clock();
  node_->Execute(input_.model.cpu.main_per_batch_s);
  stats.main_busy_s += sg4::Engine::get_clock() - t_main;
  // Handing a batch over is what sends the next task (_try_put_index), to worker (task mod W).
  if (next_task_ < sampler_.batches_per_epoch()) {
    QueueOfTask(next_task_).Push(Task{epoch_, next_task_, false});
    ++next_task_;
  }
  return batch;
}

}  // namespace simreplay::sim
