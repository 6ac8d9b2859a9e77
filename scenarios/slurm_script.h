// Batch scripts that run a sweep as a Slurm job array (docs/sweeps-on-slurm.md): array task I runs
// `simreplay what-if SCENARIO --out DIR --shard I/N --resume`, saving its points into the shared DIR;
// a second job, dependent on the whole array, merges them into DIR/results.*. Resubmitting submits
// only the array tasks that still own a missing point, and --resume skips the finished ones inside.
#pragma once

#include <string>
#include <vector>

namespace simreplay::scenarios {

struct SlurmOptions {
  std::string binary;                         // absolute path of the simreplay binary the tasks run
  std::string scenario;                       // absolute path of the scenario file
  std::string out_dir;                        // absolute path of the shared sweep directory
  size_t point_count = 0;                     // points in the sweep
  size_t array_size = 0;                      // array tasks = shards (N of --shard I/N); 0: DefaultArraySize
  int cpus_per_task = 1;                      // each task runs this many simulations at once (--jobs)
  std::string time_limit = "01:00:00";        // per array task (sbatch --time)
  std::string merge_time_limit = "00:20:00";  // the merge job
  std::string memory;                         // sbatch --mem per task ("" = the cluster's default)
  std::string partition;                      // "" = the cluster's default
  std::string account;                        // "" = the user's default
  size_t max_running = 0;                     // at most this many tasks at once (--array=...%K); 0 = no limit
  double point_timeout_s = 0;                 // passed to what-if --point-timeout when > 0
  std::vector<std::string> extra_sbatch;      // further "#SBATCH" options, e.g. "--qos=short"
  std::string job_name = "simreplay-sweep";
  // The verb each array task runs as `BINARY VERB SCENARIO --out DIR --shard I/N --resume --jobs C`
  // (a planner can run its own verb), and the merge job's arguments after BINARY (default: `merge DIR
  // --out DIR`).
  std::string verb = "what-if";
  std::vector<std::string> task_args;  // further arguments of every task's command (e.g. --preflight P)
  std::vector<std::string> merge_args;
};

// Points per task aim at 8 (a task then amortises its start-up: loading traces, hashing inputs) and
// the array stays within Slurm's default MaxArraySize of 1001 tasks.
size_t DefaultArraySize(size_t point_count);

// `text` quoted for a POSIX shell (single quotes).
std::string ShellQuote(const std::string& text);

// "0-3,7,9-10" for sbatch --array.
std::string ArraySpec(const std::vector<size_t>& tasks);

// The array tasks of `shard_count` shards that own at least one point not yet finished.
std::vector<size_t> TasksWithMissingPoints(const std::vector<bool>& finished, size_t shard_count);

// DIR/slurm/sweep.sbatch and DIR/slurm/merge.sbatch. Logs go to DIR/slurm/logs/.
std::string SweepArrayScript(const SlurmOptions& options);
std::string MergeScript(const SlurmOptions& options);

}  // namespace simreplay::scenarios
