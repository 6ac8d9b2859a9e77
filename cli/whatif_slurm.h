// `what-if --slurm`: writes DIR/slurm/sweep.sbatch (a job array, one shard per task) and
// DIR/slurm/merge.sbatch, and with --submit submits them with sbatch, the merge job depending on the
// array. A resubmission submits only the tasks that still own a missing point (docs/sweeps-on-slurm.md).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

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

// Writes the scripts (and submits them). Returns the exit code.
int RunSlurm(const std::string& verb, const std::string& scenario_path, const std::string& out_dir,
             const scenarios::SweepIdentity& identity, const SlurmFlags& flags, double point_timeout_s);

}  // namespace simreplay::cli
