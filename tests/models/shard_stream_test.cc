// Closed-form checks of one reader's shard stream (models/shard_stream.h).
#include "models/shard_stream.h"

#include <gtest/gtest.h>

namespace simreplay::models {
namespace {

constexpr double kTol = 1e-9;
constexpr double kRead = kStreamReadBytes;  // one of the reader's reads
// A sample's data that, as a tar member (its 512-byte header and its data in whole blocks), takes
// `stream_bytes` of the stream (a multiple of 512).
double DataFor(double stream_bytes) { return stream_bytes - kTarBlockBytes; }

TEST(ShardStream, TarMembersAreAHeaderAndWholeBlocks) {
  EXPECT_EQ(TarMemberBytes(0), 512);
  EXPECT_EQ(TarMemberBytes(1), 1024);
  EXPECT_EQ(TarMemberBytes(512), 1024);
  EXPECT_EQ(TarMemberBytes(513), 1536);
  EXPECT_EQ(TarMemberBytes(DataFor(kRead)), kRead);
}

TEST(ShardStream, WaitsForBytesInTransitOnly) {
  // 10 reads/s from a first byte at 1 s, samples of one read each, a shard of 4.
  ShardStream s({4});
  ASSERT_TRUE(s.NeedsShard(0));
  const double d = DataFor(kRead);
  s.Open(0, 1.0, d);
  EXPECT_FALSE(s.NeedsShard(0));
  EXPECT_NEAR(s.Take(0.0, d, 10 * kRead), 1.1, kTol);  // the first byte, then 0.1 s of transfer
  EXPECT_NEAR(s.Take(1.1, d, 10 * kRead), 0.1, kTol);  // taken at once: the next one still to come
  // The reader decodes for 0.5 s: 5 reads more arrived meanwhile, so the next two are already here.
  EXPECT_NEAR(s.Take(1.7, d, 10 * kRead), 0.0, kTol);
  EXPECT_NEAR(s.Take(1.7, d, 10 * kRead), 0.0, kTol);
  EXPECT_TRUE(s.ShardDone());
  EXPECT_TRUE(s.NeedsShard(0));
}

TEST(ShardStream, SamplesComeAWholeReadAtATime) {
  // One read per second, samples of a quarter read: the first waits for the whole first read, the
  // next three are in it, the fifth waits for the second read.
  const double q = DataFor(kRead / 4);
  ShardStream s({8});
  s.Open(0, 0.0, q);
  EXPECT_NEAR(s.Take(0.0, q, kRead), 1.0, kTol);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(s.Take(1.0, q, kRead), 0.0, kTol) << i;
  EXPECT_NEAR(s.Take(1.0, q, kRead), 1.0, kTol);
  // A shard of 6 quarter reads ends in the middle of its second read: the read returns at the file's
  // end, 6 members + two zero blocks padded to a 10240-byte record = 102400 bytes, 0.5625 reads on.
  ShardStream t({6});
  t.Open(0, 0.0, q);
  for (int i = 0; i < 4; ++i) t.Take(0.0, q, kRead);
  EXPECT_NEAR(t.Take(1.0, q, kRead), (102400 - kRead) / kRead, kTol);
}

TEST(ShardStream, TheReceiveBufferBoundsWhatArrivesAhead) {
  // 1 MiB/s, 1 MiB samples; the reader stalls for an hour after the first: the buffer holds 6 MiB,
  // so six samples are there and the seventh is still to come (1 s).
  const double mib = 1024.0 * 1024.0;
  ShardStream s({10});
  s.Open(0, 0.0, DataFor(mib));
  EXPECT_NEAR(s.Take(0.0, DataFor(mib), mib), 1.0, kTol);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(s.Take(3600.0, DataFor(mib), mib), 0.0, kTol) << i;
  EXPECT_NEAR(s.Take(3600.0, DataFor(mib), mib), 1.0, kTol);
  EXPECT_NEAR(kStreamReceiveBufferBytes, 6 * mib, kTol);
}

TEST(ShardStream, ShardsFollowTheAssignmentAndRestartEachEpoch) {
  ShardStream s({2, 1});
  s.Open(0, 0.0, 1);
  s.Take(0.0, 1, 1);
  EXPECT_FALSE(s.NeedsShard(0));
  s.Take(0.0, 1, 1);
  ASSERT_TRUE(s.NeedsShard(0));
  // The second shard, of one small sample: a fresh connection (its own first byte at 10 s), whose one
  // read returns at the file's end, one 10240-byte record (1 s at that rate).
  s.Open(0, 10.0, 1);
  EXPECT_NEAR(s.Take(5.0, 1, kTarRecordBytes), 6.0, kTol);
  EXPECT_TRUE(s.ShardDone());
  // A new epoch starts at the first shard again, even with the open one not done.
  ShardStream t({3, 1});
  t.Open(0, 0.0, 1);
  t.Take(0.0, 1, 1);
  EXPECT_TRUE(t.NeedsShard(1));
  t.Open(1, 0.0, 1);
  t.Take(1.0, 1, 1);
  t.Take(2.0, 1, 1);
  EXPECT_FALSE(t.NeedsShard(1));  // the epoch's first shard holds 3
}

TEST(ShardStream, AKnownShardLengthPlacesItsSamplesAlongTheWholeFile) {
  // Four one-read members, estimated at 266240 bytes (4 reads + the archive's end, in whole records);
  // the file is known to be twice that: each sample sits twice as far into the stream, and a reader
  // that takes them at once waits 2, 4, 6 and 8 reads' time, where the estimate gave 1, 2, 3, 4.
  const double d = DataFor(kRead);
  ShardStream estimated({4});
  ShardStream known({4}, {2 * 266240});
  estimated.Open(0, 0.0, d);
  known.Open(0, 0.0, d);
  double e = 0, k = 0;
  for (int i = 1; i <= 4; ++i) {
    e += estimated.Take(e, d, kRead);
    k += known.Take(k, d, kRead);
    EXPECT_NEAR(e, i, kTol) << i;
    EXPECT_NEAR(k, 2 * i, kTol) << i;
  }
  // A length of 0 (unknown) keeps the estimate.
  ShardStream unknown({4}, {0});
  unknown.Open(0, 0.0, d);
  EXPECT_NEAR(unknown.Take(0.0, d, kRead), 1.0, kTol);
}

}  // namespace
}  // namespace simreplay::models
