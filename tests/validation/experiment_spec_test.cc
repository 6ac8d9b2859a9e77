// The experiment spec loader: defaults, and bad input reported as FILE:LINE with what was expected.
#include "validation/experiment_spec.h"

#include <gtest/gtest.h>

#include "common/json_locator.h"

namespace simreplay::validation {
namespace {

const char* kSuite = R"({
  "schema": "simreplay.experiment/1",
  "name": "t",
  "dataset": "data",
  "base": {"num_workers": 2},
  "cases": [
    {"name": "base"},
    {"name": "w0", "set": {"num_workers": 0}},
    {"name": "tar", "set": {"format": "tar"}}
  ],
  "thresholds": {"median_train_throughput_error_pct": 10}
})";

TEST(ExperimentSpec, ParsesSuiteWithDefaults) {
  auto spec = ParseExperimentSpec(kSuite, "dir/suite.json");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->mode, "suite");
  EXPECT_EQ(spec->dataset_dir, "dir/data");
  EXPECT_EQ(spec->repetitions, 5);  // the A/B runner's default is >= 5
  EXPECT_EQ(spec->warmup_runs, 1);
  EXPECT_EQ(spec->run.warmup_steps, 10);
  ASSERT_EQ(spec->cases.size(), 3u);
  EXPECT_TRUE(spec->cases[0].factors.empty());
  EXPECT_EQ(spec->cases[1].factors, std::vector<std::string>{"num_workers"});
  EXPECT_EQ(spec->cases[2].config.format, "tar");
  EXPECT_EQ(spec->cases[2].config.num_workers, 2);
  EXPECT_EQ(spec->calibrate_from, "base");
  EXPECT_EQ(spec->calibrate_alternate, "w0");
  EXPECT_TRUE(spec->thresholds.enabled);
  EXPECT_DOUBLE_EQ(spec->thresholds.max_gpu_idle_error_pp, 10);
}

TEST(ExperimentSpec, AbCasesArePredictedFromEachOther) {
  auto spec = ParseExperimentSpec(R"({"schema": "simreplay.experiment/1", "mode": "ab",
    "cases": [{"name": "A"}, {"name": "B", "set": {"pin_memory": true}}]})",
                                  "ab.json");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->calibrate_from, "A");
  EXPECT_EQ(spec->calibrate_alternate, "B");
  EXPECT_EQ(spec->cases[1].factors, std::vector<std::string>{"pin_memory"});
  EXPECT_FALSE(spec->thresholds.enabled);
}

void ExpectError(const std::string& text, const std::string& expected) {
  auto spec = ParseExperimentSpec(text, "spec.json");
  ASSERT_FALSE(spec.ok()) << "accepted: " << text;
  EXPECT_EQ(spec.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(spec.status().message().find(expected), std::string::npos) << spec.status().message();
}

TEST(ExperimentSpec, CpuProbeIsOptInWithBoundedSettings) {
  auto plain = ParseExperimentSpec(kSuite, "s.json");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->cpu_probe.enabled);
  std::string text = kSuite;
  const std::string probe = R"("calibration": {"from": "base", "alternate": "w0", "cpu_probe": {"rounds": 3}},
  "thresholds")";
  text.replace(text.find("\"thresholds\""), std::string("\"thresholds\"").size(), probe);
  auto spec = ParseExperimentSpec(text, "s.json");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_TRUE(spec->cpu_probe.enabled);
  EXPECT_EQ(spec->cpu_probe.rounds, 3);
  EXPECT_DOUBLE_EQ(spec->cpu_probe.seconds_per_point, 2.0);  // default
  // Out of range: the line of the key, and what was expected.
  std::string bad = text;
  bad.replace(bad.find("\"rounds\": 3"), std::string("\"rounds\": 3").size(), "\"rounds\": 0");
  auto rejected = ParseExperimentSpec(bad, "s.json");
  ASSERT_FALSE(rejected.ok());
  EXPECT_NE(rejected.status().message().find("s.json:11: 'calibration.cpu_probe.rounds' must be a number in [1, 20], found 0"), std::string::npos)
      << rejected.status().message();
  // The probe replays the bench dataset: not with a custom run command.
  std::string custom = text;
  custom.replace(custom.find("\"base\": {"), 0, R"("run": {"command": ["{python}", "x.py"]}, )");
  auto with_command = ParseExperimentSpec(custom, "s.json");
  ASSERT_FALSE(with_command.ok());
  EXPECT_NE(with_command.status().message().find("not with run.command"), std::string::npos)
      << with_command.status().message();
}

TEST(ExperimentSpec, CpuProbeDatasetArgsAreStringsWithoutOut) {
  auto with = [](const std::string& args) {
    return ParseExperimentSpec(std::string(R"({"schema": "simreplay.experiment/1", "base": {"num_workers": 2},
      "cases": [{"name": "base"}, {"name": "w0", "set": {"num_workers": 0}}],
      "calibration": {"cpu_probe": {"dataset_args": )") + args + "}}}", "s.json");
  };
  auto ok = with(R"(["--images", "10", "--seed", "3"])");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->cpu_probe.dataset_args, (std::vector<std::string>{"--images", "10", "--seed", "3"}));
  auto number = with(R"(["--images", 10])");
  ASSERT_FALSE(number.ok());
  EXPECT_NE(number.status().message().find("s.json:"), std::string::npos) << number.status().message();
  EXPECT_NE(number.status().message().find("must be strings"), std::string::npos) << number.status().message();
  auto out = with(R"(["--out", "x"])");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("chosen by validate"), std::string::npos) << out.status().message();
  EXPECT_FALSE(with("[]").ok());
}

TEST(ExperimentSpec, UnknownKeyNamesItsLine) {
  ExpectError("{\n  \"schema\": \"simreplay.experiment/1\",\n  \"repetitons\": 5,\n  \"cases\": [{\"name\": \"a\"}]\n}",
              "spec.json:3: unknown key 'repetitons'");
}

TEST(ExperimentSpec, MalformedJsonNamesItsLine) {
  ExpectError("{\n  \"schema\": \"simreplay.experiment/1\",\n  \"cases\": [,]\n}", "spec.json:3: malformed JSON");
}

// Regression (issue 13): "1e400" made the parser throw out_of_range, which escaped the parse_error catch.
TEST(ExperimentSpec, RegressionNumberOverflowNamesItsLine) {
  ExpectError("{\n  \"schema\": \"simreplay.experiment/1\",\n  \"repetitions\": 1e400\n}",
              "spec.json:3: a number out of range: 1e400");
}

TEST(ExperimentSpec, WrongSchemaIsRejected) {
  ExpectError("{\"schema\": \"simreplay.experiment/2\", \"cases\": [{\"name\": \"a\"}]}",
              "spec.json:1: 'schema' must be \"simreplay.experiment/1\", found \"simreplay.experiment/2\"");
}

TEST(ExperimentSpec, SuiteCaseVaryingTwoFactorsNamesItsLine) {
  ExpectError(
      "{\"schema\": \"simreplay.experiment/1\",\n\"cases\": [{\"name\": \"a\"},\n"
      "  {\"name\": \"b\",\n   \"set\": {\"num_workers\": 4, \"batch_size\": 3}}]}",
      "spec.json:4: case \"b\" differs from 'base' in 2 factors (num_workers, batch_size)");
}

TEST(ExperimentSpec, AbCasesMustDifferInExactlyOneFactor) {
  ExpectError(
      "{\"schema\": \"simreplay.experiment/1\", \"mode\": \"ab\",\n\"cases\": [{\"name\": \"a\"},\n{\"name\": \"b\"}]}",
      "spec.json:3: A and B must differ in exactly one factor, they differ in 0");
  ExpectError("{\"schema\": \"simreplay.experiment/1\", \"mode\": \"ab\", \"cases\": [{\"name\": \"a\"}]}",
              "needs exactly two cases");
}

TEST(ExperimentSpec, BadValuesSayWhatWasExpected) {
  ExpectError(
      "{\"schema\": \"simreplay.experiment/1\", \"cases\": [{\"name\": \"a\", \"set\": {\"format\": \"zip\"}}, "
      "{\"name\": \"b\"}]}",
      "'cases.0.set.format' must be one of files, hdf5, lmdb, tar, found \"zip\"");
  ExpectError(
      "{\"schema\": \"simreplay.experiment/1\", \"cases\": [{\"name\": \"a\", \"set\": {\"num_workers\": -1}}]}",
      "'cases.0.set.num_workers' must be a number in [0, 256], found -1");
  ExpectError("{\"schema\": \"simreplay.experiment/1\", \"cases\": [{\"name\": \"a\", \"set\": {\"pin_memory\": 1}}]}",
              "'cases.0.set.pin_memory' must be true or false, found 1");
  ExpectError(
      "{\"schema\": \"simreplay.experiment/1\", \"run\": {\"steps\": 10, \"warmup_steps\": 10}, \"cases\": [{\"name\": "
      "\"a\"}]}",
      "'warmup_steps' (10) must be smaller than 'steps' (10)");
  ExpectError("{\"schema\": \"simreplay.experiment/1\", \"cases\": [{\"name\": \"a\"}, {\"name\": \"a\"}]}",
              "duplicate case name");
  ExpectError(
      "{\"schema\": \"simreplay.experiment/1\", \"cases\": [{\"name\": \"a\"}, {\"name\": \"b\"}],"
      " \"calibration\": {\"from\": \"c\"}}",
      "calibration 'from' names no case: \"c\"");
  ExpectError(
      "{\"schema\": \"simreplay.experiment/1\", \"cases\": [{\"name\": \"a\"}, {\"name\": \"b\"}],"
      " \"calibration\": {\"from\": \"a\", \"alternate\": \"a\"}}",
      "never predicted from itself");
  ExpectError("{\"schema\": \"simreplay.experiment/1\", \"cases\": []}", "'cases' must be a non-empty array");
}

TEST(ExperimentSpec, MissingFileIsNotFound) {
  auto spec = LoadExperimentSpec("/nonexistent/spec.json");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), Status::Code::kNotFound);
}

TEST(JsonLocator, FindsLinesOfNestedValues) {
  JsonLocator loc("{\n \"a\": [\n  {\"b\": 1},\n  {\"c\":\n    \"x\\\"y\"}\n ],\n \"d~/e\": 2\n}");
  EXPECT_EQ(loc.Line(""), 1);
  EXPECT_EQ(loc.Line("/a"), 2);
  EXPECT_EQ(loc.Line("/a/0/b"), 3);
  EXPECT_EQ(loc.Line("/a/1"), 4);
  EXPECT_EQ(loc.Line("/a/1/c"), 5);
  EXPECT_EQ(loc.Line("/d~0~1e"), 7);
  EXPECT_EQ(loc.Line("/a/1/missing"), 4);  // nearest existing ancestor
}

TEST(Factors, ContentPreservingFactors) {
  EXPECT_TRUE(FactorPreservesContent("format"));
  EXPECT_TRUE(FactorPreservesContent("prefetch_factor"));
  EXPECT_TRUE(FactorPreservesContent("pin_memory"));
  EXPECT_FALSE(FactorPreservesContent("num_workers"));  // per-worker augmentation RNG streams
  EXPECT_FALSE(FactorPreservesContent("batch_size"));
}

}  // namespace
}  // namespace simreplay::validation
