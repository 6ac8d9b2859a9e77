#include "sim/dataloader.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "models/page_fault_churn.h"
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
      active_workers_(
          ActiveStreamWorkers(StreamShards(input.scenario, sampler.per_rank_samples() * std::max(1, config.ranks)),
                              std::max(1, config.ranks), rank.rank, input.scenario.loader.num_workers)) {
  if (const models::StorageTier* streamed = StreamedTier(input.scenario)) {
    const int ranks = std::max(1, config.ranks);
    const int64_t dataset = sampler.per_rank_samples() * ranks;
    task_workers_ = StreamTaskWorkers(dataset, streamed->shard_samples, ranks, rank.rank, loader_.num_workers,
                                      sampler.batches_per_epoch());
    // Readers' shards: the main process loading inline is the rank's only reader; workers share them.
    auto reader_stream = [&](int readers, int reader) {
      return models::ShardStream(
          ReaderShardSizes(dataset, streamed->shard_samples, ranks, rank.rank, readers, reader),
          ReaderShardBytes(streamed->shard_bytes, dataset, streamed->shard_samples, ranks, rank.rank, readers, reader));
    };
    streams_.push_back(reader_stream(1, 0));
    for (int w = 0; w < loader_.num_workers; ++w) streams_.push_back(reader_stream(loader_.num_workers, w));
  }
}

models::ShardStream* DataLoader::StreamOf(int track) {
  if (streams_.empty()) return nullptr;
  const size_t i = track == kTrackMain ? 0 : static_cast<size_t>(1 + track - kTrackWorker0);
  return i < streams_.size() ? &streams_[i] : nullptr;
}

SimQueue<DataLoader::Task>& DataLoader::QueueOfTask(int64_t task) const {
  const int64_t worker = task_workers_.empty() ? task % active_workers_ : task_workers_[static_cast<size_t>(task)];
  return *queues_->index_queues[static_cast<size_t>(worker)];
}

double DataLoader::CostScale(int track) const {
  const auto& cpu = input_.model.cpu;
  if (track != kTrackMain) return cpu.worker_cost_scale;
  return cpu.worker_cost_scale / cpu.worker_overhead_factor *
         models::InlineCostFactor(cpu.page_fault_cpu_share, cpu.inline_page_fault_ratio);
}

double DataLoader::OverheadPerSample(int track) const {
  return track == kTrackMain ? 0.0 : input_.model.cpu.worker_overhead_per_sample_s;
}

FinishedBatch DataLoader::LoadBatch(int track, int64_t epoch, int64_t batch) {
  const double start_s = sg4::Engine::get_clock();
  FinishedBatch done{batch, sampler_.BatchSize(batch), 0, 0};
  const int64_t first = sampler_.FirstOrdinal(epoch, rank_.rank, batch);
  const double collate_s = collate_per_sample_s_ * static_cast<double>(done.size) * CostScale(track);
  if (config_.fidelity == ReplayFidelity::kBatch) {
    LoadBatchAggregated(track, epoch, first, collate_s, &done);
  } else {
    if (node_->ReadsAreDelays()) {
      LoadSamplesAsOneJob(track, first, &done);
    } else {
      LoadSamplesOneByOne(track, epoch, first, &done);
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

void DataLoader::LoadSamplesOneByOne(int track, int64_t epoch, int64_t first, FinishedBatch* done) {
  const double scale = CostScale(track);
  const double overhead_s = OverheadPerSample(track);
  for (int64_t i = 0; i < done->size; ++i) {
    const int64_t ordinal = first + i;
    const auto& cost = sampler_.CostAt(ordinal);
    double t0 = sg4::Engine::get_clock();
    node_->ReadSample(cost, sampler_.CacheKey(ordinal), epoch, StreamOf(track));
    double t1 = sg4::Engine::get_clock();
    node_->Execute((cost.decode_s + cost.augment_s) * scale + overhead_s);
    RecordSample(track, cost, t0, t1, sg4::Engine::get_clock());
    done->bytes += static_cast<double>(cost.out_bytes);
  }
}

void DataLoader::LoadSamplesAsOneJob(int track, int64_t first, FinishedBatch* done) {
  const double scale = CostScale(track);
  const double overhead_s = OverheadPerSample(track);
  std::vector<CorePhase> phases;
  phases.reserve(2 * static_cast<size_t>(done->size));
  for (int64_t i = 0; i < done->size; ++i) {
    const auto& cost = sampler_.CostAt(first + i);
    phases.push_back({CorePhase::Kind::kRead, cost.read_s, cost.read_bytes});
    phases.push_back({CorePhase::Kind::kCpu, (cost.decode_s + cost.augment_s) * scale + overhead_s});
    done->bytes += static_cast<double>(cost.out_bytes);
  }
  const double t0 = sg4::Engine::get_clock();
  const std::vector<double> ends = node_->RunPhases(std::move(phases));
  double read_at = t0;
  for (int64_t i = 0; i < done->size; ++i) {
    const auto k = 2 * static_cast<size_t>(i);
    RecordSample(track, sampler_.CostAt(first + i), read_at, ends[k], ends[k + 1]);
    read_at = ends[k + 1];
  }
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
      node_->ReadSample(cost, sampler_.CacheKey(first + i), epoch, StreamOf(track));
    }
    cpu_s += cost.decode_s + cost.augment_s;
    done->bytes += static_cast<double>(cost.out_bytes);
  }
  const double sample_cpu_s = cpu_s * scale + OverheadPerSample(track) * static_cast<double>(done->size);
  const double work = sample_cpu_s + collate_s;
  double t1, t3;
  if (aggregate_reads) {  // the reads' delay and the CPU work as one job
    const std::vector<double> ends =
        node_->RunPhases({{CorePhase::Kind::kRead, read_s, read_bytes}, {CorePhase::Kind::kCpu, work}});
    t1 = ends[0];
    t3 = ends[1];
  } else {
    t1 = sg4::Engine::get_clock();
    node_->Execute(work);
    t3 = sg4::Engine::get_clock();
  }
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
  // A fresh process's first samples cost more than later ones: that CPU, on the node's cores, at the
  // start or spread over the samples it belongs to (WarmupCpuS).
  const int track = kTrackWorker0 + worker;
  node_->Execute(WarmupCpuS(0, 0));
  node_->recorder().Span(rank_.rank, track, "startup", t0);
  SimQueue<FinishedBatch>& out =
      queues->send_queues.empty() ? queues->results : *queues->send_queues[static_cast<size_t>(worker)];
  int64_t loaded = 0;  // samples this process has loaded
  while (true) {
    Task task = queues->index_queues[static_cast<size_t>(worker)]->Pop();
    if (task.stop) {
      if (!queues->send_queues.empty()) out.Push(FinishedBatch{});  // the send thread's stop marker
      return;
    }
    const int64_t size = sampler_.BatchSize(task.batch);
    if (const double warmup_s = WarmupCpuS(loaded, size); warmup_s > 0) {
      const double t_warm = sg4::Engine::get_clock();
      node_->Execute(warmup_s);
      node_->recorder().stats().worker_busy_s += sg4::Engine::get_clock() - t_warm;  // the batch's own work
      node_->recorder().Span(rank_.rank, track, "warm-up", t_warm);
    }
    loaded += size;
    out.Push(LoadBatch(track, task.epoch, task.batch));
  }
}

// The warm-up excess (cpu.worker_warmup_cpu_s) of a process's samples [first, first + count): its
// first sample's share (cpu.worker_warmup_first_share) on the first, the rest an even share per sample
// over its first cpu.worker_warmup_samples; with 0 of those, all of it at the start (count 0 at first 0).
double DataLoader::WarmupCpuS(int64_t first, int64_t count) const {
  const auto& cpu = input_.model.cpu;
  if (cpu.worker_warmup_samples <= 0) return first == 0 && count == 0 ? cpu.worker_warmup_cpu_s : 0.0;
  const double window = cpu.worker_warmup_samples;
  const double in_window = std::clamp(window - static_cast<double>(first), 0.0, static_cast<double>(count));
  const double on_first = first == 0 && count > 0 ? cpu.worker_warmup_first_share : 0.0;
  return cpu.worker_warmup_cpu_s * (on_first + (1 - cpu.worker_warmup_first_share) * in_window / window);
}

void DataLoader::SendThread(int worker, IteratorQueues* queues) {
  SimQueue<FinishedBatch>& in = *queues->send_queues[static_cast<size_t>(worker)];
  while (true) {
    FinishedBatch batch = in.Pop();
    if (batch.batch < 0) return;
    const double t0 = sg4::Engine::get_clock();
    node_->Execute(batch.bytes * input_.model.cpu.worker_send_s_per_byte);
    batch.ready_s = sg4::Engine::get_clock();
    node_->recorder().Span(rank_.rank, kTrackWorkerSend0 + worker, "send", t0);
    queues->results.Push(batch);
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

bool DataLoader::StartEpoch(int64_t epoch) {
  epoch_ = epoch;
  reorder_.clear();
  const int workers = loader_.num_workers;
  next_task_ =
      std::min<int64_t>(static_cast<int64_t>(loader_.prefetch_factor) * active_workers_, sampler_.batches_per_epoch());
  if (workers == 0) return false;
  double t0 = sg4::Engine::get_clock();
  IteratorQueues* previous = queues_;
  auto& recorder = node_->recorder();
  const bool fork = previous == nullptr || !loader_.persistent_workers;
  if (fork) {
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
      if (input_.model.cpu.worker_send_s_per_byte > 0) {
        queues->send_queues.push_back(std::make_unique<SimQueue<FinishedBatch>>());
        sg4::Actor::create(prefix + "w" + std::to_string(w) + "send", node_->cpu(), [this, w, queues] {
          SendThread(w, queues);
        })->daemonize();
      }
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
  return fork;
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
