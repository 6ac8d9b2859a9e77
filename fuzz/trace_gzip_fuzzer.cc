// Fuzz target: the trace reader on gzip-compressed traces, including the truncated-tail path a killed
// writer leaves. Input layout:
//   byte 0      mode: bit 0 set = bytes 3.. are written as they are (raw gzip, corrupt headers and CRCs);
//               clear = bytes 3.. are a trace text that is compressed here.
//               bit 1 set = a second gzip member (the same text) is appended (zlib reads concatenations).
//   bytes 1-2   where to cut the compressed file: cut = size * (b1 | b2 << 8) / 65535 (65535 = keep all).
//   bytes 3..   payload.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "fuzz/trace_check.h"

namespace {

std::vector<uint8_t> Gzip(const uint8_t* data, size_t size) {
  z_stream z{};
  // windowBits 15 + 16: a gzip wrapper, as TraceWriter and Python's gzip module write.
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
  std::vector<uint8_t> out(deflateBound(&z, size) + 64);
  z.next_in = const_cast<uint8_t*>(data);
  z.avail_in = static_cast<uInt>(size);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  static const std::string path = simreplay::fuzz::ScratchPath(".jsonl.gz");
  const uint8_t mode = data[0];
  const uint32_t cut_fraction = data[1] | (data[2] << 8);
  const uint8_t* payload = data + 3;
  const size_t payload_size = size - 3;
  std::vector<uint8_t> file;
  if (mode & 1) {
    file.assign(payload, payload + payload_size);
  } else {
    file = Gzip(payload, payload_size);
    if (mode & 2) {
      auto second = Gzip(payload, payload_size);
      file.insert(file.end(), second.begin(), second.end());
    }
  }
  size_t keep = static_cast<size_t>(static_cast<uint64_t>(file.size()) * cut_fraction / 65535);
  simreplay::fuzz::WriteFileOrDie(path, file.data(), keep);
  simreplay::fuzz::ReadWholeTrace(path);
  return 0;
}
