// what-if sweeps split, killed and resumed (issues 13 and 14), end to end: shards merged are
// byte-identical to one process; merge refuses mixed scenarios and lists missing points; a sweep killed
// with SIGKILL resumes to the same bytes without recomputing finished points; a point that crashes or
// exceeds --point-timeout fails with its reason while the others complete; a bad input found inside a
// point exits 3; 20 runs and every --jobs value give the same bytes; the Slurm scripts run as written.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <set>

#include "tests/cli/sweep_test_util.h"
#include "tests/cli_runner.h"
#include "tests/crash_signal.h"

namespace simreplay::testing {
namespace {

const std::vector<std::string> kOutputs = {"results.csv", "results.json", "report.html"};

// Quickstart's 6 points, shortened: every point simulates 12 optimizer steps.
nlohmann::json Short() { return {{"train", {{"steps", 12}}}}; }

void ExpectSameOutputs(const fs::path& expected, const fs::path& actual) {
  for (const auto& f : kOutputs) {
    ASSERT_TRUE(fs::exists(actual / f)) << actual / f;
    EXPECT_EQ(Slurp(expected / f), Slurp(actual / f)) << f << " differs: " << expected << " vs " << actual;
  }
}

TEST(Sweeps, ShardsMergedAreByteIdenticalToOneProcess) {
  fs::path root = FreshDir("sweeps_shards");
  const std::string scenario = QuickstartScenario(root / "in", Short()).string();
  auto whole = RunCli("what-if " + scenario + " --out " + (root / "whole").string() + " --jobs 2");
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  EXPECT_EQ(PointFiles(root / "whole").size(), 6u);

  // 2 shards in two directories (two machines), then 4 and 7 shards (7 > 6 points: one shard is
  // empty) sharing one directory.
  for (int n : {2, 4, 7}) {
    std::vector<std::string> dirs;
    for (int i = 0; i < n; ++i) {
      fs::path dir = n == 2 ? root / ("n2_" + std::to_string(i)) : root / ("n" + std::to_string(n));
      auto r = RunCli("what-if " + scenario + " --out " + dir.string() + " --jobs 2 --shard " + std::to_string(i) +
                      "/" + std::to_string(n));
      ASSERT_EQ(r.exit_code, 0) << r.output;
      EXPECT_FALSE(fs::exists(dir / "results.csv")) << "a shard writes points only";
      if (dirs.empty() || dirs.back() != dir.string()) dirs.push_back(dir.string());
    }
    std::string args;
    for (const auto& d : dirs) args += " " + d;
    fs::path merged = root / ("merged" + std::to_string(n));
    auto m = RunCli("merge" + args + " --out " + merged.string());
    ASSERT_EQ(m.exit_code, 0) << m.output;
    ExpectSameOutputs(root / "whole", merged);
    EXPECT_NE(m.output.find("emulated"), std::string::npos) << "merge prints the accelerator label too";
  }
}

TEST(Sweeps, MergeRefusesMixedScenariosAndListsMissingPoints) {
  fs::path root = FreshDir("sweeps_mixed");
  const std::string a = QuickstartScenario(root / "a", Short()).string();
  const std::string b = QuickstartScenario(root / "b", {{"train", {{"steps", 13}}}}).string();
  ASSERT_EQ(RunCli("what-if " + a + " --out " + (root / "sa").string() + " --shard 0/2").exit_code, 0);
  ASSERT_EQ(RunCli("what-if " + b + " --out " + (root / "sb").string() + " --shard 1/2").exit_code, 0);

  auto mixed =
      RunCli("merge " + (root / "sa").string() + " " + (root / "sb").string() + " --out " + (root / "m").string());
  EXPECT_EQ(mixed.exit_code, 3) << mixed.output;
  EXPECT_NE(mixed.output.find("different scenarios or input files"), std::string::npos) << mixed.output;
  EXPECT_FALSE(fs::exists(root / "m" / "results.csv"));

  // A shard of b into a's directory is refused before anything runs.
  auto into = RunCli("what-if " + b + " --out " + (root / "sa").string() + " --shard 1/2");
  EXPECT_EQ(into.exit_code, 3) << into.output;
  EXPECT_NE(into.output.find("another sweep's points"), std::string::npos) << into.output;

  // Shard 0/2 alone: points 1, 3, 5 are missing; nothing is written.
  auto partial = RunCli("merge " + (root / "sa").string() + " --out " + (root / "m").string());
  EXPECT_EQ(partial.exit_code, 1) << partial.output;
  EXPECT_NE(partial.output.find("3 of 6 points are missing: 1, 3, 5"), std::string::npos) << partial.output;
  EXPECT_FALSE(fs::exists(root / "m" / "results.csv"));
}

TEST(Sweeps, ResumeAfterSigkillIsByteIdenticalAndKeepsFinishedPoints) {
  fs::path root = FreshDir("sweeps_resume");
  // 12 points (6 worker counts x 2 prefetch factors), one simulation at a time.
  const std::string scenario =
      QuickstartScenario(root / "in",
                         {{"train", {{"steps", 12}}},
                          {"sweep", {{"loader.num_workers", {1, 2, 3, 4, 5, 6}}, {"loader.prefetch_factor", {2, 4}}}}})
          .string();
  auto reference = RunCli("what-if " + scenario + " --out " + (root / "reference").string() + " --jobs 2");
  ASSERT_EQ(reference.exit_code, 0) << reference.output;

  const fs::path out = root / "out";
  pid_t pid = SpawnCli({"what-if", scenario, "--out", out.string(), "--jobs", "1"}, root / "killed.log");
  ASSERT_TRUE(WaitFor([&] { return PointFiles(out).size() >= 3; }, 300)) << Slurp(root / "killed.log");
  ::kill(-pid, SIGKILL);  // the whole process group, as a scheduler or the OOM killer would
  ASSERT_EQ(WaitCli(pid), -SIGKILL);
  const auto kept = PointFiles(out);
  ASSERT_LT(kept.size(), 12u) << "the sweep finished before it could be killed";
  EXPECT_FALSE(fs::exists(out / "results.csv"));
  std::vector<std::pair<ino_t, int64_t>> before;
  for (const auto& p : kept) {
    struct stat st {};
    ::stat(p.c_str(), &st);
    before.push_back({st.st_ino, st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec});
  }

  auto resumed = RunCli("what-if " + scenario + " --out " + out.string() + " --jobs 2 --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed: " + std::to_string(kept.size()) + " of 12 points were already finished"),
            std::string::npos)
      << resumed.output;
  for (size_t i = 0; i < kept.size(); ++i) {  // not recomputed: the very same files
    struct stat st {};
    ::stat(kept[i].c_str(), &st);
    EXPECT_EQ(st.st_ino, before[i].first) << kept[i];
    EXPECT_EQ(st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec, before[i].second) << kept[i];
  }
  EXPECT_EQ(PointFiles(out).size(), 12u);
  ExpectSameOutputs(root / "reference", out);
}

// Two fast points and two that would run for hours (50 million steps).
nlohmann::json FastAndSlow() {
  return {{"train", {{"steps", 6}}}, {"sweep", {{"loader.num_workers", {1, 2}}, {"train.steps", {6, 50000000}}}}};
}

TEST(Sweeps, PointOverTheTimeoutFailsWithItsReasonAndTheOthersComplete) {
  fs::path root = FreshDir("sweeps_timeout");
  const std::string scenario = QuickstartScenario(root / "in", FastAndSlow()).string();
  auto r = RunCli("what-if " + scenario + " --out " + (root / "out").string() + " --jobs 4 --point-timeout 8");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  // Points in sweep order: (1, 6), (1, 5e7), (2, 6), (2, 5e7).
  EXPECT_NE(r.output.find("point 1 (loader.num_workers=1, train.steps=50000000) failed: exceeded the "
                          "--point-timeout of 8 s and was killed"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("2 of 4 points failed; the 2 finished points are kept"), std::string::npos) << r.output;
  EXPECT_EQ(PointFiles(root / "out").size(), 2u);
  EXPECT_TRUE(fs::exists(root / "out" / "points" / "000000.json"));
  EXPECT_TRUE(fs::exists(root / "out" / "points" / "000002.json"));
  EXPECT_TRUE(fs::exists(root / "out" / "failed" / "000001.json"));
  EXPECT_FALSE(fs::exists(root / "out" / "results.csv")) << "no partial table";
  auto merge = RunCli("merge " + (root / "out").string() + " --out " + (root / "merged").string());
  EXPECT_EQ(merge.exit_code, 1);
  EXPECT_NE(merge.output.find("2 of 4 points are missing: 1, 3"), std::string::npos) << merge.output;
  EXPECT_NE(merge.output.find("point 3 (loader.num_workers=2, train.steps=50000000) failed: exceeded"),
            std::string::npos)
      << merge.output;
}

TEST(Sweeps, CrashedPointIsReportedAndTheOthersComplete) {
  fs::path root = FreshDir("sweeps_crash");
  const std::string scenario = QuickstartScenario(root / "in", FastAndSlow()).string();
  pid_t pid = SpawnCli({"what-if", scenario, "--out", (root / "out").string(), "--jobs", "4"}, root / "log");
  ASSERT_TRUE(WaitFor([&] { return PointFiles(root / "out").size() == 2; }, 300)) << Slurp(root / "log");
  // Only the slow points' simulations are left: crash them as a bug in the engine would.
  std::vector<pid_t> children;
  ASSERT_TRUE(WaitFor([&] { return (children = ChildrenOf(pid)).size() == 4; }, 30)) << children.size();
  for (pid_t child : children) ::kill(child, SIGSEGV);
  EXPECT_EQ(WaitCli(pid), 1);
  const std::string log = Slurp(root / "log");
  EXPECT_NE(log.find(std::string("point 1 (loader.num_workers=1, train.steps=50000000) failed: simulation process "
                                 "died with ") +
                     test_support::kSegvReportedAs),
            std::string::npos)
      << log;
  EXPECT_EQ(PointFiles(root / "out").size(), 2u);
  EXPECT_FALSE(fs::exists(root / "out" / "results.csv"));
}

TEST(Sweeps, BadInputFoundInsideAPointExitsThree) {
  // Issue 15: the child's "an epoch has no batch" is a bad scenario, not an internal failure. With
  // 10 samples, drop_last and batch_size 16 an epoch has no batch; batch_size 4 is fine.
  fs::path root = FreshDir("sweeps_bad_point");
  const std::string scenario = QuickstartScenario(root / "in", {{"loader", {{"drop_last", true}}},
                                                                {"train", {{"steps", 4}, {"dataset_samples", 10}}},
                                                                {"sweep", {{"loader.batch_size", {4, 16}}}}})
                                   .string();
  auto r = RunCli("what-if " + scenario + " --out " + (root / "out").string());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("point 1 (loader.batch_size=16) failed: an epoch has no batch"), std::string::npos)
      << r.output;
  EXPECT_EQ(PointFiles(root / "out").size(), 1u);
}

TEST(Sweeps, TwentyRunsAndEveryJobsValueAreByteIdentical) {
  fs::path root = FreshDir("sweeps_determinism");
  const std::string scenario = QuickstartScenario(root / "in", {{"train", {{"steps", 6}}}}).string();
  std::vector<std::string> first;
  // Run k uses --jobs k: 1 (sequential) up to 20 (more than the 12 simulations, all at once).
  for (int jobs = 1; jobs <= 20; ++jobs) {
    fs::path out = root / ("run" + std::to_string(jobs));
    auto r = RunCli("what-if " + scenario + " --out " + out.string() + " --jobs " + std::to_string(jobs));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::vector<std::string> files;
    for (const auto& f : kOutputs) files.push_back(Slurp(out / f));
    for (const auto& p : PointFiles(out)) files.push_back(Slurp(p));
    ASSERT_EQ(files.size(), 9u);
    if (first.empty()) {
      first = files;
      continue;
    }
    for (size_t i = 0; i < files.size(); ++i) EXPECT_EQ(files[i], first[i]) << "--jobs " << jobs << " file " << i;
  }
}

TEST(Sweeps, SlurmScriptsRunAsWrittenAndMergeByteIdentical) {
  // The generated scripts, run by bash with the variables Slurm sets, without Slurm
  // (tests/cli/slurm_test.sh runs them on a real Slurm).
  fs::path root = FreshDir("sweeps_slurm_scripts");
  const std::string scenario = QuickstartScenario(root / "in", Short()).string();
  ASSERT_EQ(RunCli("what-if " + scenario + " --out " + (root / "whole").string()).exit_code, 0);
  const fs::path out = root / "out";
  auto w = RunCli("what-if " + scenario + " --out " + out.string() + " --slurm --array-size 4 --cpus-per-task 2");
  ASSERT_EQ(w.exit_code, 0) << w.output;
  EXPECT_NE(w.output.find("6 points in 4 array tasks; 6 points still to simulate, in 4 tasks (0-3)"), std::string::npos)
      << w.output;
  const std::string script = Slurp(out / "slurm" / "sweep.sbatch");
  EXPECT_NE(script.find("--shard \"${SLURM_ARRAY_TASK_ID}/4\" --resume"), std::string::npos) << script;
  for (int task : {0, 2, 3}) {  // task 1 "fails"
    std::string cmd = "SLURM_ARRAY_TASK_ID=" + std::to_string(task) + " SLURM_CPUS_PER_TASK=2 bash " +
                      (out / "slurm" / "sweep.sbatch").string() + " > /dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  auto again = RunCli("what-if " + scenario + " --out " + out.string() + " --slurm --array-size 4");
  EXPECT_NE(again.output.find("2 points still to simulate, in 1 tasks (1)"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("--array=1 "), std::string::npos) << again.output;
  ASSERT_EQ(
      std::system(("SLURM_ARRAY_TASK_ID=1 bash " + (out / "slurm" / "sweep.sbatch").string() + " >/dev/null").c_str()),
      0);
  ASSERT_EQ(std::system(("bash " + (out / "slurm" / "merge.sbatch").string() + " > /dev/null").c_str()), 0);
  ExpectSameOutputs(root / "whole", out);
}

}  // namespace
}  // namespace simreplay::testing
