#include "sim/remote_storage.h"

#include <algorithm>

#include <fmt/format.h>

namespace simreplay::sim {

const models::StorageTier* StreamedTier(const scenarios::Scenario& s) {
  const auto& tiers = s.storage.tiers;
  for (auto it = tiers.rbegin(); it != tiers.rend(); ++it) {
    if (it->shard_samples > 0) return &*it;
  }
  return nullptr;
}

int64_t StreamShards(const scenarios::Scenario& s, int64_t dataset_samples) {
  const models::StorageTier* t = StreamedTier(s);
  if (t == nullptr || dataset_samples <= 0) return 0;
  return (dataset_samples + t->shard_samples - 1) / t->shard_samples;
}

int ActiveStreamWorkers(int64_t shards, int ranks, int rank, int workers) {
  if (shards <= 0 || workers <= 0) return workers;
  const int64_t first_reader = static_cast<int64_t>(rank) * workers;
  return static_cast<int>(std::clamp<int64_t>(shards - first_reader, 1, workers));
}

std::vector<int> StreamTaskWorkers(int64_t dataset_samples, int64_t shard_samples, int ranks, int rank, int workers,
                                   int64_t batches_per_epoch) {
  if (shard_samples <= 0 || dataset_samples <= 0 || workers <= 1 || batches_per_epoch <= 0) return {};
  std::vector<int64_t> samples(static_cast<size_t>(workers), 0);
  for (int w = 0; w < workers; ++w) {
    for (int64_t n : ReaderShardSizes(dataset_samples, shard_samples, ranks, rank, workers, w)) {
      samples[static_cast<size_t>(w)] += n;
    }
  }
  int64_t total = 0;
  for (int64_t n : samples) total += n;
  if (total == 0) return {};
  bool even = true;
  for (int64_t n : samples) even = even && (n == 0 || n == samples[0]);
  if (even) return {};
  // The epoch's batches in proportion to each worker's samples, largest remainders first (ties: the
  // lower worker), so that they add up to batches_per_epoch.
  std::vector<int64_t> batches(samples.size(), 0);
  std::vector<std::pair<int64_t, int>> remainders;
  int64_t given = 0;
  for (size_t w = 0; w < samples.size(); ++w) {
    batches[w] = samples[w] * batches_per_epoch / total;
    given += batches[w];
    remainders.emplace_back(-(samples[w] * batches_per_epoch % total), static_cast<int>(w));
  }
  std::sort(remainders.begin(), remainders.end());
  for (size_t i = 0; given < batches_per_epoch; ++i, ++given) ++batches[static_cast<size_t>(remainders[i].second)];
  // Round-robin over the workers with batches left.
  std::vector<int> order;
  order.reserve(static_cast<size_t>(batches_per_epoch));
  while (static_cast<int64_t>(order.size()) < batches_per_epoch) {
    for (size_t w = 0; w < batches.size(); ++w) {
      if (batches[w] == 0) continue;
      --batches[w];
      order.push_back(static_cast<int>(w));
    }
  }
  return order;
}

namespace {

// The shards a reader reads, in order: i = reader, reader + R, ... (ReaderShardSizes).
std::vector<int64_t> ReaderShardIndices(int64_t dataset_samples, int64_t shard_samples, int ranks, int rank,
                                        int workers, int worker) {
  std::vector<int64_t> shards;
  if (shard_samples <= 0 || dataset_samples <= 0) return shards;
  const int64_t readers = static_cast<int64_t>(std::max(1, ranks)) * std::max(1, workers);
  const int64_t count = (dataset_samples + shard_samples - 1) / shard_samples;
  for (int64_t s = static_cast<int64_t>(rank) * std::max(1, workers) + worker; s < count; s += readers) {
    shards.push_back(s);
  }
  return shards;
}

}  // namespace

std::vector<int64_t> ReaderShardSizes(int64_t dataset_samples, int64_t shard_samples, int ranks, int rank, int workers,
                                      int worker) {
  std::vector<int64_t> sizes;
  for (int64_t s : ReaderShardIndices(dataset_samples, shard_samples, ranks, rank, workers, worker)) {
    sizes.push_back(std::min(shard_samples, dataset_samples - s * shard_samples));
  }
  return sizes;
}

std::vector<double> ReaderShardBytes(const std::vector<double>& shard_bytes, int64_t dataset_samples,
                                     int64_t shard_samples, int ranks, int rank, int workers, int worker) {
  std::vector<double> bytes;
  for (int64_t s : ReaderShardIndices(dataset_samples, shard_samples, ranks, rank, workers, worker)) {
    bytes.push_back(s < static_cast<int64_t>(shard_bytes.size()) ? shard_bytes[static_cast<size_t>(s)] : 0.0);
  }
  return bytes;
}

void AddStreamingWarnings(const scenarios::Scenario& s, int64_t dataset_samples, int ranks,
                          std::vector<std::string>* warnings) {
  const int64_t shards = StreamShards(s, dataset_samples);
  if (shards <= 0) return;
  const int workers = std::max(1, s.loader.num_workers);
  const int64_t readers = static_cast<int64_t>(ranks) * workers;
  if (shards < readers) {
    const int64_t idle_ranks = std::max<int64_t>(0, ranks - (shards + workers - 1) / workers);
    warnings->push_back(fmt::format(
        "storage: {} shards of {} samples for {} readers ({} ranks x {} workers): {} workers get no data "
        "(IterableDataset shard assignment){}; use at least {} shards, or fewer workers",
        shards, StreamedTier(s)->shard_samples, readers, ranks, workers, readers - shards,
        idle_ranks > 0 ? fmt::format(", {} ranks none at all (simulated with one worker each)", idle_ranks) : "",
        readers));
  }
}

}  // namespace simreplay::sim
