// simreplay merge DIR... --out OUT: joins the points that what-if shards saved (DIR/points/, one file
// per point) into OUT/results.csv, OUT/results.json and OUT/report.html, byte-identical to a single
// `what-if` of the same scenario. Refuses points of different sweeps (scenario hash) and lists the
// missing points instead of writing a partial table.
#include <cstdio>

#include <CLI/CLI.hpp>

#include "cli/cli_util.h"
#include "cli/verb_registry.h"
#include "scenarios/point_store.h"

namespace simreplay::cli {
namespace {

constexpr const char* kMergeVerb = "simreplay merge";

int RunMerge(int argc, char** argv) {
  CLI::App app{
      "Join the points of a sweep run in shards (what-if --shard I/N, or a Slurm array) into\n"
      "OUT/results.csv, OUT/results.json and OUT/report.html, byte-identical to a single what-if.\n"
      "Fails, listing them, when points are missing (exit 1), and refuses points of different\n"
      "scenarios or input files (exit 3)."};
  app.name(argv[0]);
  std::vector<std::string> dirs;
  std::string out_dir;
  app.add_option("dirs", dirs, "sweep directories (each with points/), e.g. one per machine")->required();
  app.add_option("--out", out_dir, "output directory (may be one of the sweep directories)")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  auto loaded = scenarios::LoadSweepDirectories(dirs);
  if (!loaded.ok()) return Fail(kMergeVerb, loaded.status());
  if (!loaded->Missing().empty()) {
    std::fprintf(stderr,
                 "%s: %s\n%s: nothing written; simulate the missing points (what-if --resume, or what-if --slurm "
                 "--submit again) and merge again\n",
                 kMergeVerb, scenarios::DescribeMissing(*loaded).c_str(), kMergeVerb);
    return kExitFailure;
  }
  std::vector<scenarios::SweepResult> results;
  for (auto& p : loaded->points) results.push_back(std::move(*p));
  Status s = WriteAndPrintSweep(out_dir, loaded->identity.scenario_file, results);
  if (!s.ok()) return Fail(kMergeVerb, s);
  return kExitOk;
}

}  // namespace

SIMREPLAY_REGISTER_VERB("merge", "join sharded what-if points into results.csv/json + report.html", RunMerge);

}  // namespace simreplay::cli
