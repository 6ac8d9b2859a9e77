// simreplay simulate SCENARIO.json --out DIR: one scenario point -> DIR/result.json, DIR/timeline.json.
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <CLI/CLI.hpp>

#include "advise/causal_profile.h"
#include "advise/diagnosis.h"
#include "cli/cli_util.h"
#include "cli/verb_registry.h"
#include "common/atomic_file.h"
#include "scenarios/scenario.h"
#include "scenarios/sweep_outputs.h"
#include "sim/point_runner.h"

namespace simreplay::cli {
namespace {

// The verdict comes from the causal profile (advise/causal_profile.h), never from the utilisation
// signal: on one node it takes a few seconds, so simulate runs it; a cluster's is left to `diagnose`.
void PrintCausalVerdict(const scenarios::Scenario& scenario, sim::CostCache* cache) {
  if (scenario.cluster.nodes > 1) {
    std::printf("verdict              run `simreplay diagnose` (a causal profile of %d nodes: one simulation per "
                "relieved resource)\n",
                scenario.cluster.nodes);
    return;
  }
  advise::ProfileOptions options;
  options.jobs = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  std::fflush(stdout);  // the profile forks: nothing buffered may be written twice
  auto profile = advise::ProfileScenario(scenario, options, cache);
  if (!profile.ok()) {
    std::printf("verdict              not available: %s\n", profile.status().message().c_str());
    return;
  }
  std::printf("verdict (causal)     %s\n", advise::Verdict(*profile).c_str());
}

int RunSimulate(int argc, char** argv) {
  CLI::App app{
      "Simulate one scenario: writes DIR/result.json (schema simreplay.result/1, docs/result-format.md),\n"
      "DIR/report.html and DIR/timeline.json (Chrome trace format: open in ui.perfetto.dev)."};
  app.name(argv[0]);
  std::string scenario_path, out_dir;
  app.add_option("scenario", scenario_path, "scenario JSON file (docs/scenario-format.md)")->required();
  app.add_option("--out", out_dir, "output directory (created if missing)")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  const std::string verb = "simreplay simulate";
  auto json = scenarios::LoadScenarioJson(scenario_path);
  if (!json.ok()) return Fail(verb, json.status());
  if (json->contains("sweep")) {
    std::fprintf(stderr, "%s: %s: has a \"sweep\"; simulating its base point (use what-if for the sweep)\n",
                 verb.c_str(), scenario_path.c_str());
  }
  auto scenario = scenarios::ParseScenario(*json, scenario_path, scenarios::DirectoryOf(scenario_path));
  if (!scenario.ok()) return Fail(verb, scenario.status());
  Status s = MakeDirectories(out_dir);
  if (!s.ok()) return Fail(verb, s);
  const std::string timeline_pending = out_dir + "/.timeline.json.pending";
  sim::CostCache cache;
  auto result = sim::SimulateScenario(*scenario, timeline_pending, &cache);
  if (!result.ok()) {
    std::filesystem::remove(timeline_pending);
    return Fail(verb, result.status());
  }
  s = WriteFileAtomically(out_dir + "/result.json", result->dump(2) + "\n");
  if (s.ok()) s = WriteFileAtomically(out_dir + "/report.html", scenarios::SweepHtml(scenario_path, {{{}, *result}}));
  if (s.ok()) {
    std::error_code ec;
    std::filesystem::rename(timeline_pending, out_dir + "/timeline.json", ec);
    if (ec) s = Status::IoError(out_dir + "/timeline.json: " + ec.message());
  }
  if (!s.ok()) {
    std::filesystem::remove(timeline_pending);  // a full disk must not leave the pending timeline behind
    return Fail(verb, s);
  }
  const auto& m = (*result)["metrics"];
  std::printf("accelerator: %s (%s)\n", (*result)["accelerator"].get<std::string>().c_str(),
              (*result)["accelerator_note"].get<std::string>().c_str());
  if (const std::string folding = RankFoldingLine(m); !folding.empty()) std::printf("%s\n", folding.c_str());
  if ((*result)["resolved"].contains("network")) {
    const auto& n = (*result)["resolved"]["network"];
    std::printf("network: NICs %.4g B/s %s, latency %.3g s %s\n", n["nic_bytes_per_s"]["value"].get<double>(),
                n["nic_bytes_per_s"]["provenance"].get<std::string>().c_str(), n["nic_latency_s"]["value"].get<double>(),
                n["nic_latency_s"]["provenance"].get<std::string>().c_str());
  }
  std::printf("train throughput     %12.2f samples/s (end to end)\n",
              m["train_throughput_samples_per_s"].get<double>());
  std::printf("pipeline throughput  %12.2f samples/s (data pipeline alone)\n",
              m["pipeline_throughput_samples_per_s"].get<double>());
  std::printf("GPU idle             %12.1f %%\n", 100 * m["gpu_idle_fraction"].get<double>());
  std::printf("step time mean/p95   %12.4f / %.4f s\n", m["step_time_s"]["mean"].get<double>(),
              m["step_time_s"]["p95"].get<double>());
  std::printf("data wait mean/p95   %12.4f / %.4f s\n", m["data_wait_s"]["mean"].get<double>(),
              m["data_wait_s"]["p95"].get<double>());
  std::printf("time to first batch  %12.4f s\n", m["time_to_first_batch_s"].get<double>());
  std::printf("peak host memory     %12.1f MiB\n", m["peak_host_memory_bytes"].get<double>() / (1 << 20));
  std::printf("utilisation signal   %s: %s\n", m["bottleneck"]["stage"].get<std::string>().c_str(),
              m["bottleneck"]["evidence"].get<std::string>().c_str());
  PrintCausalVerdict(*scenario, &cache);
  if (result->contains("measured")) {
    std::printf("measured (trace)     %12.2f samples/s: prediction error %+.1f %%\n",
                (*result)["measured"]["train_throughput_samples_per_s"].get<double>(),
                (*result)["measured"]["train_throughput_error_pct"].get<double>());
  }
  for (const auto& w : (*result)["warnings"]) std::fprintf(stderr, "warning: %s\n", w.get<std::string>().c_str());
  std::printf("wrote %s/result.json, %s/report.html and %s/timeline.json (open in ui.perfetto.dev)\n", out_dir.c_str(),
              out_dir.c_str(), out_dir.c_str());
  return kExitOk;
}

}  // namespace

SIMREPLAY_REGISTER_VERB("simulate", "simulate one scenario: result.json + Perfetto timeline", RunSimulate);

}  // namespace simreplay::cli
