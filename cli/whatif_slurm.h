// `what-if --slurm`: writes DIR/slurm/sweep.sbatch (a job array, one shard per task) and
// DIR/slurm/merge.sbatch, and with --submit submits them with sbatch, the merge job depending on the
// array. A resubmission submits only the tasks that still own a missing point (docs/sweeps-on-slurm.md).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "scenarios/point_store.h"
#include "scenarios/sweep_identity.h"

namespace simreplay::cli {

struct SlurmFlags {
  bool enabled = false;
  bool submit = false;
  size_t array_size = 0;
  int cpus_per_task = 1;
  std::string time_limit = "01:00:00";
  std::string merge_time_limit = "00:20:00";
  std::string memory, partition, account;
  size_t max_running = 0;
  std::vector<std::string> extra_sbatch;
};

void AddSlurmFlags(CLI::App* app, SlurmFlags* flags);

// --shard I/N as given ("" = the whole sweep). On a bad value prints "VERB: --shard: why" and returns
// false (the caller exits with kExitUsage).
bool ParseShardFlag(const std::string& verb, const std::string& text, scenarios::ShardSpec* shard);

// What the array tasks and the merge job run, when it is not what-if's sweep (a plan's candidates).
struct SlurmCommand {
  std::string task_verb = "what-if";    // BINARY TASK_VERB INPUT --out DIR --shard I/N --resume ...
  std::vector<std::string> task_args;   // appended to every task's command
  std::vector<std::string> merge_args;  // after BINARY; empty: merge DIR --out DIR
  std::string result_file = "results.csv";
  std::string job_name = "simreplay-sweep";
};

// Writes the scripts (and submits them). Returns the exit code.
int RunSlurm(const std::string& verb, const std::string& scenario_path, const std::string& out_dir,
             const scenarios::SweepIdentity& identity, const SlurmFlags& flags, double point_timeout_s,
             const SlurmCommand& command = {});

}  // namespace simreplay::cli
