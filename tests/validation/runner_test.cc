// RunChild: a child's output reaches its log, and its error line survives a log that cannot be written.
#include "validation/runner.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace simreplay::validation {
namespace {

namespace fs = std::filesystem;

TEST(RunChild, LogsBothStreamsAndKeepsTheLastErrorLine) {
  const fs::path log = fs::temp_directory_path() / "simreplay_runchild_test.log";
  auto r = RunChild({"sh", "-c", "echo result; echo 'warning: first' >&2; echo 'tool: the error' >&2; exit 3"}, "",
                    log.string(), 30);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->last_error_line, "tool: the error");
  EXPECT_EQ(r->log_error, "");
  EXPECT_EQ(ChildFailure(r), "exit 3: tool: the error");
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  for (const char* line : {"result\n", "warning: first\n", "tool: the error\n"})
    EXPECT_NE(text.str().find(line), std::string::npos) << line;
  fs::remove(log);
}

TEST(RunChild, AFullDiskLosesTheLogNotTheError) {
  auto r =
      RunChild({"sh", "-c", "echo progress; echo 'tool: No space left on device' >&2; exit 1"}, "", "/dev/full", 30);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, 1);
  EXPECT_EQ(r->last_error_line, "tool: No space left on device");
  EXPECT_NE(r->log_error.find("/dev/full: No space left on device"), std::string::npos) << r->log_error;
  EXPECT_EQ(ChildFailure(r), "exit 1: tool: No space left on device; its log is incomplete: " + r->log_error);
}

TEST(RunChild, AnUnwritableLogIsAnError) {
  auto r = RunChild({"true"}, "", "/nonexistent-dir/x.log", 30);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent-dir/x.log"), std::string::npos);
  EXPECT_EQ(ChildFailure(r), r.status().message());
}

}  // namespace
}  // namespace simreplay::validation
