// The Slurm batch scripts of a sweep and the bookkeeping of a resubmission.
#include "scenarios/slurm_script.h"

#include <gtest/gtest.h>

namespace simreplay::scenarios {
namespace {

TEST(SlurmScript, ArraySizeAimsAtEightPointsPerTaskWithinSlurmsDefaultLimit) {
  EXPECT_EQ(DefaultArraySize(1), 1u);
  EXPECT_EQ(DefaultArraySize(8), 1u);
  EXPECT_EQ(DefaultArraySize(9), 2u);
  EXPECT_EQ(DefaultArraySize(240), 30u);
  EXPECT_EQ(DefaultArraySize(100000), 1000u);  // ceil(100000 / 8) = 12500, capped
}

TEST(SlurmScript, ArraySpecCompressesRuns) {
  EXPECT_EQ(ArraySpec({}), "");
  EXPECT_EQ(ArraySpec({4}), "4");
  EXPECT_EQ(ArraySpec({0, 1, 2, 3, 7, 9, 10}), "0-3,7,9-10");
}

TEST(SlurmScript, OnlyTasksOwningAMissingPointAreResubmitted) {
  // 10 points, 4 shards: shard t owns t, t+4, t+8. Missing points 1 and 6 -> tasks 1 and 2.
  std::vector<bool> finished(10, true);
  finished[1] = finished[6] = false;
  EXPECT_EQ(TasksWithMissingPoints(finished, 4), (std::vector<size_t>{1, 2}));
  EXPECT_TRUE(TasksWithMissingPoints(std::vector<bool>(10, true), 4).empty());
}

TEST(SlurmScript, ShellQuoteSurvivesQuotes) {
  EXPECT_EQ(ShellQuote("/a b/c"), "'/a b/c'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
}

TEST(SlurmScript, ArrayTaskRunsItsShardOfAFixedCountWithResume) {
  SlurmOptions o;
  o.binary = "/opt/simreplay/bin/simreplay";
  o.scenario = "/shared/sweep/scenario.json";
  o.out_dir = "/shared/sweep/out";
  o.point_count = 240;
  o.array_size = 30;
  o.cpus_per_task = 4;
  o.memory = "8G";
  o.partition = "cpu";
  o.max_running = 10;
  o.point_timeout_s = 600;
  o.extra_sbatch = {"--qos=short"};
  const std::string s = SweepArrayScript(o);
  EXPECT_EQ(s.rfind("#!/bin/bash\n", 0), 0u);
  for (const char* line : {"#SBATCH --array=0-29%10\n", "#SBATCH --cpus-per-task=4\n", "#SBATCH --mem=8G\n",
                           "#SBATCH --partition=cpu\n", "#SBATCH --qos=short\n", "#SBATCH --time=01:00:00\n",
                           "#SBATCH --output=/shared/sweep/out/slurm/logs/%x-%A_%a.out\n"}) {
    EXPECT_NE(s.find(line), std::string::npos) << line << "\n" << s;
  }
  // Not $SLURM_ARRAY_TASK_COUNT: a resubmitted array of 2 tasks must keep shards of 30.
  EXPECT_NE(s.find("exec '/opt/simreplay/bin/simreplay' what-if '/shared/sweep/scenario.json' --out "
                   "'/shared/sweep/out' --shard \"${SLURM_ARRAY_TASK_ID}/30\" --resume --jobs "
                   "\"${SLURM_CPUS_PER_TASK:-1}\" --point-timeout 600\n"),
            std::string::npos)
      << s;
  const std::string m = MergeScript(o);
  EXPECT_NE(m.find("#SBATCH --job-name=simreplay-sweep-merge\n"), std::string::npos) << m;
  EXPECT_NE(m.find("exec '/opt/simreplay/bin/simreplay' merge '/shared/sweep/out' --out '/shared/sweep/out'\n"),
            std::string::npos)
      << m;

  // Another verb (a planner's candidates) with its own merge step.
  o.verb = "plan";
  o.merge_args = {"plan", "/shared/plan.json", "--out", "/shared/sweep/out"};
  EXPECT_NE(SweepArrayScript(o).find("exec '/opt/simreplay/bin/simreplay' plan '/shared/sweep/scenario.json' --out"),
            std::string::npos);
  EXPECT_NE(MergeScript(o).find("exec '/opt/simreplay/bin/simreplay' plan '/shared/plan.json' --out "
                                "'/shared/sweep/out'\n"),
            std::string::npos)
      << MergeScript(o);
}

}  // namespace
}  // namespace simreplay::scenarios
