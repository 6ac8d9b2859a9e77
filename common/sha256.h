// SHA-256 (FIPS 180-4), streaming. Used to fingerprint a sweep's inputs (scenarios/sweep_identity.h) so
// that points computed from different scenarios or input files are never merged into one table.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace simreplay {

class Sha256 {
 public:
  Sha256();
  void Update(std::string_view bytes);
  // The digest as 64 lowercase hex digits. The object must not be updated afterwards.
  std::string HexDigest();

 private:
  void Block(const uint8_t* block);
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_bytes_ = 0;
  uint64_t total_bytes_ = 0;
};

// Digest of a string.
std::string Sha256Hex(std::string_view bytes);
// Digest of a file's bytes, read in chunks. Error names the file.
Result<std::string> Sha256OfFile(const std::string& path);

}  // namespace simreplay
