// simreplay diagnose SCENARIO.json --out DIR [--trace TRACE] [--jobs N] [--relief-factor F]
// Where the time goes: the trace's observations (no model) beside a causal profile of the scenario
// (every resource relieved in turn and simulated), the critical resource and the changes worth making
// (docs/advice.md). Writes DIR/diagnosis.json (simreplay.diagnosis/1) and DIR/report.html.
#include <unistd.h>

#include <cstdio>

#include <CLI/CLI.hpp>

#include "advise/causal_profile.h"
#include "advise/diagnosis.h"
#include "advise/observations.h"
#include "cli/cli_util.h"
#include "cli/verb_registry.h"
#include "common/atomic_file.h"
#include "scenarios/scenario.h"

namespace simreplay::cli {
namespace {

constexpr const char* kDiagnoseVerb = "simreplay diagnose";

int RunDiagnose(int argc, char** argv) {
  CLI::App app{
      "Diagnose a scenario: what its trace shows (observed) and what relieving each resource in turn\n"
      "would buy (simulated hypotheses, with the validated error band), the critical resource and the\n"
      "changes worth making. Writes DIR/diagnosis.json (schema simreplay.diagnosis/1, docs/advice.md)\n"
      "and DIR/report.html, and prints a summary."};
  app.name(argv[0]);
  std::string scenario_path, out_dir, trace_path;
  int jobs = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  double factor = 2;
  app.add_option("scenario", scenario_path, "scenario JSON file (docs/scenario-format.md); a sweep is ignored")
      ->required();
  app.add_option("--out", out_dir, "output directory (created if missing)")->required();
  app.add_option("--trace", trace_path, "trace to observe (default: the trace the scenario replays)");
  app.add_option("--jobs,-j", jobs, "simulations run in parallel (default: CPU count)")->check(CLI::Range(1, 256));
  app.add_option("--relief-factor", factor, "how much faster each relief makes its resource (default 2)")
      ->check(CLI::Range(1.01, 100.0));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  auto json = scenarios::LoadScenarioJson(scenario_path);
  if (!json.ok()) return Fail(kDiagnoseVerb, json.status());
  auto scenario = scenarios::ParseScenario(*json, scenario_path, scenarios::DirectoryOf(scenario_path));
  if (!scenario.ok()) return Fail(kDiagnoseVerb, scenario.status());

  sim::CostCache cache;
  advise::ProfileOptions options;
  options.factor = factor;
  options.jobs = jobs;
  const bool tty = StderrIsTty();
  options.on_progress = [tty](size_t done, size_t total) {
    if (tty) std::fprintf(stderr, "\r  diagnosing: %zu/%zu simulations", done, total);
  };
  auto profile = advise::ProfileScenario(*scenario, options, &cache);
  if (tty) std::fprintf(stderr, "\n");
  if (!profile.ok()) return Fail(kDiagnoseVerb, profile.status());
  if (trace_path.empty()) trace_path = profile->trace_path;
  auto observed = advise::ObserveTrace(trace_path);
  if (!observed.ok()) return Fail(kDiagnoseVerb, observed.status());

  const advise::Diagnosis diagnosis = advise::MakeDiagnosis(scenario_path, std::move(*observed), std::move(*profile));
  Status s = MakeDirectories(out_dir);
  if (s.ok()) s = WriteFileAtomically(out_dir + "/diagnosis.json", advise::DiagnosisJson(diagnosis).dump(2) + "\n");
  if (s.ok()) s = WriteFileAtomically(out_dir + "/report.html", advise::DiagnosisHtml(diagnosis));
  if (!s.ok()) return Fail(kDiagnoseVerb, s);
  std::fputs(advise::DiagnosisText(diagnosis).c_str(), stdout);
  std::fflush(stdout);
  for (const auto& w : diagnosis.profile.base_warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  std::printf("wrote %s/diagnosis.json and %s/report.html\n", out_dir.c_str(), out_dir.c_str());
  return kExitOk;
}

}  // namespace

SIMREPLAY_REGISTER_VERB("diagnose", "where the time goes: observed breakdown + simulated reliefs, critical resource",
                        RunDiagnose);

}  // namespace simreplay::cli
