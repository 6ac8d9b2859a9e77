// simreplay tune SCENARIO.json --out DIR [--objective throughput|cost] [--budget N] [--command "..."]
// The best configuration of the job's own settings under the machine's limits (advise/tuner.h), its
// predicted gain with the validated interval, the runners-up, what bound each rejected direction, and
// an experiment spec for the user's own job (docs/advice.md). Writes DIR/tune.json and, with
// --command, DIR/experiment.json for `simreplay validate`.
#include <unistd.h>

#include <cstdio>

#include <CLI/CLI.hpp>

#include "advise/tune_outputs.h"
#include "advise/tuner.h"
#include "cli/cli_util.h"
#include "cli/verb_registry.h"
#include "common/atomic_file.h"
#include "scenarios/scenario.h"

namespace simreplay::cli {
namespace {

constexpr const char* kTuneVerb = "simreplay tune";

int RunTune(int argc, char** argv) {
  CLI::App app{
      "Search the job's settings (num_workers, prefetch_factor, persistent_workers, pin_memory, data.format and\n"
      "access, a cache tier in front of remote storage, for clusters the DDP bucket size and overlap, GPU\n"
      "decoding where the dated tool-compatibility table allows it; with --objective cost also the core count)\n"
      "for the best predicted configuration under host memory, core, storage-stream and cache limits. Writes DIR/tune.json (schema simreplay.tune/1, docs/advice.md) and,\n"
      "with --command, DIR/experiment.json: single-factor A/B tests of the change on your own job for\n"
      "`simreplay validate` (docs/validation-format.md)."};
  app.name(argv[0]);
  std::string scenario_path, out_dir, objective = "throughput", command;
  advise::TuneOptions options;
  options.jobs = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  app.add_option("scenario", scenario_path, "scenario JSON file (docs/scenario-format.md); a sweep is ignored")
      ->required();
  app.add_option("--out", out_dir, "output directory (created if missing)")->required();
  app.add_option("--objective", objective, "throughput (default) or cost (samples per unit of price)")
      ->check(CLI::IsMember({"throughput", "cost"}));
  app.add_option("--budget", options.budget, "configurations simulated at most (default 40)")
      ->check(CLI::Range(2, 10000));
  app.add_option("--jobs,-j", options.jobs, "simulations run in parallel (default: CPU count)")
      ->check(CLI::Range(1, 256));
  app.add_option("--memory-bytes", options.memory_bytes,
                 "host memory of a node (default: the model's memory.capacity_bytes, from the trace manifest)")
      ->check(CLI::Range(0.0, 1e18));
  app.add_option("--memory-headroom", options.memory_headroom, "share of host memory kept free (default 0.10)")
      ->check(CLI::Range(0.0, 0.95));
  app.add_option("--max-workers-per-core", options.max_workers_per_core,
                 "workers of all ranks on a node per core at most (default 2; PyTorch warns above 1)")
      ->check(CLI::Range(0.01, 64.0));
  app.add_option("--gpu-hour-price", options.gpu_hour_price, "cost objective: price of one GPU-hour")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--core-hour-price", options.core_hour_price, "cost objective: price of one CPU core-hour")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--cache-bytes", options.cache_bytes,
                 "local disk space per node a cache tier may take (NVMe cache in front of remote storage tiers; "
                 "default 0: no NVMe cache searched)")
      ->check(CLI::Range(0.0, 1e18));
  app.add_flag("--allow-streaming", options.allow_streaming,
               "search data.access sequential for a shuffled job too (shard + buffer shuffling instead of a global one)");
  app.add_option("--backward-share", options.backward_share,
                 "share of the GPU step that is backward, the most DDP can overlap (default 2/3, assumed)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--command", command,
                 "your training command as a template for the experiment spec, e.g. \"python3 train.py --workers "
                 "{num_workers} --trace {trace} --summary {summary}\" (placeholders: docs/validation-format.md)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  options.objective = objective == "cost" ? advise::TuneObjective::kCost : advise::TuneObjective::kThroughput;
  advise::ExperimentRequest request;
  if (!command.empty()) {
    auto argv_template = advise::SplitCommand(command);
    if (!argv_template.ok()) {
      std::fprintf(stderr, "%s: %s\n", kTuneVerb, argv_template.status().message().c_str());
      return kExitUsage;
    }
    request.command = std::move(*argv_template);
  }
  auto json = scenarios::LoadScenarioJson(scenario_path);
  if (!json.ok()) return Fail(kTuneVerb, json.status());
  auto scenario = scenarios::ParseScenario(*json, scenario_path, scenarios::DirectoryOf(scenario_path));
  if (!scenario.ok()) return Fail(kTuneVerb, scenario.status());

  const bool tty = StderrIsTty();
  options.on_progress = [tty](const std::string& what) {
    if (tty) std::fprintf(stderr, "  tuning: simulating %s\n", what.c_str());
  };
  sim::CostCache cache;
  auto result = advise::Tune(*scenario, options, &cache);
  if (!result.ok()) return Fail(kTuneVerb, result.status());

  Status s = MakeDirectories(out_dir);
  if (s.ok()) s = WriteFileAtomically(out_dir + "/tune.json", advise::TuneJson(scenario_path, *result, options).dump(2) + "\n");
  const bool changes = !(result->best.knobs == result->current.knobs);
  bool testable = true;  // the change has a factor validate's runner can set
  if (s.ok() && !request.command.empty() && changes) {
    request.batch_size = scenario->loader.batch_size;
    request.steps = scenario->train.steps > 0 ? scenario->train.steps : 60;
    request.seed = scenario->seed;
    request.memory_limit_bytes = result->memory_limit_bytes;
    const auto spec = advise::ExperimentSpec(scenario_path, *result, request);
    if (spec["cases"].size() >= 2) {
      s = WriteFileAtomically(out_dir + "/experiment.json", spec.dump(2) + "\n");
    } else {
      testable = false;
    }
  }
  if (!s.ok()) return Fail(kTuneVerb, s);
  std::fputs(advise::TuneText(*result).c_str(), stdout);
  std::fflush(stdout);
  for (const auto& w : result->profile.base_warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  std::string also;
  if (!changes) {
    also = " (no change to test: no experiment spec)";
  } else if (!testable) {
    also = " (the change sets nothing validate's runner can vary in your command: no experiment spec; apply it by "
           "hand)";
  } else if (request.command.empty()) {
    also = " (give --command for an experiment spec on your own job)";
  } else {
    also = " and " + out_dir + "/experiment.json (run it: simreplay validate " + out_dir + "/experiment.json --out DIR)";
  }
  std::printf("wrote %s/tune.json%s\n", out_dir.c_str(), also.c_str());
  return kExitOk;
}

}  // namespace

SIMREPLAY_REGISTER_VERB("tune", "best loader settings under memory/core/stream limits + an A/B spec for your job",
                        RunTune);

}  // namespace simreplay::cli
