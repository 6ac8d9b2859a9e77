// `simreplay diff-manifest A B`: exit 0 when nothing that matters differs, 1 when something does (each
// difference named on a MATTERS line), 3 with one line for an unreadable input; --scope and --json.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli_runner.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using simreplay::testing::RunCli;
using simreplay::testing::Slurp;

TEST(DiffManifestCli, NamesWhatDiffersAndWhetherItMatters) {
  const fs::path dir = fs::path(::testing::TempDir()) / "diff_manifest_cli";
  fs::remove_all(dir);
  fs::create_directories(dir);
  // The bundled CPU preflight (a real run) against itself, then with another torch and more cores.
  const std::string a = std::string(SIMREPLAY_SOURCE_DIR) + "/tests/plan/data/preflight_cpu_real.json";
  json doc = json::parse(Slurp(a));
  doc["manifest"]["start_time"] = "2026-12-02T10:00:00+00:00";  // never compared
  std::ofstream(dir / "same.json") << doc.dump();
  doc["manifest"]["versions"]["torch"] = "2.4.1";
  doc["manifest"]["hardware"]["cores"] = 64;
  doc["manifest"]["cwd"] = "/elsewhere";
  std::ofstream(dir / "other.json") << doc.dump();

  auto r = RunCli("diff-manifest " + a + " " + (dir / "same.json").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("0 difference(s) that matter, 0 informational: comparable"), std::string::npos) << r.output;

  r = RunCli("diff-manifest " + a + " " + (dir / "other.json").string() + " --json " + (dir / "d.json").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("MATTERS hardware.cores: 2 -> 64\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("MATTERS versions.torch: 1.13.0a0 -> 2.4.1\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("info    cwd: /tmp -> /elsewhere\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("2 difference(s) that matter, 1 informational: the runs are NOT comparable"),
            std::string::npos)
      << r.output;
  const json d = json::parse(Slurp(dir / "d.json"));
  EXPECT_EQ(d["schema"], "simreplay.manifest-diff/1");
  EXPECT_EQ(d["matters_count"], 2);

  // A plan's scope: the software only (the hardware differs on purpose).
  r = RunCli("diff-manifest " + a + " " + (dir / "other.json").string() + " --scope software");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("info    hardware.cores: 2 -> 64\n"), std::string::npos) << r.output;

  // A trace against a preflight: the quickstart capture and the CPU preflight ran the same software.
  r = RunCli("diff-manifest " + std::string(SIMREPLAY_SOURCE_DIR) + "/examples/quickstart/trace.jsonl.gz " + a +
             " --scope software");
  EXPECT_EQ(r.exit_code, 0) << r.output;

  std::ofstream(dir / "broken.json") << "{\"manifest\": ";
  r = RunCli("diff-manifest " + a + " " + (dir / "broken.json").string());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_NE(r.output.find("broken.json"), std::string::npos) << r.output;
}

}  // namespace
