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
      flops_per_cpu_s_scale_(input.model.cpu.core_speed_scale * config.node_cpu_scale[static_cast<size_t>(index)]) {
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
    const int64_t ranks = std::max(1, config.ranks);
    const int64_t per_rank = (std::max<int64_t>(1, input.scenario.train.dataset_samples) + ranks - 1) / ranks;
    node_epoch_bytes_ = mean_bytes * static_cast<double>(per_rank) * config.gpus_per_node;
  }
}

void NodeState::ReadTiered(const replay::SampleCost& cost, uint64_t cache_key, int64_t epoch) {
  const auto& tiers = input_.scenario.storage.tiers;
  // A stream of its own (salt "tier"), so that tier residency is independent of page-cache draws.
  const double u = Rng::HashUnit(cache_key, Rng::DeriveSeed(input_.scenario.seed, 0x74696572));
  const size_t k = static_cast<size_t>(models::ServingTier(tiers, epoch, u, node_epoch_bytes_));
  const double read_s = models::TierReadS(tiers[k], static_cast<double>(cost.read_bytes), cost.read_s);
  if (tier_streams_[k]) tier_streams_[k]->acquire();
  // a request-rate limit: the request waits for its turn (models/storage_tiers.h, RequestPacer)
  const double turn_s = tier_pacers_[k].Reserve(sg4::Engine::get_clock(), tiers[k].RequestsPerRead());
  if (turn_s + read_s > 0) sg4::this_actor::sleep_for(turn_s + read_s);
  if (tier_streams_[k]) tier_streams_[k]->release();
}

void NodeState::ShareCoresOf(NodeState* owner) {
  cores_ = owner->hosts_.cpu;
  running_ = &owner->running_executions_;
}

void NodeState::Execute(double cpu_s) {
  if (cpu_s <= 0) return;
  ++*running_;
  if (cores_ == nullptr) {
    sg4::this_actor::execute(cpu_s * kFlopsPerCpuSecond);
  } else {
    sg4::this_actor::exec_init(cpu_s * kFlopsPerCpuSecond)->set_host(cores_)->wait();
  }
  --*running_;
  CountBusy(cpu_s);
}

double NodeState::WakeUp() {
  const double delay_s = models::WakeupDelayS(input_.model.cpu, *running_, config_.cpu_cores);
  if (delay_s > 0) sg4::this_actor::sleep_for(delay_s);
  return delay_s;
}

sg4::ExecPtr NodeState::ExecuteAsync(double cpu_s) {
  if (cpu_s <= 0) return nullptr;
  CountBusy(cpu_s);
  if (cores_ == nullptr) return sg4::this_actor::exec_async(cpu_s * kFlopsPerCpuSecond);
  sg4::ExecPtr exec = sg4::this_actor::exec_init(cpu_s * kFlopsPerCpuSecond)->set_host(cores_);
  exec->start();
  return exec;
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

void NodeState::ReadSample(const replay::SampleCost& cost, uint64_t cache_key, int64_t epoch) {
  const auto& storage = input_.model.storage;
  if (cost.read_s <= 0 && cost.read_bytes <= 0) return;
  if (storage_in_flight_++ == 0) storage_busy_since_s_ = sg4::Engine::get_clock();
  // An object store read over HTTP has no client cache: every read is a request to it.
  const bool client_cache = !config_.shared_storage || input_.scenario.storage.client_cache;
  const bool cached = client_cache && storage.page_cache_hit_ratio > 0 &&
                      Rng::HashUnit(cache_key, input_.scenario.seed) < storage.page_cache_hit_ratio;
  if (!input_.scenario.storage.tiers.empty()) {
    ReadTiered(cost, cache_key, epoch);
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
  recorder_->stats().storage_read_bytes += cost.read_bytes;
  node_stats_.storage_read_bytes += cost.read_bytes;
  if (--storage_in_flight_ == 0) {
    const double busy_s = sg4::Engine::get_clock() - storage_busy_since_s_;
    node_stats_.storage_busy_s += busy_s;
  }
}

void NodeState::SleepRecordedReads(double read_s, int64_t bytes) {
  recorder_->stats().storage_read_bytes += bytes;
  node_stats_.storage_read_bytes += bytes;
  if (read_s > 0) {
    sg4::this_actor::sleep_for(read_s);
    node_stats_.storage_busy_s += read_s;  // approximation: reads of different workers may overlap
  }
}

}  // namespace simreplay::sim
