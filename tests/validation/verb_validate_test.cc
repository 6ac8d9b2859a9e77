// `simreplay validate` at the command line: bad specs are exit 3 with FILE:LINE, and nothing runs.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cli_runner.h"

namespace {

namespace fs = std::filesystem;

using simreplay::testing::RunCli;

TEST(VerbValidate, BadSpecIsExit3WithFileAndLine) {
  fs::path dir = fs::path(::testing::TempDir()) / "validate_bad_spec";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "spec.json")
      << "{\n  \"schema\": \"simreplay.experiment/1\",\n  \"mode\": \"ab\",\n"
         "  \"cases\": [{\"name\": \"A\"},\n             {\"name\": \"B\", \"set\": {\"batch_size\": 0}}]\n}\n";
  auto r = RunCli("validate " + (dir / "spec.json").string() + " --out " + (dir / "out").string());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("spec.json:5: 'cases.1.set.batch_size' must be a number in [1, 65536], found 0"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out" / "runs.json"));
}

TEST(VerbValidate, ShippedSpecsLoadAndMissingDatasetIsReported) {
  for (const char* spec : {"suite.json", "heldout.json", "ab_workers.json"}) {
    auto r = RunCli(std::string("validate ") + SIMREPLAY_SOURCE_DIR + "/validation/suite/" + spec + " --out " +
                    (fs::path(::testing::TempDir()) / "validate_nodata").string() + " --data /nonexistent-dataset");
    EXPECT_EQ(r.exit_code, 3) << r.output;
    EXPECT_NE(r.output.find("/nonexistent-dataset/dataset.json: not a bench dataset"), std::string::npos) << r.output;
  }
}

}  // namespace
