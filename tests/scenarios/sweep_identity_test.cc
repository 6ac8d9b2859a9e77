// A sweep's identity hash: stable for the same definition and input bytes wherever the files live,
// different when the scenario or any input file (model, the trace the model names) changes.
#include "scenarios/sweep_identity.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/json_fields.h"

namespace simreplay::scenarios {
namespace {

namespace fs = std::filesystem;

const fs::path kQuickstart = fs::path(SIMREPLAY_SOURCE_DIR) / "examples/quickstart";

// A copy of the quickstart (scenario, model, trace) in its own directory.
fs::path CopyQuickstart(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"scenario.json", "model.json", "trace.jsonl.gz"}) fs::copy_file(kQuickstart / f, dir / f);
  return dir;
}

Result<SweepIdentity> Identify(const fs::path& scenario) {
  auto json = LoadScenarioJson(scenario.string());
  if (!json.ok()) return json.status();
  auto points = ExpandSweep(*json, scenario.string(), scenario.parent_path().string());
  if (!points.ok()) return points.status();
  return IdentifySweep(*json, scenario.string(), *points);
}

TEST(SweepIdentity, SameInputsGiveTheSameHashWhereverTheyLive) {
  auto a = Identify(CopyQuickstart("identity_a") / "scenario.json");
  auto b = Identify(CopyQuickstart("identity_b") / "scenario.json");
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(a->sha256.size(), 64u);
  EXPECT_EQ(a->sha256, b->sha256);
  EXPECT_EQ(a->point_count, 6u);  // quickstart sweeps num_workers over 6 values
}

TEST(SweepIdentity, InputFilesAreTheModelAndTheTraceItNames) {
  fs::path dir = CopyQuickstart("identity_files");
  auto json = LoadScenarioJson((dir / "scenario.json").string());
  ASSERT_TRUE(json.ok());
  auto points = ExpandSweep(*json, (dir / "scenario.json").string(), dir.string());
  ASSERT_TRUE(points.ok());
  auto files = SweepInputFiles(*points);
  ASSERT_TRUE(files.ok()) << files.status().message();
  ASSERT_EQ(files->size(), 2u);  // six points, one model, one trace: each listed once
  EXPECT_EQ(fs::path((*files)[0]).filename(), "model.json");
  EXPECT_EQ(fs::path((*files)[1]).filename(), "trace.jsonl.gz");
}

TEST(SweepIdentity, ChangingTheScenarioOrAnyInputChangesTheHash) {
  const std::string base = Identify(CopyQuickstart("identity_base") / "scenario.json")->sha256;

  fs::path scenario_changed = CopyQuickstart("identity_scenario");
  auto json = ReadJsonFile((scenario_changed / "scenario.json").string());
  (*json)["train"]["steps"] = 41;
  std::ofstream(scenario_changed / "scenario.json") << json->dump(2);
  EXPECT_NE(Identify(scenario_changed / "scenario.json")->sha256, base);

  fs::path trace_changed = CopyQuickstart("identity_trace");
  std::ofstream(trace_changed / "trace.jsonl.gz", std::ios::app) << '\0';  // one byte more
  EXPECT_NE(Identify(trace_changed / "scenario.json")->sha256, base);

  fs::path model_changed = CopyQuickstart("identity_model");
  std::ofstream(model_changed / "model.json", std::ios::app) << "\n";
  EXPECT_NE(Identify(model_changed / "scenario.json")->sha256, base);
}

TEST(SweepIdentity, MissingInputIsNotFoundNamingTheFile) {
  fs::path dir = CopyQuickstart("identity_missing");
  fs::remove(dir / "trace.jsonl.gz");
  auto id = Identify(dir / "scenario.json");
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), Status::Code::kNotFound);
  EXPECT_NE(id.status().message().find("trace.jsonl.gz"), std::string::npos) << id.status().message();
}

}  // namespace
}  // namespace simreplay::scenarios
