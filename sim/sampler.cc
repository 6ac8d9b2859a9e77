#include "sim/sampler.h"

#include <numeric>
#include <utility>

#include "common/random.h"

namespace simreplay::sim {

// The shuffle's own stream of the scenario seed ("seedc057").
constexpr uint64_t kShuffleStream = 0x5eedc057ULL;

DistributedSampler::DistributedSampler(const replay::SampleCostTable& costs, int64_t dataset_samples, int ranks,
                                       int batch_size, bool drop_last, bool shuffled, uint64_t seed)
    : costs_(costs), ranks_(ranks), batch_size_(batch_size) {
  const int64_t dataset = dataset_samples > 0 ? dataset_samples : costs.distinct_indices;
  // DistributedSampler pads so every rank gets ceil(N / ranks) samples.
  per_rank_samples_ = (dataset + ranks - 1) / ranks;
  const int64_t bs = batch_size;
  batches_per_epoch_ = drop_last ? per_rank_samples_ / bs : (per_rank_samples_ + bs - 1) / bs;
  last_batch_size_ = drop_last ? bs : per_rank_samples_ - (batches_per_epoch_ - 1) * bs;
  order_.resize(costs.samples.size());
  std::iota(order_.begin(), order_.end(), 0u);
  if (shuffled) {
    Rng rng(Rng::DeriveSeed(seed, kShuffleStream));
    for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng.Below(i)]);
  }
}

}  // namespace simreplay::sim
