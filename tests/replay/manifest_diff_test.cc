// Comparing two runs' manifests (replay/manifest.h, docs/manifest.md "What matters"): what matters in
// each scope, informational differences, fields recorded on one side only, per-package lines, and
// reading a manifest out of a preflight output, its directory, a bare manifest or a trace.
#include "replay/manifest.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace simreplay::replay {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json BaseManifest() {
  return {{"commit", "abc"},
          {"start_time", "2026-12-01T00:00:00"},
          {"versions", {{"torch", "2.4.1"}, {"python", "3.11.2"}, {"hip", nullptr}}},
          {"packages", {{"list", {"numpy==1.26.4", "torch==2.4.1"}}, {"count", 2}, {"sha256", "aaa"}}},
          {"revisions", {{"model", "m1"}, {"dataset", "d1"}, {"dataset_files", {{"sha256", "f1"}, {"files", 10}}}}},
          {"hardware", {{"cpu_model", "EPYC"}, {"cores", 16}, {"ram_bytes", 1000}}},
          {"command", {"python3", "train.py"}}};
}

const ManifestDifference* FindField(const ManifestDiff& d, const std::string& field) {
  for (const auto& x : d.differences) {
    if (x.field == field) return &x;
  }
  return nullptr;
}

TEST(ManifestDiff, IdenticalRunsAreComparableWhateverTheirStartTimes) {
  json a = BaseManifest(), b = BaseManifest();
  b["start_time"] = "2026-12-02T00:00:00";
  const ManifestDiff d = DiffManifests(a, b);
  EXPECT_FALSE(d.matters());
  EXPECT_TRUE(d.differences.empty());
  EXPECT_NE(ManifestDiffText(d, "A", "B").find("0 difference(s) that matter, 0 informational: comparable"),
            std::string::npos);
}

TEST(ManifestDiff, SoftwareRevisionsAndHardwareMatterTheRestIsInformation) {
  json a = BaseManifest(), b = BaseManifest();
  b["versions"]["torch"] = "2.5.0";
  b["packages"]["list"] = {"numpy==2.0.0", "torch==2.5.0", "triton==3.0.0"};
  b["packages"]["sha256"] = "bbb";
  b["revisions"]["dataset_files"]["sha256"] = "f2";
  b["hardware"]["cores"] = 32;
  b["hardware"]["ram_bytes"] = 2000;
  b["command"] = {"python3", "train.py", "--lr", "0.1"};
  const ManifestDiff d = DiffManifests(a, b);
  EXPECT_TRUE(d.matters());
  for (const char* f : {"versions.torch", "packages.sha256", "packages.numpy", "packages.torch", "packages.triton",
                        "revisions.dataset_files.sha256", "hardware.cores"}) {
    const ManifestDifference* x = FindField(d, f);
    ASSERT_NE(x, nullptr) << f;
    EXPECT_TRUE(x->matters) << f;
  }
  EXPECT_EQ(FindField(d, "packages.triton")->a, json());
  EXPECT_EQ(FindField(d, "packages.triton")->b, "3.0.0");
  for (const char* f : {"hardware.ram_bytes", "command"}) {
    const ManifestDifference* x = FindField(d, f);
    ASSERT_NE(x, nullptr) << f;
    EXPECT_FALSE(x->matters) << f;
  }
  EXPECT_EQ(FindField(d, "packages.list"), nullptr);  // compared through its digest
  EXPECT_EQ(d.matters_count, 7);
  EXPECT_EQ(d.info_count, 2);
  // Those that matter first.
  EXPECT_TRUE(d.differences.front().matters);
  EXPECT_FALSE(d.differences.back().matters);
  const std::string text = ManifestDiffText(d, "A", "B");
  EXPECT_NE(text.find("MATTERS versions.torch: 2.4.1 -> 2.5.0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("info    hardware.ram_bytes: 1000 -> 2000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("NOT comparable"), std::string::npos);

  // Across the cases of an experiment the data revisions may differ; for a plan only the software.
  const ManifestDiff cases = DiffManifests(a, b, ManifestScope::kAcrossCases);
  EXPECT_FALSE(FindField(cases, "revisions.dataset_files.sha256")->matters);
  EXPECT_TRUE(FindField(cases, "hardware.cores")->matters);
  const ManifestDiff software = DiffManifests(a, b, ManifestScope::kSoftware);
  EXPECT_FALSE(FindField(software, "hardware.cores")->matters);
  EXPECT_TRUE(FindField(software, "versions.torch")->matters);
  EXPECT_EQ(software.matters_count, 5);
  EXPECT_NE(software.MattersSummary(2).find("; ... and 3 more"), std::string::npos) << software.MattersSummary(2);
}

TEST(ManifestDiff, AFieldThatMattersRecordedOnOneSideIsUnknownNotADifference) {
  json a = BaseManifest(), b = BaseManifest();
  b.erase("packages");  // an older writer
  b["versions"].erase("hip");
  const ManifestDiff d = DiffManifests(a, b);
  EXPECT_FALSE(d.matters());
  EXPECT_EQ(d.unknown, (std::vector<std::string>{"packages.sha256", "versions.hip"}));
  EXPECT_EQ(d.info_count, 1);  // packages.count: information
  const json j = ManifestDiffJson(d, "A", "B");
  EXPECT_EQ(j["schema"], "simreplay.manifest-diff/1");
  EXPECT_EQ(j["matters"], false);
}

TEST(ManifestDiff, LoadsPreflightsDirectoriesBareManifestsAndRefusesOthers) {
  const fs::path dir = fs::path(::testing::TempDir()) / "manifest_load";
  fs::remove_all(dir);
  fs::create_directories(dir / "pf");
  std::ofstream(dir / "pf" / "preflight.json")
      << json{{"schema", "simreplay.preflight/1"}, {"manifest", BaseManifest()}}.dump();
  std::ofstream(dir / "bare.json") << BaseManifest().dump();
  std::ofstream(dir / "nomanifest.json") << json{{"schema", "simreplay.preflight/1"}}.dump();
  std::ofstream(dir / "array.json") << "[1, 2]";
  std::ofstream(dir / "truncated.json") << "{\"versions\": {";
  for (const auto& p : {dir / "pf", dir / "pf" / "preflight.json", dir / "bare.json"}) {
    auto m = LoadRunManifest(p.string());
    ASSERT_TRUE(m.ok()) << p << ": " << m.status().message();
    EXPECT_EQ((*m)["versions"]["torch"], "2.4.1");
  }
  for (const char* bad : {"nomanifest.json", "array.json", "truncated.json", "missing.json"}) {
    auto m = LoadRunManifest((dir / bad).string());
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_NE(m.status().message().find(bad), std::string::npos) << m.status().message();
  }
  // A trace: its header's manifest.
  auto trace = LoadRunManifest(std::string(SIMREPLAY_SOURCE_DIR) + "/examples/quickstart/trace.jsonl.gz");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_TRUE((*trace)["versions"].is_object());
}

}  // namespace
}  // namespace simreplay::replay
