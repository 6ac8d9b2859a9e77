// simreplay plan PLAN.json --out DIR [--jobs N] [--preflight preflight.json [--allow-preflight-mismatch]
//                          [--allow-manifest-diff]] [--resume] [--shard I/N]
//                          [--merge DIR...] [--slurm [--submit] ...]: capacity planning (docs/planning.md).
// Simulates every candidate cluster that fits in GPU memory to a steady state, extrapolates to the job,
// adds failures, checkpoints, eval and the phases around training, and writes DIR/plan.json,
// DIR/plan.csv and DIR/report.html; prints a table and the recommendation.
//
// The candidates are the points of a sweep directory, as what-if's (DIR/points/, one file each): a
// killed plan resumes (--resume), --shard I/N simulates one share (a Slurm array task), --merge joins
// shard directories into the plan, and --slurm writes (and --submit submits) the job array and a
// dependent merge job (docs/sweeps-on-slurm.md). Every path to plan.* reads the candidates back from
// points/, so a merged plan is byte-identical to one planned in a single process.
#include <unistd.h>

#include <cstdio>

#include <CLI/CLI.hpp>

#include "cli/cli_util.h"
#include "cli/verb_registry.h"
#include "cli/whatif_slurm.h"
#include "common/atomic_file.h"
#include "plan/plan_outputs.h"
#include "plan/plan_spec.h"
#include "plan/planner.h"

namespace simreplay::cli {
namespace {

constexpr const char* kPlanVerb = "simreplay plan";

int WritePlan(const plan::PlanOutcome& outcome, const std::string& out_dir) {
  Status s = MakeDirectories(out_dir);
  if (s.ok()) s = WriteFileAtomically(out_dir + "/plan.json", plan::PlanJson(outcome).dump(2) + "\n");
  if (s.ok()) s = WriteFileAtomically(out_dir + "/plan.csv", plan::PlanCsv(outcome));
  if (s.ok()) s = WriteFileAtomically(out_dir + "/report.html", plan::PlanHtml(outcome));
  if (!s.ok()) return Fail(kPlanVerb, s);
  std::fputs(plan::PlanTable(outcome).c_str(), stdout);
  std::printf("\n%s\n", outcome.recommendation["text"].get<std::string>().c_str());
  std::printf("accelerator: %s (%s)\n", outcome.accelerator.c_str(), outcome.accelerator_note.c_str());
  std::printf("wrote %s/plan.json, %s/plan.csv, %s/report.html\n", out_dir.c_str(), out_dir.c_str(), out_dir.c_str());
  return kExitOk;
}

int ReportFailures(const plan::CandidateRunSummary& summary, const plan::PlanSetup& setup, const std::string& out_dir) {
  for (const auto& [point, why] : summary.failures) {
    std::fprintf(stderr, "%s: candidate %zu (%s) failed: %s\n", kPlanVerb, point, setup.point_labels[point].c_str(),
                 why.message().c_str());
  }
  std::fprintf(stderr,
               "%s: %zu of %zu candidates failed; the finished ones are kept in %s/points/: run again with "
               "--resume to simulate only the rest\n",
               kPlanVerb, summary.failures.size(), summary.owned, out_dir.c_str());
  return ExitCodeOf(summary.failures.front().second);
}

int RunPlanVerb(int argc, char** argv) {
  CLI::App app{
      "Plan a reservation: days, GPU-hours, cost and 7/30-day verdicts for each candidate cluster of a plan file\n"
      "(docs/plan-format.md). Writes DIR/plan.json, DIR/plan.csv and DIR/report.html; every simulated\n"
      "candidate is kept in DIR/points/ (schema simreplay.point/1) for --resume, --shard and --merge."};
  app.name(argv[0]);
  std::string plan_path, out_dir, preflight, shard_text;
  std::vector<std::string> merge_dirs;
  int jobs = 0;
  bool resume = false;
  plan::PreflightUse preflight_use;
  SlurmFlags slurm;
  app.add_option("plan", plan_path, "plan JSON file")->required();
  app.add_option("--out", out_dir, "output directory (created if missing)")->required();
  app.add_option("--jobs,-j", jobs, "candidate simulations in parallel (default: the plan's, else CPU count)")
      ->check(CLI::Range(1, 256));
  app.add_option("--preflight", preflight, "preflight.json: its measurements replace the plan's assumptions");
  app.add_flag("--allow-preflight-mismatch", preflight_use.allow_mismatch,
               "use a preflight whose micro-batch, sequence length, world size or accelerator differ from the plan's "
               "(refused otherwise; recorded in plan.json's assumptions, its figures not labelled measured)");
  app.add_flag("--allow-manifest-diff", preflight_use.allow_manifest_diff,
               "combine a preflight whose software stack differs from the capture's (docs/manifest.md; refused "
               "otherwise; recorded in plan.json's assumptions)");
  app.add_flag("--resume", resume, "keep the candidates already finished in DIR/points/ and simulate only the rest");
  app.add_option("--shard", shard_text,
                 "I/N: simulate only the candidates whose index mod N == I into DIR/points/ (no plan.*: "
                 "--merge joins the shards)");
  app.add_option("--merge", merge_dirs,
                 "simulate nothing: read every candidate from these directories' points/ (shards of this "
                 "plan) and write the plan to --out")
      ->expected(1, -1);
  AddSlurmFlags(&app, &slurm);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  scenarios::ShardSpec shard;
  if (!ParseShardFlag(kPlanVerb, shard_text, &shard)) return kExitUsage;
  if (static_cast<int>(slurm.enabled) + static_cast<int>(!shard_text.empty()) + static_cast<int>(!merge_dirs.empty()) >
      1) {
    std::fprintf(stderr, "%s: --slurm, --shard and --merge are different steps: give one of them\n", kPlanVerb);
    return kExitUsage;
  }

  auto spec = plan::LoadPlanFile(plan_path);
  if (!spec.ok()) return Fail(kPlanVerb, spec.status());
  preflight_use.path = preflight;
  auto setup = plan::PreparePlan(*spec, preflight_use);
  if (!setup.ok()) return Fail(kPlanVerb, setup.status());

  auto identity = plan::IdentifyPlan(*setup);  // hashes the inputs once, for every path below
  if (!identity.ok()) return Fail(kPlanVerb, identity.status());
  if (!merge_dirs.empty()) {
    auto runs = plan::LoadCandidateRuns(*setup, *identity, merge_dirs);
    if (!runs.ok()) {
      if (runs.status().code() == Status::Code::kNotFound) {
        std::fprintf(stderr,
                     "%s: %s\n%s: nothing written; simulate the missing candidates (plan --resume, or plan --slurm "
                     "--submit again) and merge again\n",
                     kPlanVerb, runs.status().message().c_str(), kPlanVerb);
        return kExitFailure;
      }
      return Fail(kPlanVerb, runs.status());
    }
    auto outcome = plan::FinishPlan(std::move(*setup), *runs);
    if (!outcome.ok()) return Fail(kPlanVerb, outcome.status());
    return WritePlan(*outcome, out_dir);
  }

  if (slurm.enabled) {
    SlurmCommand command;
    command.task_verb = "plan";
    command.job_name = "simreplay-plan";
    command.result_file = "plan.csv";
    const std::string abs_out = AbsolutePath(out_dir);
    if (!preflight.empty()) command.task_args = {"--preflight", AbsolutePath(preflight)};
    if (preflight_use.allow_mismatch) command.task_args.push_back("--allow-preflight-mismatch");
    if (preflight_use.allow_manifest_diff) command.task_args.push_back("--allow-manifest-diff");
    command.merge_args = {"plan", AbsolutePath(plan_path), "--out", abs_out, "--merge", abs_out};
    command.merge_args.insert(command.merge_args.end(), command.task_args.begin(), command.task_args.end());
    return RunSlurm(kPlanVerb, plan_path, out_dir, *identity, slurm, 0, command);
  }

  scenarios::PointStore store(out_dir, *identity);
  if (shard.whole() && !resume) {
    Status cleared = store.Clear();  // a fresh plan replaces whatever the directory held
    if (!cleared.ok()) return Fail(kPlanVerb, cleared);
  }
  const bool tty = StderrIsTty();
  plan::CandidateRunOptions options;
  options.jobs = jobs > 0                    ? jobs
                 : spec->simulation.jobs > 0 ? spec->simulation.jobs
                                             : static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  options.shard = shard;
  options.store = &store;
  options.resume = resume;
  options.progress = [tty](size_t done, size_t total) {
    if (tty) std::fprintf(stderr, "\r  simulating: %zu/%zu candidate runs", done, total);
  };
  auto summary = plan::SimulateCandidates(*setup, options);
  if (tty) std::fprintf(stderr, "\n");
  if (!summary.ok()) return Fail(kPlanVerb, summary.status());
  if (summary->reused > 0) {
    std::fprintf(stderr, "%s: resumed: %zu of %zu candidates were already finished\n", kPlanVerb, summary->reused,
                 summary->owned);
  }
  if (!summary->failures.empty()) return ReportFailures(*summary, *setup, out_dir);
  if (!shard.whole()) {
    std::printf(
        "shard %zu/%zu: %zu candidates saved in %s/points/ (%zu simulated, %zu already there); join the shards "
        "with: simreplay plan %s --merge %s --out DIR\n",
        shard.index, shard.count, summary->owned, out_dir.c_str(), summary->simulated, summary->reused,
        plan_path.c_str(), out_dir.c_str());
    return kExitOk;
  }
  // The plan comes from the saved points, as --merge reads them: one path to the output bytes.
  auto runs = plan::LoadCandidateRuns(*setup, *identity, {out_dir});
  if (!runs.ok()) return Fail(kPlanVerb, runs.status());
  auto outcome = plan::FinishPlan(std::move(*setup), *runs);
  if (!outcome.ok()) return Fail(kPlanVerb, outcome.status());
  return WritePlan(*outcome, out_dir);
}

}  // namespace

SIMREPLAY_REGISTER_VERB("plan", "capacity planning: days, cost, 7/30-day verdicts per candidate (shards, Slurm)",
                        RunPlanVerb);

}  // namespace simreplay::cli
