// One rank's PyTorch DataLoader (docs/modelling.md): iterator start (spawn or resume workers, prime
// P x W tasks), workers that run read -> decode+augment -> collate per task (task k -> worker k mod W),
// the pin thread (arrival order), and next() with the reorder buffer (head-of-line blocking) that sends
// one new task per batch handed over. num_workers = 0 loads inline inside next(). Everything it needs
// from the node goes through the node's own NodeState.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include <simgrid/s4u.hpp>

#include "sim/node_state.h"
#include "sim/rank_context.h"
#include "sim/sampler.h"
#include "sim/sim_queue.h"

namespace simreplay::sim {

struct FinishedBatch {
  int64_t batch = -1;  // -1: stop marker for the pin thread
  int64_t size = 0;
  double bytes = 0;
  double ready_s = 0;
};

class DataLoader {
 public:
  // Every reference must outlive the simulation run.
  DataLoader(const RankContext& rank, NodeState* node, const DistributedSampler& sampler, const SimInput& input,
             const RunConfig& config);

  // iter(): starts (or resumes) the workers for `epoch` and primes their tasks.
  // Returns whether it forked the workers (every epoch unless they are persistent; never inline).
  bool StartEpoch(int64_t epoch);
  // next(): batch `b` of the current epoch.
  FinishedBatch Next(int64_t b);

 private:
  struct Task {
    int64_t epoch = 0;
    int64_t batch = 0;
    bool stop = false;
  };
  // One iterator's queues: fresh per epoch for non-persistent workers.
  struct IteratorQueues {
    std::vector<std::unique_ptr<SimQueue<Task>>> index_queues;  // one per worker
    // Worker -> its send thread, one per worker; empty when the model has no send thread.
    std::vector<std::unique_ptr<SimQueue<FinishedBatch>>> send_queues;
    SimQueue<FinishedBatch> results;  // send threads (or workers) -> pin thread or main
    SimQueue<FinishedBatch> pinned;   // pin thread -> main
  };

  void Worker(int worker, IteratorQueues* queues);
  // The worker's result-queue feeder: sends each batch (its CPU beside the worker's next batch), in order.
  void SendThread(int worker, IteratorQueues* queues);
  void PinThread(IteratorQueues* queues);
  FinishedBatch LoadBatch(int track, int64_t epoch, int64_t batch);
  double WarmupCpuS(int64_t first, int64_t count) const;
  void LoadBatchAggregated(int track, int64_t epoch, int64_t first, double collate_s, FinishedBatch* done);
  // Fidelity "sample": each sample's read, then its CPU work. Where reads are delays
  // (NodeState::ReadsAreDelays) the batch's samples are one job on the node's cores; otherwise each read
  // goes through the node's storage and each sample's CPU work is a job of its own.
  void LoadSamplesAsOneJob(int track, int64_t first, FinishedBatch* done);
  void LoadSamplesOneByOne(int track, int64_t epoch, int64_t first, FinishedBatch* done);
  void RecordSample(int track, const replay::SampleCost& cost, double t0, double t1, double t2,
                    double cpu_start_s = -1);
  double CostScale(int track) const;          // recorded CPU cost -> simulated, in a worker or inline
  double OverheadPerSample(int track) const;  // worker CPU per sample outside its stages; 0 inline

  const RankContext& rank_;
  NodeState* node_;
  const DistributedSampler& sampler_;
  const SimInput& input_;
  const RunConfig& config_;
  const scenarios::LoaderConfig& loader_;
  double collate_per_sample_s_ = 0;
  int active_workers_ = 0;  // workers that get tasks: all, or those assigned a shard of a streamed tier
  // A streamed tier whose workers hold different shares: the worker of each task of an epoch (empty:
  // task t goes to worker t mod active_workers_). sim/remote_storage.h, StreamTaskWorkers.
  std::vector<int> task_workers_;
  SimQueue<Task>& QueueOfTask(int64_t task) const;
  // A streamed tier: each reader's connection (index 0 the main process, 1 + w worker w); empty otherwise.
  std::vector<models::ShardStream> streams_;
  models::ShardStream* StreamOf(int track);
  int64_t epoch_ = 0;
  IteratorQueues* queues_ = nullptr;
  std::map<int64_t, FinishedBatch> reorder_;                // _task_info: results that arrived before their turn
  int64_t next_task_ = 0;                                   // next task index to send
  std::vector<std::unique_ptr<IteratorQueues>> iterators_;  // kept until the end: actors may hold them
};

}  // namespace simreplay::sim
