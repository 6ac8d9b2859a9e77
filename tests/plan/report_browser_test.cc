// report.html in a real headless browser (Debian's chromium): it renders, its self-check finds every
// plot drawn, no script error is raised, and a screenshot is kept as a test artefact
// (BUILD/test-artefacts/plan-report.png).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/cli_runner.h"

namespace {

namespace fs = std::filesystem;
using simreplay::testing::RunCli;
using simreplay::testing::Slurp;

std::string FindChromium() {
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (fs::exists(path)) return path;
  }
  return "";
}

// Runs a command, returns its exit status and stdout+stderr.
int RunCommand(const std::string& cmd, std::string* output) {
  const auto r = simreplay::testing::RunShell(cmd);
  *output = r.output;
  return r.exit_code;
}

TEST(PlanReport, RendersInHeadlessChromiumWithEveryPlotAndNoScriptError) {
  const std::string chromium = FindChromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs it)";
  fs::path out = fs::path(::testing::TempDir()) / "plan_report";
  fs::remove_all(out);
  auto r =
      RunCli("plan " + std::string(SIMREPLAY_SOURCE_DIR) + "/tests/plan/data/small_plan.json --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string url = "file://" + fs::absolute(out / "report.html").string();
  const fs::path profile = out / "chromium-profile";  // a private profile: no state shared between runs
  const std::string flags = "--headless --no-sandbox --disable-gpu --user-data-dir=" + profile.string() +
                            " --enable-logging=stderr --v=0 --virtual-time-budget=5000 ";

  // 1. The DOM after the page's scripts ran: the self-check's verdict, and no script error element.
  std::string dom;
  ASSERT_EQ(RunCommand(chromium + " " + flags + "--dump-dom " + url, &dom), 0) << dom;
  EXPECT_NE(dom.find("render-check: 4 of 4 plots drawn"), std::string::npos) << dom.substr(0, 2000);
  EXPECT_EQ(dom.find("id=\"script-error\""), std::string::npos);
  EXPECT_EQ(dom.find("Uncaught"), std::string::npos) << "a script error was logged";
  for (const char* id : {"plot-scaling", "plot-pareto", "plot-waterfall", "plot-memory"}) {
    EXPECT_NE(dom.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  }

  // 2. A screenshot, kept where CI can collect it.
  fs::create_directories("test-artefacts");
  const fs::path png = fs::absolute("test-artefacts/plan-report.png");
  fs::remove(png);
  std::string log;
  ASSERT_EQ(
      RunCommand(chromium + " " + flags + "--window-size=1300,2400 --screenshot=" + png.string() + " " + url, &log), 0)
      << log;
  ASSERT_TRUE(fs::exists(png)) << log;
  EXPECT_GT(fs::file_size(png), 20000u) << "a blank page compresses to almost nothing";
  const std::string bytes = Slurp(png);
  EXPECT_EQ(bytes.substr(1, 3), "PNG");
  fs::remove_all(profile);
}

}  // namespace
