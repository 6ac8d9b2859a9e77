// The observed half of a diagnosis, read from the bundled quickstart trace (and damaged copies of it).
#include "advise/observations.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <zlib.h>

#include "tests/advise/advise_test_util.h"

namespace simreplay::advise {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> TraceLines() {
  gzFile f = gzopen((testing::QuickstartDir() + "/trace.jsonl.gz").c_str(), "rb");
  std::vector<std::string> lines;
  char buffer[1 << 16];
  std::string line;
  while (gzgets(f, buffer, sizeof(buffer)) != nullptr) {
    line += buffer;
    if (!line.empty() && line.back() == '\n') {
      lines.push_back(line);
      line.clear();
    }
  }
  gzclose(f);
  return lines;
}

std::string WriteTrace(const std::string& name, const std::vector<std::string>& lines) {
  const fs::path p = fs::path(::testing::TempDir()) / name;
  std::ofstream out(p);
  for (const auto& l : lines) out << l;
  return p.string();
}

// The quickstart capture: 40 batches of 8 on one rank, 40 steps, 352 sample records (the workers'
// prefetched batches beyond the last step are recorded too), 5 host records, and a footer.
TEST(Observations, ReadsTheLoopBreakdownStagesAndMemory) {
  auto o = ObserveTrace(testing::QuickstartDir() + "/trace.jsonl.gz");
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->samples, 320);
  EXPECT_EQ(o->batches, 40);
  EXPECT_EQ(o->steps, 40);
  EXPECT_EQ(o->ranks, 1);
  EXPECT_TRUE(o->has_sample_records);
  ASSERT_GE(o->stages.size(), 3u);
  EXPECT_EQ(o->stages[0].stage, "read");
  EXPECT_EQ(o->stages[0].count, 352);
  for (const auto& s : o->stages) {
    EXPECT_LE(s.p50_s, s.p95_s + 1e-15) << s.stage;
    EXPECT_LE(s.p95_s, s.max_s + 1e-15) << s.stage;
  }
  EXPECT_EQ(o->memory.size(), 5u);
  EXPECT_GT(o->peak_host_memory_bytes, 0);
  // The parts add up to the wall time (other = the remainder, never negative).
  EXPECT_NEAR(o->data_wait_s + o->copy_s + o->compute_s + o->comm_s + o->other_s, o->wall_s, 1e-9);
  EXPECT_NEAR(o->train_samples_per_s, 320 / o->wall_s, 1e-9);
  for (const auto& c : o->cannot_see) EXPECT_EQ(c.find("no footer"), std::string::npos) << c;
}

TEST(Observations, TruncatedTraceUsesItsCompletePartAndSaysSo) {
  auto lines = TraceLines();
  ASSERT_GT(lines.size(), 100u);
  lines.resize(lines.size() / 2);
  lines.push_back(lines.back().substr(0, lines.back().size() / 2));  // a half-written last line
  auto o = ObserveTrace(WriteTrace("truncated.jsonl", lines));
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_GT(o->batches, 0);
  EXPECT_LT(o->batches, 40);
  bool said = false;
  for (const auto& c : o->cannot_see) said = said || c.find("no footer") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_FALSE(o->warnings.empty()) << "the reader says it dropped the half line";
}

TEST(Observations, TraceWithoutSampleRecordsSaysWhatItCannotSee) {
  std::vector<std::string> kept;
  for (const auto& l : TraceLines()) {
    if (l.find("\"type\":\"sample\"") == std::string::npos) kept.push_back(l);
  }
  auto o = ObserveTrace(WriteTrace("no_samples.jsonl", kept));
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_FALSE(o->has_sample_records);
  EXPECT_EQ(o->batches, 40);
  ASSERT_FALSE(o->cannot_see.empty());
  EXPECT_NE(o->cannot_see[0].find("no sample records"), std::string::npos);
  for (const auto& s : o->stages) EXPECT_NE(s.stage, "decode");
}

TEST(Observations, MalformedTraceIsAnErrorNamingFileAndLine) {
  auto lines = TraceLines();
  const std::string bad = "{\"type\":\"batch\",\"rank\":\"zero\"}\n";
  lines.insert(lines.begin() + 3, bad);
  auto o = ObserveTrace(WriteTrace("bad.jsonl", lines));
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("bad.jsonl:4"), std::string::npos) << o.status().message();
}

}  // namespace
}  // namespace simreplay::advise
