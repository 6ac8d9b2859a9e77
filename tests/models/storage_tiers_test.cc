#include "models/storage_tiers.h"

#include <gtest/gtest.h>

namespace simreplay::models {
namespace {

StorageTier Tier(TierKind kind, double capacity, double latency_s, double bw, int streams = 0, bool warm = false) {
  StorageTier t;
  t.kind = kind;
  t.capacity_bytes = capacity;
  t.latency_s = latency_s;
  t.bytes_per_s_per_stream = bw;
  t.max_streams = streams;
  t.warm = warm;
  return t;
}

TEST(StorageTiers, ReadCostIsLatencyPlusPerStreamTransfer) {
  // Object store: 30 ms + 1 MB / 100 MB/s = 40 ms.
  EXPECT_NEAR(TierReadS(Tier(TierKind::kObjectStore, 0, 0.03, 1e8), 1e6, 9.0), 0.04, 1e-15);
  // As captured (no latency, no bandwidth): the recorded read time.
  EXPECT_EQ(TierReadS(Tier(TierKind::kPageCache, 0, -1, -1), 1e6, 0.002), 0.002);
}

TEST(StorageTiers, ColdFirstEpochFallsThroughWarmLaterEpochsHit) {
  const std::vector<StorageTier> tiers = {Tier(TierKind::kNvmeCache, 0, 1e-4, 2e9),
                                          Tier(TierKind::kObjectStore, 0, 0.03, 1e8)};
  EXPECT_EQ(ServingTier(tiers, 0, 0.0, 1e9), 1);   // epoch 0: the cache is empty
  EXPECT_EQ(ServingTier(tiers, 1, 0.99, 1e9), 0);  // unbounded cache: everything is held afterwards
  auto warm = tiers;
  warm[0].warm = true;
  EXPECT_EQ(ServingTier(warm, 0, 0.5, 1e9), 0);  // declared warm: no cold epoch
}

TEST(StorageTiers, CapacityBoundsTheHitFractionAndCachesAreInclusive) {
  // Page cache 25 GB and NVMe 50 GB in front of a parallel FS; the node reads 100 GB per epoch:
  // f = 0.25 and 0.5, so u < 0.25 -> page cache, 0.25 <= u < 0.5 -> NVMe, else the parallel FS.
  const std::vector<StorageTier> tiers = {Tier(TierKind::kPageCache, 25e9, -1, -1),
                                          Tier(TierKind::kNvmeCache, 50e9, 1e-4, 2e9),
                                          Tier(TierKind::kParallelFs, 0, 1e-3, 1e9)};
  EXPECT_EQ(ServingTier(tiers, 2, 0.2, 100e9), 0);
  EXPECT_EQ(ServingTier(tiers, 2, 0.3, 100e9), 1);
  EXPECT_EQ(ServingTier(tiers, 2, 0.5, 100e9), 2);
  EXPECT_EQ(ServingTier(tiers, 0, 0.2, 100e9), 2);
}

TEST(StorageTiers, KindNamesRoundTrip) {
  for (const char* name : {"page_cache", "nvme_cache", "local", "parallel_fs", "object_store"}) {
    TierKind k;
    ASSERT_TRUE(ParseTierKind(name, &k));
    EXPECT_STREQ(TierKindName(k), name);
  }
  TierKind k;
  EXPECT_FALSE(ParseTierKind("s3", &k));
}

TEST(StorageTiers, StreamedTierSpreadsTheLatencyOverTheShard) {
  StorageTier t = Tier(TierKind::kObjectStore, 0, 0.04, 1e8);
  t.shard_samples = 8;  // one GET per 8 samples: 40 ms / 8 + 1 MB / 100 MB/s = 15 ms
  EXPECT_NEAR(TierReadS(t, 1e6, 9.0), 0.015, 1e-15);
  EXPECT_EQ(t.RequestsPerRead(), 0.125);
}

TEST(StorageTiers, RequestPacerSpacesRequests) {
  RequestPacer off;
  EXPECT_EQ(off.Reserve(0, 1), 0);
  RequestPacer p(10);  // 10 requests/s: 100 ms apart
  EXPECT_EQ(p.Reserve(0, 1), 0);
  EXPECT_NEAR(p.Reserve(0, 1), 0.1, 1e-15);   // the burst queues
  EXPECT_NEAR(p.Reserve(0.05, 1), 0.15, 1e-15);
  EXPECT_EQ(p.Reserve(5, 1), 0);              // an idle store: no wait
  EXPECT_NEAR(p.Reserve(5, 0.5), 0.1, 1e-15);  // half a request (a streamed read) takes half a slot
  EXPECT_NEAR(p.Reserve(5, 1), 0.15, 1e-15);
}

}  // namespace
}  // namespace simreplay::models
