// One reader's connection streaming tar shards from a streamed storage tier (WebDataset-style: one GET per
// shard, its samples back to back; models/storage_tiers.h, `shard_samples`). Plain C++, no SimGrid:
// sim/node_state.cc drives it.
//
// The connection receives at the tier's per-stream rate from the shard's first byte whether or not the
// reader is busy decoding: the kernel's socket receive buffer keeps what the reader has not taken yet,
// up to kStreamReceiveBufferBytes (beyond it the sender stalls). So a sample's read waits only for the
// bytes still in transit, and transfer overlaps decode: a reader whose decode is slower than its stream
// waits for the first byte only. A per-sample GET (map-style) has no such overlap: its request is sent
// only when the worker asks for the sample.
//
// Measured against nginx serving tar shards at a paced rate (docs/remote-storage.md, "Read-ahead of a streamed shard"):
// streams of 2 workers at 2 MB/s per connection delivered 244 samples/s where 2 x 2 MB/s over 16.6 kB
// per sample allows 241, while reading then decoding in turn predicted 161.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace simreplay::models {

// Linux's default ceiling of the autotuned TCP receive buffer (net.ipv4.tcp_rmem, third value:
// 6 MiB; Documentation/networking/ip-sysctl.rst): what a stream can hold ahead of its reader.
inline constexpr double kStreamReceiveBufferBytes = 6.0 * 1024 * 1024;
// The reader takes the stream in reads of this many bytes, each returning only when full (or at the
// shard's end): simreplay_capture.remote.TarShardStream reads through io.BufferedReader(response,
// 64 KiB), and http.client fills a read before it returns. So a sample is there once the read holding
// its last byte has arrived: a shard's first sample waits 64 KiB, not its own bytes (measured: 44 ms to
// the first sample at 2 MB/s and a 12 ms first byte). WebDataset's tarfile stream reads 10 KiB records.
inline constexpr double kStreamReadBytes = 64.0 * 1024;
// A tar shard's framing (POSIX ustar, as tarfile and GNU tar write it): each member is a 512-byte header
// and its data padded to 512 bytes; the archive ends with two zero blocks, padded to a 10240-byte record
// (tarfile.RECORDSIZE). On the remote harness's shards of 16 kB photos the framing is 4.8-5.5% of the
// file (docs/remote-storage.md).
inline constexpr double kTarBlockBytes = 512;
inline constexpr double kTarRecordBytes = 10240;
// Bytes a member of `bytes` occupies in a tar stream: its header and its data padded to whole blocks.
double TarMemberBytes(double bytes);

class ShardStream {
 public:
  ShardStream() = default;
  // `shard_sizes`: the samples of each shard this reader is assigned, in order; every epoch reads them
  // again from the first (an IterableDataset's __iter__). Empty: one shard of unbounded length.
  // `shard_bytes`: those shards' lengths in bytes where known (> 0), else estimated (Open).
  explicit ShardStream(std::vector<int64_t> shard_sizes, std::vector<double> shard_bytes = {})
      : shard_sizes_(std::move(shard_sizes)), shard_bytes_known_(std::move(shard_bytes)) {}

  // Whether the next read of `epoch` starts a shard (a new request): the first read of an epoch, or
  // the open shard's samples are all taken.
  bool NeedsShard(int64_t epoch) const { return epoch != epoch_ || left_ <= 0; }
  // Starts this reader's next shard of `epoch` (its first at a new epoch) whose first byte arrives at
  // `first_byte_s`; `sample_bytes`: the mean bytes of a sample. The shard's length is its known length,
  // or its samples as tar members of that mean size plus the archive's end; a known length also
  // stretches every sample's place in the stream by known / estimated, so that the shard's samples end
  // where its file does.
  void Open(int64_t epoch, double first_byte_s, double sample_bytes);
  // Takes the next sample, a tar member of `bytes`, at `now_s` from a connection receiving `bytes_per_s`;
  // returns the seconds until the read holding its last byte has arrived (0 when already there).
  // REQUIRES: a shard open, bytes_per_s > 0.
  double Take(double now_s, double bytes, double bytes_per_s);
  // The open shard's samples are all taken (its connection closes).
  bool ShardDone() const { return left_ <= 0; }

 private:
  // Bytes received up to now_s: at the rate from the later of the first byte and the last account,
  // never more than the receive buffer ahead of what the reader took.
  void Receive(double now_s, double bytes_per_s);

  std::vector<int64_t> shard_sizes_;
  std::vector<double> shard_bytes_known_;  // per entry of shard_sizes_; missing or <= 0: estimated
  int64_t epoch_ = -1;
  size_t next_shard_ = 0;   // index into shard_sizes_ of the shard Open starts next
  int64_t left_ = 0;        // samples of the open shard not taken yet
  double at_s_ = 0;         // time up to which received_ is accounted (the first byte's, before it)
  double received_ = 0;     // bytes of the open shard received by at_s_
  double taken_ = 0;        // bytes of the open shard the reader took
  double shard_bytes_ = 0;  // the open shard's length in the stream
  double stretch_ = 1;      // the open shard's known length over its estimate (1 when estimated)
};

}  // namespace simreplay::models
