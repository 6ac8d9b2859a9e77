// simreplay what-if SCENARIO.json --out DIR [--jobs N] [--resume] [--shard I/N] [--point-timeout S]
//                  [--slurm [--submit] ...]
// Expands the scenario's sweep axes and simulates every point in its own processes, saving each
// finished point under DIR/points/ (docs/result-format.md, "Sweep directories"); then writes
// DIR/results.csv, DIR/results.json, DIR/report.html and prints a table. Output does not depend on
// --jobs. With --shard it simulates only its share of the points (a Slurm array task) and
// `simreplay merge` joins the shards; with --slurm it writes (and with --submit submits) the job array.
#include <unistd.h>

#include <cstdio>

#include <CLI/CLI.hpp>

#include "cli/cli_util.h"
#include "cli/verb_registry.h"
#include "cli/whatif_slurm.h"
#include "scenarios/point_store.h"
#include "scenarios/scenario.h"
#include "scenarios/sweep_identity.h"
#include "scenarios/sweep_outputs.h"
#include "sim/sweep_runner.h"

namespace simreplay::cli {
namespace {

constexpr const char* kWhatIfVerb = "simreplay what-if";

// Prints each failed point and returns the exit code of the first (3 when it was a bad input).
int ReportFailures(const sim::SweepRunSummary& summary, const std::string& out_dir) {
  for (const auto& f : summary.failures) {
    std::fprintf(stderr, "%s: point %zu%s failed: %s\n", kWhatIfVerb, f.index,
                 f.label.empty() ? "" : (" (" + f.label + ")").c_str(), f.status.message().c_str());
  }
  std::fprintf(stderr,
               "%s: %zu of %zu points failed; the %zu finished points are kept in %s/points/: run again with "
               "--resume to simulate only the rest\n",
               kWhatIfVerb, summary.failures.size(), summary.owned_points, summary.owned_points - summary.failures.size(),
               out_dir.c_str());
  return ExitCodeOf(summary.failures[0].status);
}

int RunWhatIf(int argc, char** argv) {
  CLI::App app{
      "Sweep a scenario's \"sweep\" axes (cartesian product): writes DIR/results.csv, DIR/results.json\n"
      "(schema simreplay.sweep/1) and DIR/report.html, and prints a table. Every finished point is also\n"
      "kept in DIR/points/ (schema simreplay.point/1), so a killed sweep resumes (--resume), a sweep can\n"
      "be split across processes or machines (--shard, then `simreplay merge`), or run as a Slurm job\n"
      "array (--slurm)."};
  app.name(argv[0]);
  std::string scenario_path, out_dir, shard_text;
  int jobs = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  bool resume = false;
  double point_timeout_s = 0;
  SlurmFlags slurm;
  app.add_option("scenario", scenario_path, "scenario JSON file with a \"sweep\" object")->required();
  app.add_option("--out", out_dir, "output directory (created if missing)")->required();
  app.add_option("--jobs,-j", jobs, "simulations run in parallel (default: CPU count)")->check(CLI::Range(1, 256));
  app.add_flag("--resume", resume,
               "keep the points already finished in DIR/points/ (same scenario and inputs) and simulate only "
               "the rest; without it the sweep starts afresh");
  app.add_option("--shard", shard_text,
                 "I/N: simulate only the points whose index mod N == I and save them in DIR/points/ (no "
                 "results.*: `simreplay merge` joins the shards)");
  app.add_option("--point-timeout", point_timeout_s,
                 "seconds one simulation of a point may run; a point that takes longer fails (the others "
                 "go on); 0 = no limit")
      ->check(CLI::Range(0.0, 1e9));
  AddSlurmFlags(&app, &slurm);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  scenarios::ShardSpec shard;
  if (!ParseShardFlag(kWhatIfVerb, shard_text, &shard)) return kExitUsage;
  if (slurm.enabled && !shard_text.empty()) {
    std::fprintf(stderr, "%s: --slurm writes the array whose tasks take --shard; give one or the other\n", kWhatIfVerb);
    return kExitUsage;
  }
  if (slurm.submit && !slurm.enabled) {
    std::fprintf(stderr, "%s: --submit needs --slurm\n", kWhatIfVerb);
    return kExitUsage;
  }

  auto json = scenarios::LoadScenarioJson(scenario_path);
  if (!json.ok()) return Fail(kWhatIfVerb, json.status());
  auto points = scenarios::ExpandSweep(*json, scenario_path, scenarios::DirectoryOf(scenario_path));
  if (!points.ok()) return Fail(kWhatIfVerb, points.status());
  auto identity = scenarios::IdentifySweep(*json, scenario_path, *points);
  if (!identity.ok()) return Fail(kWhatIfVerb, identity.status());
  if (slurm.enabled) return RunSlurm(kWhatIfVerb, scenario_path, out_dir, *identity, slurm, point_timeout_s);

  scenarios::PointStore store(out_dir, *identity);
  if (shard.whole() && !resume) {
    // A fresh whole sweep replaces whatever the directory held (another scenario's points included).
    Status cleared = store.Clear();
    if (!cleared.ok()) return Fail(kWhatIfVerb, cleared);
  }
  const bool tty = StderrIsTty();
  sim::SweepRunOptions options;
  options.jobs = jobs;
  options.shard = shard;
  options.resume = resume;
  options.point_timeout_s = point_timeout_s;
  options.on_progress = [tty](size_t done, size_t total) {
    if (tty) std::fprintf(stderr, "\r  simulating: %zu/%zu points (full + pipeline-only runs each)", done, total);
  };
  auto summary = sim::RunSweepShard(*points, store, options);
  if (tty) std::fprintf(stderr, "\n");
  if (!summary.ok()) return Fail(kWhatIfVerb, summary.status());
  if (summary->reused_points > 0) {
    std::fprintf(stderr, "%s: resumed: %zu of %zu points were already finished, %zu simulated now\n", kWhatIfVerb,
                 summary->reused_points, summary->owned_points, summary->owned_points - summary->reused_points);
  }
  if (!summary->failures.empty()) return ReportFailures(*summary, out_dir);
  if (!shard.whole()) {
    std::printf(
        "shard %zu/%zu: %zu points saved in %s/points/ (%zu simulated, %zu already there); join the "
        "shards with: simreplay merge %s --out DIR\n",
        shard.index, shard.count, summary->owned_points, out_dir.c_str(), summary->simulated_points,
        summary->reused_points, out_dir.c_str());
    return kExitOk;
  }
  // The tables come from the saved points, as `merge` reads them: one path to the output bytes.
  auto loaded = scenarios::LoadSweepDirectories({out_dir});
  if (!loaded.ok()) return Fail(kWhatIfVerb, loaded.status());
  if (!loaded->Missing().empty()) return Fail(kWhatIfVerb, Status::Internal(DescribeMissing(*loaded)));
  std::vector<scenarios::SweepResult> results;
  for (auto& p : loaded->points) results.push_back(std::move(*p));
  Status s = WriteAndPrintSweep(out_dir, scenario_path, results);
  if (!s.ok()) return Fail(kWhatIfVerb, s);
  return kExitOk;
}

}  // namespace

SIMREPLAY_REGISTER_VERB("what-if", "sweep scenario axes: results.csv/json + report.html (shards, Slurm)", RunWhatIf);

}  // namespace simreplay::cli
