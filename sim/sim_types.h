// Inputs and raw outputs of one simulation run. No SimGrid types here, so that callers (the CLI, the
// fork-per-point runner, tests) do not depend on SimGrid.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/latency_summary.h"
#include "models/model_params.h"
#include "replay/sample_costs.h"
#include "scenarios/scenario.h"

namespace simreplay::sim {

struct SimInput {
  scenarios::Scenario scenario;
  models::ModelParams model;
  const replay::SampleCostTable* costs = nullptr;  // must outlive the run
  int cpu_cores = 8;                               // resolved core count of the node
  double background_threads = 0;                   // resolved busy cores taken by other processes
  double step_time_s = 0.05;   // resolved GPU step time per micro-batch (already scaled for batch size)
  bool pipeline_only = false;  // no model step and no collective: the data pipeline alone
  bool record_timeline = false;
};

// One span on a timeline track (Chrome trace "X" event).
struct TimelineEvent {
  int32_t rank = 0;
  int32_t track = 0;  // kTrackMain, kTrackPin, kTrackGpu, kTrackWorker0 + w, kTrackWorkerSend0 + w
  const char* name = "";
  double start_s = 0;
  double duration_s = 0;
};

inline constexpr int32_t kTrackMain = 0;
inline constexpr int32_t kTrackPin = 1;
inline constexpr int32_t kTrackGpu = 2;
inline constexpr int32_t kTrackComm = 3;  // gradient buckets' collectives (the communication stream)
inline constexpr int32_t kTrackWorker0 = 10;
inline constexpr int32_t kTrackWorkerSend0 = 100000;  // + w: worker w's send thread (result queue feeder)

// One rank's totals (multi-rank results; docs/result-format.md "cluster").
struct RankStats {
  int32_t node = 0;
  double gpu_busy_s = 0;
  double wait_s = 0;          // sum of next() waits
  double collective_s = 0;    // inside collectives, barrier waits included
  double exposed_comm_s = 0;  // optimizer-step time after the backward pass ended (not hidden by it)
  int64_t samples = 0;
};

// One node's totals.
struct NodeStats {
  double cpu_busy_core_s = 0;
  double storage_busy_s = 0;
  int64_t storage_read_bytes = 0;
  double peak_host_memory_bytes = 0;
  double memory_bytes = 0;  // current (during the run)
};

// Bytes carried and capacity of one class of links (models::LinkClass order), both directions.
struct LinkClassLoad {
  double bytes = 0;
  double capacity_bytes_per_s = 0;  // summed over the class's links and directions
  int links = 0;
};

// Checkpoint saves (scenario checkpoint section): the stall is what training lost to them, the write
// time what the storage spent on them (in the background for asynchronous saves).
struct CheckpointStats {
  int64_t saves = 0;
  double stall_s = 0;        // sum over saves of the longest time a rank was held by the save
  double write_s = 0;        // sum over saves of first write start -> last write end
  double bytes_written = 0;  // all writers
};

// Everything measured inside one run, before it is summarised into metrics.
struct SimRawStats {
  double makespan_s = 0;
  int64_t samples_consumed = 0;      // all ranks
  int64_t micro_batches = 0;         // all ranks
  std::vector<double> wait_s;        // every next() wait, all ranks, in rank then batch order
  std::vector<double> step_s;        // every optimizer step interval, all ranks
  std::vector<double> queue_wait_s;  // finished batch ready -> taken by the loop
  // Per-sample stage latencies (as simulated): exact up to a million samples, then a sketch whose
  // quantiles are within 0.5% (common/latency_summary.h).
  LatencySummary read_s, decode_s, augment_s;
  double time_to_first_batch_s = 0;   // slowest rank
  double epoch_boundary_stall_s = 0;  // sum of first-batch waits of epochs after the first (rank 0)
  double gpu_busy_s = 0;              // sum over ranks
  double h2d_s = 0;                   // sum over ranks
  double collective_s = 0;            // sum over ranks, including barrier waits
  double cpu_busy_core_s = 0;         // CPU work done, in core-seconds at the node's core speed
  double worker_busy_s = 0;           // sum over workers of time in read/decode/augment/collate
  double worker_count = 0;            // workers alive on average (W x ranks)
  double main_busy_s = 0;             // main-process CPU work (per-batch, inline loading)
  double pin_busy_s = 0;
  double storage_busy_s = 0;  // time with at least one read in flight
  int64_t storage_read_bytes = 0;
  double peak_host_memory_bytes = 0;
  int64_t worker_starts = 0;
  std::vector<TimelineEvent> timeline;
  bool timeline_truncated = false;
  // Cluster figures (one entry per rank / node; link classes in models::LinkClass order).
  std::vector<RankStats> ranks;
  std::vector<NodeStats> nodes;
  std::array<LinkClassLoad, 5> link_load{};
  double exposed_comm_s = 0;     // sum over ranks
  int64_t per_rank_samples = 0;  // DistributedSampler's samples per rank per epoch
  int64_t batches_per_epoch = 0;
  CheckpointStats checkpoint;
  // Rank folding (sim/rank_folding.h): the nodes simulated in full; fewer than the cluster's when
  // folded (then `ranks` and `nodes` hold only theirs and the sums above are scaled to the cluster).
  int32_t simulated_nodes = 0;
  // A folded attempt's wait spread: the sum over steps of the largest minus the smallest time a
  // simulated rank spent before its collectives beyond its GPU step (data waits, start-up), over the
  // run. 0 when no fold was attempted. Above kMaxFoldedWaitSpread the fold is refused or flagged.
  double rank_folding_wait_spread = 0;
};

}  // namespace simreplay::sim
