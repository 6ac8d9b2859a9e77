// One node's shared resources as the actors on it see them: its cores (Execute), its memory
// accounting, its storage (local disk with a concurrency cap, or reads from shared storage through
// the node's NIC), and the statistics and timeline they feed. Ranks and their DataLoaders on a node
// share one NodeState; it never calls back into the simulation.
#pragma once

#include <vector>

#include <simgrid/s4u.hpp>

#include "models/storage_tiers.h"

#include "replay/sample_costs.h"
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
  // The same work started without waiting, on this node's cores; the caller waits on the returned
  // execution.
  simgrid::s4u::ExecPtr ExecuteAsync(double cpu_s);
  // A thread that was blocked (the loop after its accelerator step, or after waiting for a batch) runs
  // again only after the scheduler's wake-up delay at the executions running now (cpu.wakeup_delay_*,
  // measured by the CPU probe); returns the seconds slept (0 when the model has no delay).
  double WakeUp();
  // One sample's read: recorded time, page cache, the local device, or shared storage.
  // `cache_key` fixes page-cache hits per sample; `epoch` decides cold or warm storage tiers.
  void ReadSample(const replay::SampleCost& cost, uint64_t cache_key, int64_t epoch = 0);
  // Recorded reads aggregated over a batch (fidelity "batch", storage mode "recorded", local storage).
  void SleepRecordedReads(double read_s, int64_t bytes);
  void AddMemory(double delta_bytes);
  // Shared storage: the link classes a read crosses (for network utilisation).
  void SetStorageRoute(const LinkClassCounts& counts) { storage_route_ = counts; }

 private:
  void CountBusy(double cpu_s);
  void ReadShared(double bytes);
  // storage.tiers: the serving tier's latency and per-stream transfer under its stream limit.
  void ReadTiered(const replay::SampleCost& cost, uint64_t cache_key, int64_t epoch);

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
  int storage_in_flight_ = 0;
  int running_executions_ = 0;  // Execute calls in progress on this node's cores (not ExecuteAsync)
  simgrid::s4u::Host* cores_ = nullptr;         // where CPU work runs: hosts_.cpu, or the sharing owner's
  int* running_ = &running_executions_;         // the counter of the cores' owner
  double storage_busy_since_s_ = 0;
  double flops_per_cpu_s_scale_ = 1;
  LinkClassCounts storage_route_{};  // core_speed_scale x straggler factor: recorded -> core-seconds
};

}  // namespace simreplay::sim
