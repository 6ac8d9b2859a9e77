#include "replay/trace_merge.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "replay/trace_reader.h"
#include "replay/trace_writer.h"

namespace simreplay::replay {
namespace {

std::string TempPath(const std::string& name) { return ::testing::TempDir() + "/merge_" + name; }

// A rank's trace: one step at t_start 1000 ns, one host record at 500 ns, one collective at 2000 ns.
std::string WriteRank(const std::string& name, int rank, int world, const nlohmann::json& distributed) {
  TraceHeader header;
  header.manifest = {{"rank", rank}, {"world_size", world}, {"source", "test"}};
  if (!distributed.is_null()) header.manifest["distributed"] = distributed;
  std::string path = TempPath(name);
  auto w = TraceWriter::Create(path, header);
  EXPECT_TRUE(w.ok());
  StepRecord step;
  step.rank = rank;
  step.t_start_ns = 1000;
  step.compute_ns = 70;
  step.comm_ns = 30;
  step.step_ns = 100;
  EXPECT_TRUE((*w)->Write(step).ok());
  HostRecord host;
  host.t_ns = 500;
  EXPECT_TRUE((*w)->Write(host).ok());
  nlohmann::json coll = {{"rank", rank},       {"step", 0},         {"op", "all_reduce"}, {"bytes", 1024},
                         {"t_start_ns", 2000}, {"duration_ns", 30}, {"world_size", world}};
  EXPECT_TRUE((*w)->Write(OtherRecord{"collective", coll}).ok());
  EXPECT_TRUE((*w)->Close().ok());
  return path;
}

nlohmann::json Clock(int64_t to_reference_ns, int64_t uncertainty_ns, int node) {
  return {{"node_index", node}, {"clock", {{"to_reference_ns", to_reference_ns}, {"uncertainty_ns", uncertainty_ns}}}};
}

struct Read {
  nlohmann::json manifest;
  std::vector<TraceRecord> records;
  std::vector<std::string> warnings;
};

Read ReadBack(const std::string& path) {
  Read out;
  auto r = TraceReader::Open(path);
  EXPECT_TRUE(r.ok()) << r.status().message();
  out.manifest = (*r)->header().manifest;
  TraceRecord rec;
  while (true) {
    auto more = (*r)->Next(&rec);
    EXPECT_TRUE(more.ok());
    if (!more.ok() || !*more) break;
    out.records.push_back(rec);
  }
  out.warnings = (*r)->warnings();
  return out;
}

TEST(TraceMerge, AppliesClockShiftsAndStartsAtTheEarliestRank) {
  // Rank 1 started 400 ns before rank 0 on rank 0's clock: to_reference_ns = -400. After the merge the
  // earliest t0 (rank 1's) is 0, so rank 0 shifts by +400 and rank 1 by -400 + 400 = 0:
  // rank 0's step at 1000 -> 1400, its collective at 2000 -> 2400; rank 1's stay at 1000 and 2000.
  std::string r0 = WriteRank("a0.jsonl", 0, 2, Clock(0, 0, 0));
  std::string r1 = WriteRank("a1.jsonl", 1, 2, Clock(-400, 25, 1));
  std::string out = TempPath("a.jsonl.gz");
  auto s = MergeTraces({r1, r0}, out, MergeOptions{});
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->inputs.size(), 2u);
  EXPECT_EQ(s->inputs[0].rank, 0);
  EXPECT_EQ(s->inputs[0].shift_ns, 400);
  EXPECT_EQ(s->inputs[1].shift_ns, 0);
  EXPECT_EQ(s->inputs[1].uncertainty_ns, 25);
  EXPECT_EQ(s->inputs[1].method, "ping-pong");
  Read m = ReadBack(out);
  EXPECT_TRUE(m.warnings.empty()) << m.warnings.front();  // collective records are known to the reader
  EXPECT_FALSE(m.manifest.contains("rank"));
  EXPECT_EQ(m.manifest["ranks"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(m.manifest["merged"]["inputs"][0]["shift_ns"], 400);
  std::vector<int64_t> step_starts, coll_starts;
  for (const TraceRecord& r : m.records) {
    if (auto* st = std::get_if<StepRecord>(&r)) step_starts.push_back(st->t_start_ns);
    if (auto* o = std::get_if<OtherRecord>(&r); o && o->type == "collective")
      coll_starts.push_back(o->json["t_start_ns"].get<int64_t>());
  }
  EXPECT_EQ(step_starts, (std::vector<int64_t>{1400, 1000}));
  EXPECT_EQ(coll_starts, (std::vector<int64_t>{2400, 2000}));
}

TEST(TraceMerge, KeepsHostRecordsOncePerNode) {
  // Ranks 0 and 1 on node 0, rank 2 on node 1: host records of ranks 0 and 2 are kept, rank 1's dropped.
  std::string a = WriteRank("h0.jsonl", 0, 3, Clock(0, 0, 0));
  std::string b = WriteRank("h1.jsonl", 1, 3, Clock(0, 0, 0));
  std::string c = WriteRank("h2.jsonl", 2, 3, Clock(0, 0, 1));
  auto s = MergeTraces({a, b, c}, TempPath("h.jsonl"), MergeOptions{});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->inputs[0].host_records_dropped, 0);
  EXPECT_EQ(s->inputs[1].host_records_dropped, 1);
  EXPECT_EQ(s->inputs[2].host_records_dropped, 0);
  int hosts = 0;
  for (const TraceRecord& r : ReadBack(TempPath("h.jsonl")).records) hosts += std::holds_alternative<HostRecord>(r);
  EXPECT_EQ(hosts, 2);
}

TEST(TraceMerge, RejectsDuplicateRanksAndMismatchedWorldSizes) {
  std::string a = WriteRank("d0.jsonl", 0, 2, Clock(0, 0, 0));
  std::string b = WriteRank("d0b.jsonl", 0, 2, Clock(0, 0, 0));
  std::string c = WriteRank("d1.jsonl", 1, 4, Clock(0, 0, 0));
  std::string out = TempPath("d.jsonl");
  auto dup = MergeTraces({a, b}, out, MergeOptions{});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("one trace per rank"), std::string::npos) << dup.status().message();
  auto mismatch = MergeTraces({a, c}, out, MergeOptions{});
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("expected world_size 2"), std::string::npos);
  EXPECT_FALSE(std::ifstream(out).good());  // nothing half-written
}

TEST(TraceMerge, RejectsRankOutsideWorld) {
  std::string a = WriteRank("o.jsonl", 3, 2, Clock(0, 0, 0));
  auto s = MergeTraces({a}, TempPath("o_out.jsonl"), MergeOptions{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find(":1: expected manifest rank in [0, world_size)"), std::string::npos);
}

TEST(TraceMerge, WarnsWithoutClockAndIsDeterministic) {
  // No distributed.clock and no t0_time_ns: shift 0 and a warning; a second merge gives the same bytes.
  std::string a = WriteRank("n0.jsonl", 0, 2, nullptr);
  std::string b = WriteRank("n1.jsonl", 1, 2, nullptr);
  auto s1 = MergeTraces({a, b}, TempPath("n1_out.jsonl"), MergeOptions{});
  auto s2 = MergeTraces({b, a}, TempPath("n2_out.jsonl"), MergeOptions{});
  ASSERT_TRUE(s1.ok() && s2.ok());
  EXPECT_EQ(s1->inputs[1].method, "none");
  EXPECT_EQ(s1->warnings.size(), 2u);
  auto slurp = [](const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  std::string t1 = slurp(TempPath("n1_out.jsonl")), t2 = slurp(TempPath("n2_out.jsonl"));
  EXPECT_FALSE(t1.empty());
  EXPECT_EQ(t1, t2);
}

}  // namespace
}  // namespace simreplay::replay
