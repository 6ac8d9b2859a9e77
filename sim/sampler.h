// DistributedSampler arithmetic over all ranks of the cluster, and the order in which recorded
// per-sample costs are replayed. Rank r of R reads samples [r x per_rank, (r + 1) x per_rank) of
// every epoch's stream (padding: every rank gets ceil(N / R) samples); the cost of stream position
// i is the recorded cost order[i mod trace size] (cycled when the run is longer than the trace).
#pragma once

#include <cstdint>
#include <vector>

#include "replay/sample_costs.h"

namespace simreplay::sim {

class DistributedSampler {
 public:
  // REQUIRES: costs non-empty, ranks >= 1, batch_size >= 1. `shuffled`: a permutation drawn from seed.
  DistributedSampler(const replay::SampleCostTable& costs, int64_t dataset_samples, int ranks, int batch_size,
                     bool drop_last, bool shuffled, uint64_t seed);

  int64_t per_rank_samples() const { return per_rank_samples_; }
  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  int64_t BatchSize(int64_t batch) const { return batch + 1 == batches_per_epoch_ ? last_batch_size_ : batch_size_; }
  // Stream position of the first sample of (epoch, rank, batch).
  int64_t FirstOrdinal(int64_t epoch, int rank, int64_t batch) const {
    return epoch * per_rank_samples_ * ranks_ + rank * per_rank_samples_ + batch * batch_size_;
  }
  const replay::SampleCost& CostAt(int64_t ordinal) const {
    return costs_.samples[order_[static_cast<size_t>(ordinal % static_cast<int64_t>(order_.size()))]];
  }
  // The sample's identity for page-cache hits (the same recorded sample always hits or misses).
  uint64_t CacheKey(int64_t ordinal) const {
    return static_cast<uint64_t>(ordinal) % static_cast<uint64_t>(order_.size());
  }

 private:
  const replay::SampleCostTable& costs_;
  std::vector<uint32_t> order_;
  int ranks_;
  int batch_size_;
  int64_t per_rank_samples_ = 0;
  int64_t batches_per_epoch_ = 0;
  int64_t last_batch_size_ = 0;
};

}  // namespace simreplay::sim
