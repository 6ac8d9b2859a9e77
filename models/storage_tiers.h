// Storage tiers: an ordered list, fastest first, of the places a sample can be read from (page cache,
// local NVMe cache, local disk, parallel file system, object store). The last tier holds the whole
// dataset; every tier above it is a cache that starts empty (cold) unless declared warm, and is filled
// by the reads that fall through it. Plain C++, no SimGrid: sim/node_state.cc issues the reads.
//
// Which tier serves a read (ServingTier): in the first epoch (e = 0) every read of a cold cache falls
// through to the slowest tier; from the second epoch on cache k holds a fraction
//   f_k = min(1, capacity_k / bytes the node reads per epoch)      (1 when capacity_k is 0: unbounded)
// of the node's samples, the same ones every epoch: a sample whose identity hashes to u in [0, 1) is
// served by the first cache with u < f_k (inclusive caches: what a small cache holds a larger one
// holds too), else by the last tier. The hash stands for which samples survive eviction; with a cache
// smaller than the data it gives the random-replacement hit rate f_k (LRU under a cyclic scan would
// give 0, under a fresh shuffle each epoch about f_k).
//
// Cost of one read of b bytes served by tier t (TierReadS):
//   t.latency_s x requests + b / t.bytes_per_s_per_stream, with at most t.max_streams reads in flight per
// node (the node's client cap: one connection per read in flight); a tier that gives neither latency nor
// bandwidth is "as captured": its cost is the recorded read time. requests = 1 for per-sample GETs
// (map-style loaders: one request per sample, one at a time per worker process); for a streamed tier
// (shard_samples = N > 0: WebDataset-style tar shards of N samples, one GET per shard) 1 / N: the shard's
// first-byte latency spread over its samples, the rest at the connection's rate. The simulator reads a
// streamed tier that has a per-stream rate through each reader's connection instead, transfer
// overlapping decode (models/shard_stream.h); this cost is what remains for one without a rate.
// Request-rate limit (requests_per_s > 0, per node): requests leave no closer than 1 / rate apart
// (RequestPacer); a burst of workers opening their first request at once waits its turn.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace simreplay::models {

enum class TierKind { kPageCache, kNvmeCache, kLocal, kParallelFs, kObjectStore };

struct StorageTier {
  TierKind kind = TierKind::kLocal;
  double capacity_bytes = 0;           // caches: bytes held per node; 0 = the whole dataset
  double latency_s = -1;               // per request; < 0 (with bandwidth < 0): as captured
  double bytes_per_s_per_stream = -1;  // one request's transfer rate; < 0: as captured
  int max_streams = 0;                 // concurrent requests per node; 0 = unlimited
  bool warm = false;                   // the cache already holds the data in the first epoch
  int64_t shard_samples = 0;           // > 0: streamed in shards of this many samples (one GET per shard)
  // Streamed: each shard's length in bytes (its tar file's size), in shard order; missing or 0: estimated
  // from the samples' bytes in tar framing (models/shard_stream.h).
  std::vector<double> shard_bytes;
  double requests_per_s = 0;           // per node; 0 = unlimited
  bool AsCaptured() const { return latency_s < 0 && bytes_per_s_per_stream < 0; }
  // Requests one read of a sample makes: 1, or 1 / shard_samples for a streamed tier.
  double RequestsPerRead() const { return shard_samples > 0 ? 1.0 / static_cast<double>(shard_samples) : 1.0; }
};

// Spaces a node's requests to one tier at most `requests_per_s` apart. Reserve returns how long a
// request made at `now_s` waits for its turn (0 when the limit is off or the store is idle).
class RequestPacer {
 public:
  explicit RequestPacer(double requests_per_s = 0) : interval_s_(requests_per_s > 0 ? 1.0 / requests_per_s : 0) {}
  // `requests`: this read's share of a request (RequestsPerRead).
  double Reserve(double now_s, double requests);

 private:
  double interval_s_ = 0;
  double next_free_s_ = 0;
};

const char* TierKindName(TierKind k);
// "page_cache", "nvme_cache", "local", "parallel_fs", "object_store"; false when unknown.
bool ParseTierKind(const std::string& name, TierKind* out);

// Index of the tier serving a read in `epoch` of a sample whose identity hashes to `u` in [0, 1).
// `node_epoch_bytes`: bytes this node reads per epoch (> 0). REQUIRES: tiers non-empty.
int ServingTier(const std::vector<StorageTier>& tiers, int64_t epoch, double u, double node_epoch_bytes);

// Seconds one read of `bytes` takes on an idle tier t (the recorded time when t is as captured).
double TierReadS(const StorageTier& t, double bytes, double recorded_read_s);

}  // namespace simreplay::models
