// SHA-256 against the FIPS 180-4 example vectors (NIST CSRC "Example Algorithms", SHA256.pdf) and
// against itself fed in odd-sized pieces (the block buffering paths).
#include "common/sha256.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace simreplay {
namespace {

TEST(Sha256, MatchesFipsExampleVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // Two blocks: 56 bytes leave no room for the length in the first padded block.
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // One million 'a' (the long FIPS vector).
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PiecewiseUpdatesEqualOneUpdate) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += static_cast<char>(i * 7 + 3);
  for (size_t piece : {1, 3, 63, 64, 65, 200}) {
    Sha256 hash;
    for (size_t at = 0; at < text.size(); at += piece) hash.Update(std::string_view(text).substr(at, piece));
    EXPECT_EQ(hash.HexDigest(), Sha256Hex(text)) << "piece " << piece;
  }
}

TEST(Sha256, FileDigestEqualsStringDigestAndMissingFileIsNotFound) {
  auto path = std::filesystem::path(::testing::TempDir()) / "sha256_test.bin";
  std::string text(3 << 20, 'x');  // more than one 1 MiB read chunk
  std::ofstream(path, std::ios::binary) << text;
  auto digest = Sha256OfFile(path.string());
  ASSERT_TRUE(digest.ok()) << digest.status().message();
  EXPECT_EQ(*digest, Sha256Hex(text));
  auto missing = Sha256OfFile(path.string() + ".missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  EXPECT_NE(missing.status().message().find("sha256_test.bin.missing"), std::string::npos);
}

}  // namespace
}  // namespace simreplay
