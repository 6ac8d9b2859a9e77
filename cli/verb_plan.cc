// simreplay plan PLAN.json --out DIR [--jobs N] [--preflight preflight.json]: capacity planning
// (docs/planning.md). Simulates every candidate cluster that fits in GPU memory to a steady state,
// extrapolates to the job, adds failures, checkpoints, eval and the phases around training, and
// writes DIR/plan.json, DIR/plan.csv and DIR/report.html; prints a table and the recommendation.
#include <unistd.h>

#include <cstdio>

#include <CLI/CLI.hpp>

#include "cli/cli_util.h"
#include "cli/verb_registry.h"
#include "common/atomic_file.h"
#include "plan/plan_outputs.h"
#include "plan/plan_spec.h"
#include "plan/planner.h"

namespace simreplay::cli {
namespace {

int RunPlanVerb(int argc, char** argv) {
  CLI::App app{
      "Plan a reservation: days, GPU-hours, cost and 7/30-day verdicts for each candidate cluster of a plan file\n"
      "(docs/plan-format.md). Writes DIR/plan.json, DIR/plan.csv and DIR/report.html."};
  app.name(argv[0]);
  std::string plan_path, out_dir, preflight;
  int jobs = 0;
  app.add_option("plan", plan_path, "plan JSON file")->required();
  app.add_option("--out", out_dir, "output directory (created if missing)")->required();
  app.add_option("--jobs,-j", jobs, "candidate simulations in parallel (default: the plan's, else CPU count)")
      ->check(CLI::Range(1, 256));
  app.add_option("--preflight", preflight, "preflight.json: its measurements replace the plan's assumptions");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  const std::string verb = "simreplay plan";
  auto spec = plan::LoadPlanFile(plan_path);
  if (!spec.ok()) return Fail(verb, spec.status());
  plan::PlanOptions options;
  options.jobs = jobs > 0                    ? jobs
                 : spec->simulation.jobs > 0 ? spec->simulation.jobs
                                             : static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  options.preflight_path = preflight;
  const bool tty = StderrIsTty();
  options.progress = [tty](const std::string& phase, size_t done, size_t total) {
    if (tty) std::fprintf(stderr, "\r  %s: %zu/%zu candidate runs", phase.c_str(), done, total);
  };
  auto outcome = plan::RunPlan(*spec, options);
  if (tty) std::fprintf(stderr, "\n");
  if (!outcome.ok()) return Fail(verb, outcome.status());
  Status s = MakeDirectories(out_dir);
  if (s.ok()) s = WriteFileAtomically(out_dir + "/plan.json", plan::PlanJson(*outcome).dump(2) + "\n");
  if (s.ok()) s = WriteFileAtomically(out_dir + "/plan.csv", plan::PlanCsv(*outcome));
  if (s.ok()) s = WriteFileAtomically(out_dir + "/report.html", plan::PlanHtml(*outcome));
  if (!s.ok()) return Fail(verb, s);
  std::fputs(plan::PlanTable(*outcome).c_str(), stdout);
  std::printf("\n%s\n", outcome->recommendation["text"].get<std::string>().c_str());
  std::printf("accelerator: %s (%s)\n", outcome->accelerator.c_str(), outcome->accelerator_note.c_str());
  std::printf("wrote %s/plan.json, %s/plan.csv, %s/report.html\n", out_dir.c_str(), out_dir.c_str(), out_dir.c_str());
  return kExitOk;
}

}  // namespace

SIMREPLAY_REGISTER_VERB("plan", "capacity planning: days, cost, 7/30-day verdicts per candidate", RunPlanVerb);

}  // namespace simreplay::cli
