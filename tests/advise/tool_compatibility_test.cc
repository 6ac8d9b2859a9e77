// The dated tool-compatibility table checked against trace manifests: an incompatible tool is named
// with the manifest's value that rules it out; what the manifest cannot answer is "unverified".
#include "advise/tool_compatibility.h"

#include <gtest/gtest.h>

namespace simreplay::advise {
namespace {

nlohmann::json Manifest(const std::string& torch, const nlohmann::json& cuda, const nlohmann::json& mix) {
  return {{"versions", {{"torch", torch}, {"cuda", cuda}}}, {"data", {{"format", "files"}, {"mix", mix}}}};
}

const ToolCheck& Find(const std::vector<ToolCheck>& checks, const std::string& name) {
  for (const auto& c : checks) {
    if (c.name == name) return c;
  }
  static const ToolCheck none;
  ADD_FAILURE() << name << " not in the table";
  return none;
}

TEST(ToolCompatibility, BuiltinTableIsDatedAndSourced) {
  auto table = BuiltinToolTable();
  ASSERT_TRUE(table.ok()) << table.status().message();
  EXPECT_EQ(table->checked.size(), 10u) << table->checked;  // YYYY-MM-DD
  EXPECT_GE(table->tools.size(), 3u);
  for (const auto& t : table->tools) EXPECT_FALSE(t["sources"].empty()) << t.dump();
}

TEST(ToolCompatibility, CpuBuildOfTorchRulesOutGpuDecodingAndSaysWhy) {
  auto table = BuiltinToolTable();
  ASSERT_TRUE(table.ok());
  // The quickstart's manifest: torch 1.13 without CUDA, jpeg and mp4 samples.
  const auto checks = CheckTools(*table, Manifest("1.13.0a0", nullptr, {{"jpeg", 96}, {"mp4", 8}}), "");
  const auto& dali = Find(checks, "dali_gpu_decode");
  EXPECT_FALSE(dali.compatible);
  ASSERT_FALSE(dali.incompatible.empty());
  EXPECT_NE(dali.incompatible[0].find("versions.cuda = null"), std::string::npos) << dali.incompatible[0];
  // FFCV has no video field: the 8 mp4 samples rule it out.
  const auto& ffcv = Find(checks, "ffcv");
  EXPECT_FALSE(ffcv.compatible);
  bool media = false;
  for (const auto& why : ffcv.incompatible) media = media || why.find("'mp4' (8 samples") != std::string::npos;
  EXPECT_TRUE(media);
  // StatefulDataLoader needs torch >= 2.4.
  const auto& td = Find(checks, "torchdata_stateful_dataloader");
  EXPECT_FALSE(td.compatible);
  EXPECT_NE(td.incompatible[0].find("torch >= 2.4"), std::string::npos);
  // The manifest records no platform: said, not assumed.
  EXPECT_FALSE(dali.unverified.empty());
}

TEST(ToolCompatibility, CudaBuildWithImagesIsCompatibleUnlessTooOldOrOnAnotherPlatform) {
  auto table = BuiltinToolTable();
  ASSERT_TRUE(table.ok());
  auto m = Manifest("2.5.1+cu121", "12.1", {{"jpeg", 100}});
  m["platform"] = {{"system", "Linux"}, {"machine", "x86_64"}};
  auto checks = CheckTools(*table, m, "tar");
  EXPECT_TRUE(Find(checks, "dali_gpu_decode").compatible);
  EXPECT_TRUE(Find(checks, "dali_gpu_decode").unverified.empty());
  EXPECT_TRUE(Find(checks, "torchdata_stateful_dataloader").compatible);
  m["versions"]["cuda"] = "10.2";
  checks = CheckTools(*table, m, "tar");
  EXPECT_FALSE(Find(checks, "dali_gpu_decode").compatible);
  m["versions"]["cuda"] = "12.1";
  m["platform"] = {{"system", "Darwin"}, {"machine", "arm64"}};
  checks = CheckTools(*table, m, "tar");
  EXPECT_FALSE(Find(checks, "dali_gpu_decode").compatible);
  EXPECT_NE(Find(checks, "dali_gpu_decode").incompatible[0].find("darwin-arm64"), std::string::npos);
}

TEST(ToolCompatibility, VersionsCompareByNumericComponents) {
  EXPECT_EQ(ParseVersion("1.13.0a0"), (std::vector<int>{1, 13, 0}));
  EXPECT_EQ(ParseVersion("2.5.1+cu121"), (std::vector<int>{2, 5, 1}));
  EXPECT_TRUE(ParseVersion("nightly").empty());
  EXPECT_TRUE(VersionLess(ParseVersion("1.13"), ParseVersion("2.4")));
  EXPECT_TRUE(VersionLess(ParseVersion("2.4"), ParseVersion("2.10")));
  EXPECT_FALSE(VersionLess(ParseVersion("2.4.0"), ParseVersion("2.4")));
}

TEST(ToolCompatibility, MalformedTableIsRejected) {
  EXPECT_FALSE(ParseToolTable({{"schema", "x"}}, "t.json").ok());
  EXPECT_FALSE(ParseToolTable({{"schema", "simreplay.tool_compatibility/1"}, {"tools", nlohmann::json::array()}}, "t.json").ok());
  EXPECT_FALSE(ParseToolTable({{"schema", "simreplay.tool_compatibility/1"},
                               {"checked", "2026-12-02"},
                               {"tools", {{{"name", "x"}, {"requires", nlohmann::json::object()}}}}},
                              "t.json")
                   .ok());  // no sources
}

}  // namespace
}  // namespace simreplay::advise
