#include "sim/node_state.h"

#include <algorithm>

#include "common/random.h"
#include "models/storage_tiers.h"

namespace simreplay::sim {

namespace {
namespace sg4 = simgrid::s4u;
}  // namespace

void Recorder::Span(int rank, int track, const char* name, double start_s) {
  if (!timeline_) return;
  if (static_cast<int64_t>(stats_->timeline.size()) >= max_events_) {
    stats_->timeline_truncated = true;
    return;
  }
  stats_->timeline.push_back(TimelineEvent{rank, track, name, start_s, sg4::Engine::get_clock() - start_s});
}

bool Recorder::Reserve(int64_t count) {
  if (static_cast<int64_t>(stats_->timeline.size()) + count > max_events_) {
    stats_->timeline_truncated = true;
    return false;
  }
  return true;
}

NodeState::NodeState(int index, const NodeHosts& hosts, const Platform& platform, const SimInput& input,
                     const RunConfig& config, Recorder* recorder)
    : index_(index),
      hosts_(hosts),
      platform_(platform),
      input_(input),
      config_(config),
      recorder_(recorder),
      storage_slots_(sg4::Semaphore::create(static_cast<unsigned>(input.model.storage.max_concurrency))),
      flops_per_cpu_s_scale_(input.model.cpu.core_speed_scale * config.node_cpu_scale[static_cast<size_t>(index)]),
      own_cores_(std::make_unique<CoreScheduler>(hosts.cpu, config.cpu_cores, flops_per_cpu_s_scale_, input.model.cpu,
                                                 input.background_threads)),
      cores_(own_cores_.get()) {
  const auto& tiers = input.scenario.storage.tiers;
  for (const auto& t : tiers) {
    tier_streams_.push_back(t.max_streams > 0 ? sg4::Semaphore::create(static_cast<unsigned>(t.max_streams)) : nullptr);
    tier_pacers_.emplace_back(t.requests_per_s);
  }
  if (!tiers.empty() && input.costs != nullptr && !input.costs->samples.empty()) {
    // Mean bytes per sample x the samples this node's ranks read per epoch (DistributedSampler padding).
    double bytes = 0;
    for (const auto& c : input.costs->samples) bytes += static_cast<double>(c.read_bytes);
    const double mean_bytes = bytes / static_cast<double>(input.costs->samples.size());
    mean_sample_bytes_ = mean_bytes;
    const int64_t ranks = std::max(1, config.ranks);
    const int64_t per_rank = (std::max<int64_t>(1, input.scenario.train.dataset_samples) + ranks - 1) / ranks;
    node_epoch_bytes_ = mean_bytes * static_cast<double>(per_rank) * config.gpus_per_node;
  }
}

void NodeState::ReadTiered(const replay::SampleCost& cost, uint64_t cache_key, int64_t epoch,
                           models::ShardStream* stream) {
  const auto& tiers = input_.scenario.storage.tiers;
  // A stream of its own (salt "tier"), so that tier residency is independent of page-cache draws.
  const double u = Rng::HashUnit(cache_key, Rng::DeriveSeed(input_.scenario.seed, 0x74696572));
  const size_t k = static_cast<size_t>(models::ServingTier(tiers, epoch, u, node_epoch_bytes_));
  if (stream != nullptr && tiers[k].shard_samples > 0 && tiers[k].bytes_per_s_per_stream > 0) {
    ReadStreamed(k, static_cast<double>(cost.read_bytes), epoch, stream);
    return;
  }
  const double read_s = models::TierReadS(tiers[k], static_cast<double>(cost.read_bytes), cost.read_s);
  if (tier_streams_[k]) tier_streams_[k]->acquire();
  // a request-rate limit: the request waits for its turn (models/storage_tiers.h, RequestPacer)
  const double turn_s = tier_pacers_[k].Reserve(sg4::Engine::get_clock(), tiers[k].RequestsPerRead());
  if (turn_s + read_s > 0) sg4::this_actor::sleep_for(turn_s + read_s);
  if (tier_streams_[k]) tier_streams_[k]->release();
}

void NodeState::ReadStreamed(size_t k, double bytes, int64_t epoch, models::ShardStream* stream) {
  const auto& tier = input_.scenario.storage.tiers[k];
  // A slot is held only while waiting on the tier (a request, or bytes in transit), never between
  // reads: a reader parked on a full prefetch queue would otherwise hold it while the batch the main
  // loop waits for needs it (a deadlock the real job would meet as stalled connections).
  bool holds_slot = false;
  if (stream->NeedsShard(epoch)) {
    if (tier_streams_[k]) tier_streams_[k]->acquire();
    holds_slot = tier_streams_[k] != nullptr;
    const double now_s = sg4::Engine::get_clock();
    const double turn_s = tier_pacers_[k].Reserve(now_s, 1.0);
    stream->Open(epoch, now_s + turn_s + std::max(0.0, tier.latency_s), mean_sample_bytes_);
  }
  double wait_s = stream->Take(sg4::Engine::get_clock(), bytes, tier.bytes_per_s_per_stream);
  if (wait_s > 0 && !holds_slot && tier_streams_[k]) {
    const double asked_s = sg4::Engine::get_clock();
    tier_streams_[k]->acquire();
    holds_slot = true;
    wait_s -= sg4::Engine::get_clock() - asked_s;  // the bytes kept arriving while it queued
  }
  if (wait_s > 0) sg4::this_actor::sleep_for(wait_s);
  if (holds_slot) tier_streams_[k]->release();
}

void NodeState::ShareCoresOf(NodeState* owner) { cores_ = owner->cores_; }

void NodeState::Execute(double cpu_s) {
  if (cpu_s <= 0) return;
  cores_->Wait(cores_->Start({{CorePhase::Kind::kCpu, cpu_s}}, true));
  CountBusy(cpu_s);
}

double NodeState::WakeUp() {
  const double delay_s = models::WakeupDelayS(input_.model.cpu, cores_->RunningNow(), config_.cpu_cores);
  if (delay_s > 0) sg4::this_actor::sleep_for(delay_s);
  return delay_s;
}

CpuWork NodeState::ExecuteAsync(double cpu_s) {
  if (cpu_s <= 0) return {};
  CountBusy(cpu_s);
  return {cores_, cores_->Start({{CorePhase::Kind::kCpu, cpu_s}}, false)};
}

bool NodeState::ReadsAreDelays() const {
  return config_.storage_mode == StorageMode::kRecorded && !config_.shared_storage &&
         input_.scenario.storage.tiers.empty() && cores_ == own_cores_.get();
}

std::vector<double> NodeState::RunPhases(std::vector<CorePhase> phases) {
  const PhaseWork work = WorkOf(phases, phases.size());
  const int job = cores_->Start(std::move(phases), true);
  jobs_in_flight_.push_back(job);
  std::vector<double> ends = cores_->Wait(job);
  jobs_in_flight_.erase(std::find(jobs_in_flight_.begin(), jobs_in_flight_.end(), job));
  CountBusy(work.cpu_s);
  CountReadBytes(work.read_bytes);
  node_stats_.storage_busy_s += cores_->TakeReadBusyS();
  return ends;
}

void NodeState::Finish(double end_s) {
  if (cores_ != own_cores_.get()) return;  // the owner finishes the shared cores
  cores_->Stop(end_s);
  for (int job : jobs_in_flight_) {
    const PhaseWork ended = cores_->EndedWork(job);
    CountBusy(ended.cpu_s);
    CountReadBytes(ended.read_bytes);
  }
  node_stats_.storage_busy_s += cores_->TakeReadBusyS();
}

void NodeState::CountBusy(double cpu_s) {
  const double core_s = cpu_s / flops_per_cpu_s_scale_;
  recorder_->stats().cpu_busy_core_s += core_s;
  node_stats_.cpu_busy_core_s += core_s;
}

void NodeState::AddMemory(double delta_bytes) {
  node_stats_.memory_bytes += delta_bytes;
  node_stats_.peak_host_memory_bytes = std::max(node_stats_.peak_host_memory_bytes, node_stats_.memory_bytes);
  auto& stats = recorder_->stats();
  stats.peak_host_memory_bytes = std::max(stats.peak_host_memory_bytes, node_stats_.peak_host_memory_bytes);
}

// Shared storage: the request's latency, then the bytes from the storage service through the fabric
// and this node's NIC into host memory, competing there with gradient traffic.
void NodeState::ReadShared(double bytes) {
  sg4::this_actor::sleep_for(config_.shared_storage_latency_s);
  if (bytes <= 0) return;
  sg4::Comm::sendto(platform_.storage, hosts_.cpu, static_cast<uint64_t>(bytes));
  AddLinkBytes(storage_route_, bytes, &recorder_->stats().link_load);
}

void NodeState::ReadSample(const replay::SampleCost& cost, uint64_t cache_key, int64_t epoch,
                           models::ShardStream* stream) {
  const auto& storage = input_.model.storage;
  if (cost.read_s <= 0 && cost.read_bytes <= 0) return;
  if (storage_in_flight_++ == 0) storage_busy_since_s_ = sg4::Engine::get_clock();
  // An object store read over HTTP has no client cache: every read is a request to it.
  const bool client_cache = !config_.shared_storage || input_.scenario.storage.client_cache;
  const bool cached = client_cache && storage.page_cache_hit_ratio > 0 &&
                      Rng::HashUnit(cache_key, input_.scenario.seed) < storage.page_cache_hit_ratio;
  if (!input_.scenario.storage.tiers.empty()) {
    ReadTiered(cost, cache_key, epoch, stream);
  } else if (config_.shared_storage && !cached) {
    ReadShared(static_cast<double>(cost.read_bytes));
  } else if (config_.storage_mode == StorageMode::kRecorded) {
    sg4::this_actor::sleep_for(cost.read_s);
  } else if (cached) {
    sg4::this_actor::sleep_for(static_cast<double>(cost.read_bytes) / storage.page_cache_bytes_per_s);
  } else {
    storage_slots_->acquire();
    sg4::this_actor::sleep_for(storage.latency_s);
    if (cost.read_bytes > 0) hosts_.disk->read(static_cast<sg_size_t>(cost.read_bytes));
    storage_slots_->release();
  }
  CountReadBytes(cost.read_bytes);
  if (--storage_in_flight_ == 0) {
    const double busy_s = sg4::Engine::get_clock() - storage_busy_since_s_;
    node_stats_.storage_busy_s += busy_s;
  }
}

void NodeState::CountReadBytes(int64_t bytes) {
  recorder_->stats().storage_read_bytes += bytes;
  node_stats_.storage_read_bytes += bytes;
}

}  // namespace simreplay::sim
