// FILE:LINE for errors found on parsed JSON (common/error_line.h).
#include "common/error_line.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace simreplay {
namespace {

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::path(::testing::TempDir()) / name).string();
  std::ofstream(path) << text;
  return path;
}

TEST(ErrorLine, KeyIsSearchedAfterItsSection) {
  // "num_workers" appears on line 2 inside "data" (a decoy) and on line 4 inside "loader".
  const std::string text = "{\n \"data\": {\"num_workers\": 1},\n \"loader\": {\n  \"num_workers\": -2}\n}\n";
  EXPECT_EQ(LineOfKey(text, "loader", "num_workers"), 4);
  EXPECT_EQ(LineOfKey(text, "", "num_workers"), 2);
  EXPECT_EQ(LineOfKey(text, "loader", "absent"), 0);
}

TEST(ErrorLine, RewritesOnlyUnlocatedErrorsAboutThatFile) {
  const std::string path = WriteTemp("error_line.json", "{\n \"loader\": {\n  \"batch_size\": 0}\n}\n");
  Status s = WithLineFromFile(Status::InvalidArgument(path + ": loader: 'batch_size' must be >= 1"), path);
  EXPECT_EQ(s.message(), path + ":3: loader: 'batch_size' must be >= 1");
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  // No key: the document as a whole.
  EXPECT_EQ(WithLineFromFile(Status::InvalidArgument(path + ": missing required section"), path).message(),
            path + ":1: missing required section");
  // Already located, about another file, or OK: unchanged.
  const Status located = Status::InvalidArgument(path + ":7: x");
  EXPECT_EQ(WithLineFromFile(located, path).message(), located.message());
  EXPECT_EQ(WithLineFromFile(Status::NotFound("other.json: 'a' x"), path).message(), "other.json: 'a' x");
  EXPECT_TRUE(WithLineFromFile(Status::Ok(), path).ok());
}

}  // namespace
}  // namespace simreplay
