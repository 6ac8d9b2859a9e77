// ParseJson / ParseJsonText / ReadJsonFile: every failure of nlohmann's parser is a Status naming
// FILE:LINE, never an exception.
#include "common/json_fields.h"

#include <gtest/gtest.h>

#include <fstream>

namespace simreplay {
namespace {

TEST(ParseJson, MalformedLineNamesWhere) {
  auto j = ParseJson("{\"a\":", "t.jsonl:7");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message().rfind("t.jsonl:7: malformed JSON: parse error", 0), 0u) << j.status().message();
}

TEST(ParseJson, NonFiniteLiteralIsNamed) {
  auto j = ParseJson("{\"a\":NaN}", "t.jsonl:2");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message(), "t.jsonl:2: NaN or infinite number (not valid JSON, not allowed)");
}

// Regression (issue 13): out_of_range 406 ("number overflow parsing '1e400'") escaped the parse_error
// handler and aborted the process.
TEST(ParseJson, RegressionNumberOverflowIsAStatus) {
  auto j = ParseJson("{\"a\":[1,-1e400]}", "t.jsonl:3");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message(), "t.jsonl:3: a number out of range: -1e400 does not fit a 64-bit float");
}

TEST(ParseJsonText, RegressionNumberOverflowNamesItsLine) {
  // 1e400 is on line 3: the error points there although the exception carries no offset.
  auto j = ParseJsonText("{\n  \"a\": 1,\n  \"b\": 1e400\n}\n", "m.json");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message(), "m.json:3: a number out of range: 1e400 does not fit a 64-bit float");
}

TEST(ParseJsonText, ParseErrorNamesItsLine) {
  auto j = ParseJsonText("{\n  \"a\": 1,\n  \"b\": }\n", "m.json");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message().rfind("m.json:3: malformed JSON: parse error", 0), 0u) << j.status().message();
}

TEST(ReadJsonFile, RegressionNumberOverflowInAFile) {
  std::string path = ::testing::TempDir() + "/overflow.json";
  std::ofstream(path) << "{\"schema\": \"simreplay.model/1\",\n \"cpu\": {\"pin_bytes_per_s\": 2e308}}\n";
  auto j = ReadJsonFile(path);
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message(), path + ":2: a number out of range: 2e308 does not fit a 64-bit float");
}

}  // namespace
}  // namespace simreplay
