#include "models/storage_tiers.h"

#include <algorithm>
#include <array>
#include <utility>

namespace simreplay::models {

namespace {
constexpr std::array<std::pair<TierKind, const char*>, 5> kNames = {{{TierKind::kPageCache, "page_cache"},
                                                                     {TierKind::kNvmeCache, "nvme_cache"},
                                                                     {TierKind::kLocal, "local"},
                                                                     {TierKind::kParallelFs, "parallel_fs"},
                                                                     {TierKind::kObjectStore, "object_store"}}};
}  // namespace

const char* TierKindName(TierKind k) {
  for (const auto& [kind, name] : kNames) {
    if (kind == k) return name;
  }
  return "?";
}

bool ParseTierKind(const std::string& name, TierKind* out) {
  for (const auto& [kind, n] : kNames) {
    if (name == n) {
      *out = kind;
      return true;
    }
  }
  return false;
}

int ServingTier(const std::vector<StorageTier>& tiers, int64_t epoch, double u, double node_epoch_bytes) {
  const int last = static_cast<int>(tiers.size()) - 1;
  for (int k = 0; k < last; ++k) {
    const StorageTier& t = tiers[static_cast<size_t>(k)];
    if (epoch == 0 && !t.warm) continue;  // cold: nothing cached yet
    const double held =
        t.capacity_bytes <= 0 || node_epoch_bytes <= 0 ? 1.0 : std::min(1.0, t.capacity_bytes / node_epoch_bytes);
    if (u < held) return k;
  }
  return last;
}

double RequestPacer::Reserve(double now_s, double requests) {
  if (interval_s_ <= 0 || requests <= 0) return 0;
  const double start = std::max(now_s, next_free_s_);
  next_free_s_ = start + interval_s_ * requests;
  return start - now_s;
}

double TierReadS(const StorageTier& t, double bytes, double recorded_read_s) {
  if (t.AsCaptured()) return std::max(0.0, recorded_read_s);
  double s = std::max(0.0, t.latency_s) * t.RequestsPerRead();
  if (t.bytes_per_s_per_stream > 0) s += std::max(0.0, bytes) / t.bytes_per_s_per_stream;
  return s;
}

}  // namespace simreplay::models
