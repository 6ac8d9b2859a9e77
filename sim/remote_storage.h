// Streamed remote storage (WebDataset-style tar shards read as an IterableDataset): which loader workers
// get data, and the findings the scenario earns (docs/remote-storage.md, "Shard assignment").
//
// An IterableDataset assigns whole shards to readers: shard i to reader i mod R, R = ranks x workers,
// reader r = rank x workers + worker (simreplay_capture.remote.shard_assignment, as WebDataset's
// split_by_node + split_by_worker do). With S shards, reader r gets data iff r < S: with S < R the
// readers r >= S get none, and the DataLoader delivers batches from the others only (PyTorch skips an
// exhausted worker). The simulator hands tasks to the workers that have data only, and where their
// shares differ (the last shard is short, or S is not a multiple of R) a worker whose shards run out
// leaves the cycle while the others go on (StreamTaskWorkers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scenarios/scenario.h"

namespace simreplay::sim {

// The streamed tier of the scenario (the last tier with shard_samples > 0), or nullptr.
const models::StorageTier* StreamedTier(const scenarios::Scenario& s);

// Shards of the dataset on the streamed tier: ceil(samples / shard_samples); 0 without a streamed tier.
int64_t StreamShards(const scenarios::Scenario& s, int64_t dataset_samples);

// Workers of `rank` that get at least one shard (1..workers: a rank left with none still runs one, and
// the finding says so); `workers` when nothing is streamed or workers is 0.
int ActiveStreamWorkers(int64_t shards, int ranks, int rank, int workers);

// The worker of each of the rank's `batches_per_epoch` tasks when the workers hold different shares of
// the streamed dataset: PyTorch sends tasks round-robin over the workers still active, and a worker
// whose shards are exhausted answers StopIteration and leaves the cycle. A worker's batches are the
// epoch's batches split in proportion to the samples of its shards (largest remainders). Empty when
// every active worker holds the same share (then task t goes to worker t mod active workers).
std::vector<int> StreamTaskWorkers(int64_t dataset_samples, int64_t shard_samples, int ranks, int rank, int workers,
                                   int64_t batches_per_epoch);

// The samples of each shard assigned to `worker` of `rank` (workers >= 1; the main process loading
// inline is worker 0 of 1), in the order it reads them: shards i = reader, reader + R, ... with
// R = ranks x workers. Empty when the reader gets none.
std::vector<int64_t> ReaderShardSizes(int64_t dataset_samples, int64_t shard_samples, int ranks, int rank, int workers,
                                      int worker);
// The lengths in bytes of the same shards, from the tier's `shard_bytes` (0 where it gives none).
std::vector<double> ReaderShardBytes(const std::vector<double>& shard_bytes, int64_t dataset_samples,
                                     int64_t shard_samples, int ranks, int rank, int workers, int worker);

// The finding: a warning when shards < ranks x workers (workers that get no data), and a note of the
// per-request amortisation. Appends to `warnings`.
void AddStreamingWarnings(const scenarios::Scenario& s, int64_t dataset_samples, int ranks,
                          std::vector<std::string>* warnings);

}  // namespace simreplay::sim
