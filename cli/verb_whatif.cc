// simreplay what-if SCENARIO.json --out DIR [--jobs N]: expands the scenario's sweep axes and simulates
// every point in its own processes. Writes DIR/results.csv, DIR/results.json, DIR/report.html; prints a
// table. Output does not depend on --jobs.
#include <unistd.h>

#include <cstdio>

#include <CLI/CLI.hpp>

#include "cli/cli_util.h"
#include "cli/verb_registry.h"
#include "common/atomic_file.h"
#include "scenarios/scenario.h"
#include "scenarios/sweep_outputs.h"
#include "sim/point_runner.h"

namespace simreplay::cli {
namespace {

int RunWhatIf(int argc, char** argv) {
  CLI::App app{
      "Sweep a scenario's \"sweep\" axes (cartesian product): writes DIR/results.csv, DIR/results.json\n"
      "(schema simreplay.sweep/1) and DIR/report.html, and prints a table."};
  app.name(argv[0]);
  std::string scenario_path, out_dir;
  int jobs = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  app.add_option("scenario", scenario_path, "scenario JSON file with a \"sweep\" object")->required();
  app.add_option("--out", out_dir, "output directory (created if missing)")->required();
  app.add_option("--jobs,-j", jobs, "simulations run in parallel (default: CPU count)")->check(CLI::Range(1, 256));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  const std::string verb = "simreplay what-if";
  auto json = scenarios::LoadScenarioJson(scenario_path);
  if (!json.ok()) return Fail(verb, json.status());
  auto points = scenarios::ExpandSweep(*json, scenario_path, scenarios::DirectoryOf(scenario_path));
  if (!points.ok()) return Fail(verb, points.status());

  sim::CostCache cache;
  std::vector<sim::PreparedPoint> prepared;
  prepared.reserve(points->size());
  for (const auto& point : *points) {
    auto p = sim::PreparePoint(point.scenario, &cache);
    if (!p.ok()) return Fail(verb, p.status());
    prepared.push_back(std::move(*p));
  }
  std::vector<sim::IsolatedJob> all_jobs;
  for (const auto& p : prepared) {
    for (auto& job : sim::MakeJobs(p, "")) all_jobs.push_back(std::move(job));
  }
  const bool tty = StderrIsTty();
  auto progress = [&](size_t done, size_t total) {
    if (tty)
      std::fprintf(stderr, "\r  simulating: %zu/%zu runs (%zu points x full + pipeline-only)", done, total, total / 2);
  };
  auto outputs = sim::RunIsolated(all_jobs, jobs, progress);
  if (tty) std::fprintf(stderr, "\n");

  std::vector<scenarios::SweepResult> results;
  for (size_t i = 0; i < prepared.size(); ++i) {
    auto result = sim::AssembleResult(prepared[i], outputs[2 * i], outputs[2 * i + 1]);
    if (!result.ok()) {
      std::string label;
      for (const auto& [k, v] : (*points)[i].axes) label += (label.empty() ? "" : ", ") + k + "=" + v.dump();
      return Fail(verb, Status(result.status().code() == Status::Code::kInternal
                                   ? Status::Internal("point " + label + ": " + result.status().message())
                                   : result.status()));
    }
    results.push_back({(*points)[i].axes, std::move(*result)});
  }
  Status s = MakeDirectories(out_dir);
  if (s.ok()) s = WriteFileAtomically(out_dir + "/results.csv", scenarios::SweepCsv(results));
  if (s.ok())
    s = WriteFileAtomically(out_dir + "/results.json", scenarios::SweepJson(scenario_path, results).dump(2) + "\n");
  if (s.ok()) s = WriteFileAtomically(out_dir + "/report.html", scenarios::SweepHtml(scenario_path, results));
  if (!s.ok()) return Fail(verb, s);
  std::fputs(scenarios::SweepTable(results).c_str(), stdout);
  std::printf("accelerator: %s (%s)\n", results[0].result["accelerator"].get<std::string>().c_str(),
              results[0].result["accelerator_note"].get<std::string>().c_str());
  std::printf("wrote %s/results.csv, %s/results.json, %s/report.html\n", out_dir.c_str(), out_dir.c_str(),
              out_dir.c_str());
  return kExitOk;
}

}  // namespace

SIMREPLAY_REGISTER_VERB("what-if", "sweep scenario axes: results.csv/json + report.html", RunWhatIf);

}  // namespace simreplay::cli
