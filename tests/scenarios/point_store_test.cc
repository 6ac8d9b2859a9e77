// The per-point layout of sweep directories: shard specs, saving and finding points, merging the
// directories of several shards, refusing points of different sweeps, listing missing points.
#include "scenarios/point_store.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace simreplay::scenarios {
namespace {

namespace fs = std::filesystem;

fs::path Fresh(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

SweepResult Point(int workers, double throughput) {
  return {{{"loader.num_workers", workers}},
          {{"schema", "simreplay.result/1"}, {"metrics", {{"train_throughput_samples_per_s", throughput}}}}};
}

SweepIdentity Identity(const std::string& sha, size_t count) { return {sha, count, "scenario.json"}; }

TEST(ShardSpec, ParsesIOverNAndRejectsEverythingElse) {
  auto s = ParseShardSpec("3/16");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->index, 3u);
  EXPECT_EQ(s->count, 16u);
  EXPECT_TRUE(s->Owns(3));
  EXPECT_TRUE(s->Owns(19));  // 19 mod 16 = 3
  EXPECT_FALSE(s->Owns(4));
  EXPECT_TRUE(ParseShardSpec("0/1")->whole());
  for (const char* bad : {"", "3", "/4", "4/", "4/4", "5/4", "1/0", "-1/4", "a/4", "1/4x", "1//4", "1/9999999999"}) {
    auto r = ParseShardSpec(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("expected I/N"), std::string::npos) << bad;
    }
  }
}

TEST(PointStore, SavedPointsAreFinishedAndLoadBackExactly) {
  fs::path dir = Fresh("store_roundtrip");
  PointStore store(dir.string(), Identity(std::string(64, 'a'), 3));
  ASSERT_TRUE(store.Prepare().ok());
  ASSERT_TRUE(store.Save(2, Point(4, 123.456789012)).ok());
  ASSERT_TRUE(store.Save(0, Point(1, 0.1)).ok());
  EXPECT_TRUE(fs::exists(dir / "points" / "000002.json"));
  auto finished = store.Finished();
  ASSERT_TRUE(finished.ok()) << finished.status().message();
  EXPECT_EQ(*finished, (std::vector<bool>{true, false, true}));

  auto loaded = LoadSweepDirectories({dir.string()});
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->Missing(), (std::vector<size_t>{1}));
  ASSERT_TRUE(loaded->points[2].has_value());
  EXPECT_EQ(loaded->points[2]->axes, Point(4, 123.456789012).axes);
  EXPECT_EQ(loaded->points[2]->result, Point(4, 123.456789012).result);  // doubles round-trip exactly
  EXPECT_EQ(loaded->identity.scenario_file, "scenario.json");
  EXPECT_EQ(DescribeMissing(*loaded), "1 of 3 points are missing: 1");
}

TEST(PointStore, TemporariesOfAKilledWriterAreIgnored) {
  fs::path dir = Fresh("store_tmp");
  PointStore store(dir.string(), Identity(std::string(64, 'a'), 2));
  ASSERT_TRUE(store.Prepare().ok());
  ASSERT_TRUE(store.Save(0, Point(1, 1)).ok());
  std::ofstream(dir / "points" / "000001.json.tmp.node7.4242") << "{\"schema\": \"simreplay.po";  // cut short
  auto finished = store.Finished();
  ASSERT_TRUE(finished.ok()) << finished.status().message();
  EXPECT_EQ(*finished, (std::vector<bool>{true, false}));

  // Of this host's temporaries, the dead writer's goes and the live one's (this process) stays;
  // another host's stays whatever its pid.
  char host[256] = "host";
  ::gethostname(host, sizeof(host) - 1);
  pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  const fs::path dead_tmp = dir / "points" / ("000001.json.tmp." + std::string(host) + "." + std::to_string(dead));
  const fs::path live_tmp =
      dir / "points" / ("000001.json.tmp." + std::string(host) + "." + std::to_string(::getpid()));
  std::ofstream(dead_tmp) << "{";
  std::ofstream(live_tmp) << "{";
  EXPECT_EQ(store.RemoveStaleTemporaries(), 1u);
  EXPECT_FALSE(fs::exists(dead_tmp));
  EXPECT_TRUE(fs::exists(live_tmp));
  EXPECT_TRUE(fs::exists(dir / "points" / "000001.json.tmp.node7.4242"));
}

TEST(PointStore, ShardsInSeveralDirectoriesMergeAndDuplicatesMustAgree) {
  fs::path a = Fresh("store_shard_a"), b = Fresh("store_shard_b");
  const std::string sha(64, 'b');
  PointStore sa(a.string(), Identity(sha, 4)), sb(b.string(), Identity(sha, 4));
  ASSERT_TRUE(sa.Prepare().ok() && sb.Prepare().ok());
  ASSERT_TRUE(sa.Save(0, Point(0, 10)).ok() && sa.Save(2, Point(2, 12)).ok());
  ASSERT_TRUE(sb.Save(1, Point(1, 11)).ok() && sb.Save(3, Point(3, 13)).ok());
  ASSERT_TRUE(sb.Save(2, Point(2, 12)).ok());  // shard run twice: the same bytes, accepted
  auto loaded = LoadSweepDirectories({a.string(), b.string()});
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_TRUE(loaded->Missing().empty());
  EXPECT_EQ(loaded->points[3]->result["metrics"]["train_throughput_samples_per_s"], 13);

  ASSERT_TRUE(sb.Save(2, Point(2, 99)).ok());  // the same point, a different result
  auto conflict = LoadSweepDirectories({a.string(), b.string()});
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(conflict.status().message().find("expected the same result"), std::string::npos);
}

TEST(PointStore, PointsOfDifferentSweepsAreRefused) {
  fs::path a = Fresh("store_mixed_a"), b = Fresh("store_mixed_b");
  PointStore sa(a.string(), Identity(std::string(64, 'c'), 2)), sb(b.string(), Identity(std::string(64, 'd'), 2));
  ASSERT_TRUE(sa.Prepare().ok() && sb.Prepare().ok());
  ASSERT_TRUE(sa.Save(0, Point(0, 1)).ok());
  ASSERT_TRUE(sb.Save(1, Point(1, 2)).ok());
  auto mixed = LoadSweepDirectories({a.string(), b.string()});
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(mixed.status().message().find("different scenarios or input files"), std::string::npos)
      << mixed.status().message();
  EXPECT_NE(mixed.status().message().find("000001.json"), std::string::npos);

  // A writer of sweep 'c' refuses a directory holding a point of sweep 'd'.
  PointStore other(b.string(), Identity(std::string(64, 'c'), 2));
  auto finished = other.Finished();
  ASSERT_FALSE(finished.ok());
  EXPECT_NE(finished.status().message().find("another sweep's points"), std::string::npos);
  ASSERT_TRUE(other.Clear().ok());  // a fresh whole sweep may clear it
  EXPECT_TRUE(other.Finished().ok());
}

TEST(PointStore, MissingPointsAreListedWithTheirFailureReasons) {
  fs::path dir = Fresh("store_missing");
  PointStore store(dir.string(), Identity(std::string(64, 'e'), 40));
  ASSERT_TRUE(store.Prepare().ok());
  for (size_t i = 0; i < 40; ++i) {
    if (i == 5 || i == 17 || i == 18 || i == 39) continue;
    ASSERT_TRUE(store.Save(i, Point(static_cast<int>(i), 1)).ok());
  }
  ASSERT_TRUE(store.SaveFailure(17, Point(17, 0).axes, Status::Internal("simulation process died with signal 9")).ok());
  auto loaded = LoadSweepDirectories({dir.string()});
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(DescribeMissing(*loaded),
            "4 of 40 points are missing: 5, 17-18, 39\n"
            "  point 17 (loader.num_workers=17) failed: simulation process died with signal 9");
  // A failure record goes away once its point is saved.
  ASSERT_TRUE(store.Save(17, Point(17, 1)).ok());
  EXPECT_FALSE(fs::exists(dir / "failed" / "000017.json"));
}

TEST(PointStore, MalformedPointFileIsCorruptionWithFileAndLine) {
  fs::path dir = Fresh("store_corrupt");
  fs::create_directories(dir / "points");
  std::ofstream(dir / "points" / "000000.json") << "{\n \"schema\": \"simreplay.point/1\",\n \"point_index\": [\n";
  auto loaded = LoadSweepDirectories({dir.string()});
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), Status::Code::kCorruption);
  EXPECT_NE(loaded.status().message().find("000000.json:"), std::string::npos) << loaded.status().message();

  std::ofstream(dir / "points" / "000000.json")
      << R"({"schema": "simreplay.point/1", "sweep_sha256": "x", "point_index": 3, "point_count": 9,)"
      << R"( "scenario_file": "s.json", "axes": [], "result": {"metrics": {}}})";
  loaded = LoadSweepDirectories({dir.string()});
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("expected the file of point 3 to be named 000003.json"), std::string::npos)
      << loaded.status().message();

  auto none = LoadSweepDirectories({(dir / "nothing-here").string()});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace simreplay::scenarios
