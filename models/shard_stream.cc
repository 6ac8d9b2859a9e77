#include "models/shard_stream.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace simreplay::models {

double TarMemberBytes(double bytes) {
  return kTarBlockBytes + std::ceil(std::max(0.0, bytes) / kTarBlockBytes) * kTarBlockBytes;
}

void ShardStream::Open(int64_t epoch, double first_byte_s, double sample_bytes) {
  if (epoch != epoch_) next_shard_ = 0;
  epoch_ = epoch;
  stretch_ = 1;
  if (shard_sizes_.empty()) {
    left_ = std::numeric_limits<int64_t>::max();
    shard_bytes_ = std::numeric_limits<double>::infinity();
  } else {
    // A reader handed more samples than its shards hold (batches split in proportion) goes round again.
    const size_t shard = next_shard_ % shard_sizes_.size();
    left_ = std::max<int64_t>(1, shard_sizes_[shard]);
    ++next_shard_;
    const double members = static_cast<double>(left_) * TarMemberBytes(sample_bytes);
    const double estimate = std::ceil((members + 2 * kTarBlockBytes) / kTarRecordBytes) * kTarRecordBytes;
    const double known = shard < shard_bytes_known_.size() ? shard_bytes_known_[shard] : 0;
    shard_bytes_ = known > 0 ? known : estimate;
    if (known > 0) stretch_ = known / estimate;  // estimate >= one record
  }
  at_s_ = first_byte_s;
  received_ = 0;
  taken_ = 0;
}

void ShardStream::Receive(double now_s, double bytes_per_s) {
  if (now_s <= at_s_) return;
  received_ =
      std::max(received_, std::min(taken_ + kStreamReceiveBufferBytes, received_ + bytes_per_s * (now_s - at_s_)));
  at_s_ = now_s;
}

double ShardStream::Take(double now_s, double bytes, double bytes_per_s) {
  Receive(now_s, bytes_per_s);
  const double needed = taken_ + TarMemberBytes(bytes) * stretch_;
  // The read holding the sample's last byte: a whole kStreamReadBytes, or what is left of the shard.
  const double read_end =
      std::max(needed, std::min(std::ceil(needed / kStreamReadBytes) * kStreamReadBytes, shard_bytes_));
  double ready_s = now_s;
  if (received_ < read_end) {
    // Not all here yet: the rest arrives at the rate, from now or from the first byte if still to come.
    ready_s = std::max(now_s, at_s_) + (read_end - received_) / bytes_per_s;
    received_ = read_end;
    at_s_ = ready_s;
  }
  taken_ = needed;
  --left_;
  return ready_s - now_s;
}

}  // namespace simreplay::models
