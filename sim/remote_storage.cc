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
