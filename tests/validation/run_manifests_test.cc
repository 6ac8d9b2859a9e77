// validation/run_manifests.h: repetitions of a case must share everything that matters in their
// manifests; cases may read other data (their data revisions differ) but not another software stack
// or machine; runs without a manifest are not compared.
#include "validation/run_manifests.h"

#include <gtest/gtest.h>

namespace simreplay::validation {
namespace {

using nlohmann::json;

RunRecord MakeRun(const std::string& case_name, int rep) {
  RunRecord r;
  r.plan.case_name = case_name;
  r.plan.kind = "train";
  r.plan.id = case_name + ".train.r" + std::to_string(rep);
  return r;
}

json Manifest(const std::string& torch, const std::string& dataset_files) {
  return {{"versions", {{"torch", torch}}},
          {"revisions", {{"dataset_files", {{"sha256", dataset_files}}}}},
          {"hardware", {{"cores", 2}}}};
}

TEST(RunManifests, RepetitionsMatchEverythingCasesMayReadOtherData) {
  const std::vector<RunRecord> runs = {MakeRun("files", 0), MakeRun("tar", 0), MakeRun("files", 1), MakeRun("tar", 1),
                                       MakeRun("lmdb", 0)};
  std::map<std::string, TraceFacts> facts;
  facts["files.train.r0"].manifest = Manifest("2.4.1", "f");
  facts["files.train.r1"].manifest = Manifest("2.4.1", "f");
  facts["tar.train.r0"].manifest = Manifest("2.4.1", "t");
  facts["tar.train.r1"].manifest = Manifest("2.4.1", "t");
  // lmdb.train.r0: no trace read, not compared
  EXPECT_TRUE(RunManifestDifferences(runs, facts).empty());

  facts["tar.train.r1"].manifest = Manifest("2.4.1", "t2");  // a repetition read other data
  auto d = RunManifestDifferences(runs, facts);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], "run tar.train.r0 vs tar.train.r1: revisions.dataset_files.sha256: t -> t2");

  facts["tar.train.r1"].manifest = Manifest("2.4.1", "t");
  facts["tar.train.r0"].manifest["hardware"]["cores"] = 4;  // a case on another machine
  facts["tar.train.r1"].manifest["hardware"]["cores"] = 4;
  d = RunManifestDifferences(runs, facts);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], "run files.train.r0 vs tar.train.r0: hardware.cores: 2 -> 4");
}

}  // namespace
}  // namespace simreplay::validation
