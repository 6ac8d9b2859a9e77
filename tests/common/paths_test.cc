#include "common/paths.h"

#include <filesystem>

#include <gtest/gtest.h>

namespace simreplay {
namespace {

TEST(Paths, DirectoryOf) {
  EXPECT_EQ(DirectoryOf("model.json"), ".");
  EXPECT_EQ(DirectoryOf("/model.json"), "/");
  EXPECT_EQ(DirectoryOf("a/b/model.json"), "a/b");
}

TEST(Paths, ResolveKeepsAbsoluteAndEmptyPaths) {
  EXPECT_EQ(ResolvePath("base", "/abs/t.jsonl"), "/abs/t.jsonl");
  EXPECT_EQ(ResolvePath("base", ""), "");
  EXPECT_EQ(ResolvePath("base", "t.jsonl"), "base/t.jsonl");
  EXPECT_EQ(ResolveBesideFile("runs/model.json", "../t.jsonl"), "runs/../t.jsonl");
  EXPECT_EQ(ResolveBesideFile("model.json", "t.jsonl"), "./t.jsonl");
}

TEST(Paths, RelativeToFileIsTheInverseOfResolve) {
  EXPECT_EQ(PathRelativeToFile("out/traces/t.jsonl", "out/models/m.json"), "../traces/t.jsonl");
  EXPECT_EQ(PathRelativeToFile("/x/t.jsonl", "/x/m.json"), "t.jsonl");
  // Resolving the stored path beside the file gives back the same file.
  const std::string stored = PathRelativeToFile("a/b/t.jsonl", "a/c/m.json");
  EXPECT_EQ(std::filesystem::path(ResolveBesideFile("a/c/m.json", stored)).lexically_normal().string(), "a/b/t.jsonl");
}

TEST(Paths, ModelTraceIsStoredRelativeToTheModelDirectory) {
  EXPECT_EQ(PathRelativeToFile("runs/t.jsonl.gz", "runs/model.json"), "t.jsonl.gz");
  EXPECT_EQ(PathRelativeToFile("t.jsonl.gz", "out/model.json"), "../t.jsonl.gz");
  EXPECT_EQ(PathRelativeToFile("/a/b/t.jsonl", "/a/c/m.json"), "../b/t.jsonl");
}

}  // namespace
}  // namespace simreplay
