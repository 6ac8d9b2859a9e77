#include "cli/whatif_slurm.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "cli/cli_util.h"
#include "cli/verb_registry.h"
#include "common/atomic_file.h"
#include "scenarios/point_store.h"
#include "scenarios/slurm_script.h"

namespace simreplay::cli {

namespace {

std::string SelfPath() {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("simreplay") : path.string();
}

// sbatch --parsable prints "JOBID" or "JOBID;CLUSTER".
Result<std::string> Submit(const std::vector<std::string>& argv) {
  auto out = RunCommand(argv);
  if (!out.ok()) return out.status();
  std::string id = out->substr(0, out->find_first_of(";\n"));
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
    return Status::IoError("sbatch: expected a job id on stdout, found \"" + *out + "\"");
  }
  return id;
}

}  // namespace

void AddSlurmFlags(CLI::App* app, SlurmFlags* f) {
  const char* group = "Slurm (docs/sweeps-on-slurm.md)";
  app->add_flag("--slurm", f->enabled,
                "write DIR/slurm/sweep.sbatch (job array, one shard per task) and DIR/slurm/merge.sbatch "
                "instead of simulating here")
      ->group(group);
  app->add_flag("--submit", f->submit,
                "with --slurm: submit with sbatch (the merge job depends on the array); run again after "
                "failures to submit only the tasks with missing points")
      ->group(group);
  app->add_option("--array-size", f->array_size, "array tasks (shards); default: one per 8 points, at most 1000")
      ->check(CLI::Range(1, 100000))
      ->group(group);
  app->add_option("--cpus-per-task", f->cpus_per_task, "CPUs of each task (= its --jobs); default 1")
      ->check(CLI::Range(1, 1024))
      ->group(group);
  app->add_option("--time", f->time_limit, "time limit of each array task (sbatch --time); default 01:00:00")
      ->group(group);
  app->add_option("--merge-time", f->merge_time_limit, "time limit of the merge job; default 00:20:00")->group(group);
  app->add_option("--mem", f->memory, "memory per task (sbatch --mem, e.g. 4G); default: the cluster's")->group(group);
  app->add_option("--partition", f->partition, "Slurm partition")->group(group);
  app->add_option("--account", f->account, "Slurm account")->group(group);
  app->add_option("--max-running", f->max_running, "at most this many array tasks at once (--array=...%K)")
      ->group(group);
  app->add_option("--sbatch-option", f->extra_sbatch, "a further #SBATCH option, e.g. --qos=short (repeatable)")
      ->group(group);
}

bool ParseShardFlag(const std::string& verb, const std::string& text, scenarios::ShardSpec* shard) {
  if (text.empty()) return true;
  auto parsed = scenarios::ParseShardSpec(text);
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s: --shard: %s\n", verb.c_str(), parsed.status().message().c_str());
    return false;
  }
  *shard = *parsed;
  return true;
}

int RunSlurm(const std::string& verb, const std::string& scenario_path, const std::string& out_dir,
             const scenarios::SweepIdentity& identity, const SlurmFlags& flags, double point_timeout_s,
             const SlurmCommand& command) {
  scenarios::SlurmOptions o;
  o.verb = command.task_verb;
  o.task_args = command.task_args;
  o.merge_args = command.merge_args;
  o.job_name = command.job_name;
  o.binary = SelfPath();
  o.scenario = AbsolutePath(scenario_path);
  o.out_dir = AbsolutePath(out_dir);
  o.point_count = identity.point_count;
  o.array_size = flags.array_size > 0 ? std::min(flags.array_size, identity.point_count)
                                      : scenarios::DefaultArraySize(identity.point_count);
  o.cpus_per_task = flags.cpus_per_task;
  o.time_limit = flags.time_limit;
  o.merge_time_limit = flags.merge_time_limit;
  o.memory = flags.memory;
  o.partition = flags.partition;
  o.account = flags.account;
  o.max_running = flags.max_running;
  o.point_timeout_s = point_timeout_s;
  o.extra_sbatch = flags.extra_sbatch;
  // #SBATCH lines are not shell-parsed: a path with blanks would be cut there.
  if (o.out_dir.find_first_of(" \t\n") != std::string::npos) {
    std::fprintf(stderr, "%s: --slurm: the output directory must not contain blanks (#SBATCH --output): %s\n",
                 verb.c_str(), o.out_dir.c_str());
    return kExitUsage;
  }
  scenarios::PointStore store(o.out_dir, identity);
  Status s = store.Prepare();
  if (s.ok()) s = MakeDirectories(o.out_dir + "/slurm/logs");
  auto finished = s.ok() ? store.Finished() : Result<std::vector<bool>>(s);
  if (!finished.ok()) return Fail(verb, finished.status());
  const std::string array_script = o.out_dir + "/slurm/sweep.sbatch";
  const std::string merge_script = o.out_dir + "/slurm/merge.sbatch";
  s = WriteFileAtomically(array_script, scenarios::SweepArrayScript(o));
  if (s.ok()) s = WriteFileAtomically(merge_script, scenarios::MergeScript(o));
  if (!s.ok()) return Fail(verb, s);

  const auto tasks = scenarios::TasksWithMissingPoints(*finished, o.array_size);
  size_t missing = 0;
  for (bool f : *finished) missing += f ? 0 : 1;
  std::printf("%zu points in %zu array tasks; %zu points still to simulate, in %zu tasks (%s)\n", o.point_count,
              o.array_size, missing, tasks.size(), tasks.empty() ? "none" : scenarios::ArraySpec(tasks).c_str());
  std::printf("wrote %s and %s\n", array_script.c_str(), merge_script.c_str());
  if (!flags.submit) {
    std::printf("submit with:\n  jid=$(sbatch --parsable --array=%s %s) && sbatch --dependency=afterany:$jid %s\n",
                tasks.empty() ? "0" : scenarios::ArraySpec(tasks).c_str(), array_script.c_str(), merge_script.c_str());
    return kExitOk;
  }
  std::string dependency;
  if (!tasks.empty()) {
    auto array_job = Submit(
        {"sbatch", "--parsable",
         "--array=" + scenarios::ArraySpec(tasks) + (o.max_running > 0 ? "%" + std::to_string(o.max_running) : ""),
         array_script});
    if (!array_job.ok()) return Fail(verb, array_job.status());
    std::printf("submitted array job %s (tasks %s)\n", array_job->c_str(), scenarios::ArraySpec(tasks).c_str());
    dependency = "--dependency=afterany:" + *array_job;
  }
  std::vector<std::string> merge_argv = {"sbatch", "--parsable"};
  if (!dependency.empty()) merge_argv.push_back(dependency);
  merge_argv.push_back(merge_script);
  auto merge_job = Submit(merge_argv);
  if (!merge_job.ok()) return Fail(verb, merge_job.status());
  std::printf("submitted merge job %s%s: results in %s/%s when it ends\n", merge_job->c_str(),
              dependency.empty() ? " (every point was already finished)" : " (after the array)", o.out_dir.c_str(),
              command.result_file.c_str());
  return kExitOk;
}

}  // namespace simreplay::cli
