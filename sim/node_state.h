// One node's shared resources as the actors on it see them: its cores (Execute), its memory
// accounting, its storage (local disk with a concurrency cap, or reads from shared storage through
// the node's NIC), and the statistics and timeline they feed. Ranks and their DataLoaders on a node
// share one NodeState; it never calls back into the simulation.
#pragma once

#include <memory>
#include <vector>

#include <simgrid/s4u.hpp>

#include "models/shard_stream.h"
#include "models/storage_tiers.h"

#include "replay/sample_costs.h"
#include "sim/core_scheduler.h"
#include "sim/platform.h"
#include "sim/run_config.h"
#include "sim/sim_types.h"

namespace simreplay::sim {

// The run's statistics sink and timeline (one per simulation, shared by every node).
class Recorder {
 public:
  Recorder(SimRawStats* stats, bool timeline, int64_t max_events)
      : stats_(stats), timeline_(timeline), max_events_(max_events) {}
  SimRawStats& stats() { return *stats_; }
  bool timeline() const { return timeline_; }
  // A span from start_s to now on (rank, track).
  void Span(int rank, int track, const char* name, double start_s);
  // Adds `count` events if they fit under the cap; false (and marks truncation) otherwise.
  bool Reserve(int64_t count);
  void Add(const TimelineEvent& e) { stats_->timeline.push_back(e); }

 private:
  SimRawStats* stats_;
  bool timeline_;
  int64_t max_events_;
};

// CPU work started without waiting (NodeState::ExecuteAsync); Wait blocks until it has run. Empty when
// there was no work.
class CpuWork {
 public:
  CpuWork() = default;
  CpuWork(CoreScheduler* cores, int job) : cores_(cores), job_(job) {}
  void Wait() {
    if (cores_ != nullptr) cores_->Wait(job_);
    cores_ = nullptr;
  }

 private:
  CoreScheduler* cores_ = nullptr;
  int job_ = -1;
};

class NodeState {
 public:
  // `hosts` and `platform` must outlive the node. `index` is the node number.
  NodeState(int index, const NodeHosts& hosts, const Platform& platform, const SimInput& input, const RunConfig& config,
            Recorder* recorder);

  int index() const { return index_; }
  simgrid::s4u::Host* cpu() const { return hosts_.cpu; }
  // cluster.nodes_share_cores: this node's CPU work runs on `owner`'s cores, and counts towards its
  // running executions (the wake-up delay), while its actors, routes and statistics stay its own.
  void ShareCoresOf(NodeState* owner);
  NodeStats& stats() { return node_stats_; }
  Recorder& recorder() { return *recorder_; }

  // CPU work of `cpu_s` recorded seconds on this node's cores (counts towards cpu_busy_core_s).
  void Execute(double cpu_s);
  // The same work started without waiting, on this node's cores; the caller waits on the returned work.
  CpuWork ExecuteAsync(double cpu_s);
  // Whether a sample's read is a fixed delay here (storage mode "recorded", local storage, no tiers,
  // cores of its own), so that a batch's reads and CPU work can run as one job (RunPhases).
  bool ReadsAreDelays() const;
  // Read delays and CPU work in sequence as one job on this node's cores; returns each phase's end.
  // CPU phases count towards cpu_busy_core_s, kRead phases towards the storage's bytes and busy time.
  std::vector<double> RunPhases(std::vector<CorePhase> phases);
  // After the run (`end_s`): counts the phases that jobs still in flight had ended, as each finished
  // execution and read counts during the run.
  void Finish(double end_s);
  // A thread that was blocked (the loop after its accelerator step, or after waiting for a batch) runs
  // again only after the scheduler's wake-up delay at the executions running now (cpu.wakeup_delay_*,
  // measured by the CPU probe); returns the seconds slept (0 when the model has no delay).
  double WakeUp();
  // One sample's read: recorded time, page cache, the local device, or shared storage.
  // `cache_key` fixes page-cache hits per sample; `epoch` decides cold or warm storage tiers. `stream`:
  // the calling reader's stream of a streamed tier (null: every read is a request of its own).
  void ReadSample(const replay::SampleCost& cost, uint64_t cache_key, int64_t epoch = 0,
                  models::ShardStream* stream = nullptr);
  void AddMemory(double delta_bytes);
  // Shared storage: the link classes a read crosses (for network utilisation).
  void SetStorageRoute(const LinkClassCounts& counts) { storage_route_ = counts; }

 private:
  void CountBusy(double cpu_s);
  void CountReadBytes(int64_t bytes);
  void ReadShared(double bytes);
  // storage.tiers: the serving tier's latency and per-stream transfer under its stream limit.
  void ReadTiered(const replay::SampleCost& cost, uint64_t cache_key, int64_t epoch, models::ShardStream* stream);
  // A read served by streamed tier k through the reader's connection (models/shard_stream.h): a new
  // shard's request takes its turn and the first byte; then the sample waits only for its bytes still
  // in transit. A read that waits on the tier holds one of its max_streams slots while it waits.
  void ReadStreamed(size_t k, double bytes, int64_t epoch, models::ShardStream* stream);

  int index_;
  const NodeHosts& hosts_;
  const Platform& platform_;
  const SimInput& input_;
  const RunConfig& config_;
  Recorder* recorder_;
  NodeStats node_stats_;
  simgrid::s4u::SemaphorePtr storage_slots_;
  std::vector<simgrid::s4u::SemaphorePtr> tier_streams_;  // per tier with max_streams > 0, else null
  std::vector<models::RequestPacer> tier_pacers_;          // per tier: its requests_per_s limit
  double node_epoch_bytes_ = 0;                           // bytes this node reads per epoch (tier fill)
  double mean_sample_bytes_ = 0;                          // of the captured samples (a streamed shard's length)
  int storage_in_flight_ = 0;
  double storage_busy_since_s_ = 0;
  double flops_per_cpu_s_scale_ = 1;
  std::unique_ptr<CoreScheduler> own_cores_;
  CoreScheduler* cores_ = nullptr;  // where CPU work runs: own_cores_, or the sharing owner's
  std::vector<int> jobs_in_flight_;  // RunPhases jobs not finished yet
  LinkClassCounts storage_route_{};  // core_speed_scale x straggler factor: recorded -> core-seconds
};

}  // namespace simreplay::sim
