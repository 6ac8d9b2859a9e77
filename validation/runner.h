// Drives the real runs of an experiment: the run plan (discarded warm-up runs first, then repetitions
// interleaved case by case: A B A B ...), child processes (posix_spawn in their own process group, so
// a timed-out run is killed with its DataLoader workers), and the run index DIR/runs.json that
// `validate --ingest DIR` reads back.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "validation/experiment_spec.h"
#include "validation/host_capacity.h"

namespace simreplay::validation {

struct PlannedRun {
  std::string id;  // "<case>.<kind>.r<rep>" or "<case>.warmup<k>"
  std::string case_name;
  std::string kind;  // "train" or "pipeline"
  int rep = -1;      // -1: warm-up run (discarded)
  bool discarded = false;
};

// Warm-up runs (spec.warmup_runs per case, train kind, discarded), then for each repetition: every
// case's train run in case order, then (when spec.pipeline_only_runs) every case's pipeline run.
std::vector<PlannedRun> PlanRuns(const ExperimentSpec& spec);

// Where the bench and Python live.
struct RunEnvironment {
  std::string python = "/usr/bin/python3";
  std::string capture_path;  // directory holding simreplay_capture (prepended to PYTHONPATH)
  std::string dataset_dir;
};

// The argv of a run (the bench, or the spec's command template with placeholders filled). Paths of the
// trace and summary are as given.
std::vector<std::string> BuildCommand(const ExperimentSpec& spec, const ExperimentCase& c, const PlannedRun& run,
                                      const RunEnvironment& env, const std::string& trace_path,
                                      const std::string& summary_path);

// One executed run as recorded in runs.json (paths relative to the output directory).
struct RunRecord {
  PlannedRun plan;
  int sequence = 0;  // position in the executed order
  std::vector<std::string> command;
  std::string trace, summary, log;
  int exit_code = 0;  // 0 ok; -SIGNAL when killed (timeout: -9)
  bool timed_out = false;
  double wall_s = 0;
  double loadavg_before = -1, loadavg_after = -1;  // 1-minute load average around the run
  // Share of the host's CPU time the hypervisor stole over the run window (/proc/stat; -1: unknown).
  double steal_fraction = -1;
  // Mean "cpu MHz" over the host's CPUs (/proc/cpuinfo) before and after the run (-1: unknown): a
  // clock that moved between runs (frequency scaling, a migrated VM) is recorded, not assumed away.
  double cpu_mhz_before = -1, cpu_mhz_after = -1;
  // The host's delivered cores screened just before and just after the run (cores 0: not screened;
  // validation/host_capacity.h). The run's share is the mean of the two.
  HostCapacity host_before, host_after;
  int attempts = 1;            // runs made for this record: a run over the noise bound is repeated once
  bool over_noise_bound = false;  // still over after the repeat: recorded, not scored
  std::string noise_reason;       // why it was over: "steal" or "host_capacity" ("" when not over)
  // Mean delivered share of the two screens; -1 when either is missing.
  double HostDeliveredShare() const;
  std::string started_utc;
  nlohmann::json ToJson() const;
};
Result<RunRecord> RunRecordFromJson(const nlohmann::json& j, const std::string& where);

// The run index DIR/runs.json ("simreplay.validation-runs/1", docs/validation-format.md), rewritten
// atomically after every run so that an interrupted validation keeps the runs it finished.
Status WriteRunIndex(const std::string& dir, const std::vector<RunRecord>& runs);
Result<std::vector<RunRecord>> ReadRunIndex(const std::string& dir);

// The fresh-page fault cost of every screen around the runs (before and after each), microseconds;
// screens that did not measure it are left out.
std::vector<double> ScreenedFaultCostsUs(const std::vector<RunRecord>& runs);

// Runs argv with PYTHONPATH extended, stdout+stderr to `log_path`, killing the process group after
// `timeout_s`. Returns the exit code (negative signal number when killed). The output passes through
// this process on its way to the log, so the child's error survives a log that could not be written
// (a full disk): `last_error_line`, and `log_error` says why the log is incomplete.
struct ChildOutcome {
  int exit_code = 0;
  bool timed_out = false;
  double wall_s = 0;
  std::string last_error_line;  // the child's last non-empty stderr line (its error, when it failed)
  std::string log_error;        // "" when every byte reached the log
};
Result<ChildOutcome> RunChild(const std::vector<std::string>& argv, const std::string& pythonpath_prepend,
                              const std::string& log_path, double timeout_s);

// Why a child failed, in one phrase: "exit N: its last stderr line" (and "; its log is incomplete: ..."
// when the log could not be written), or the reason it could not be run.
std::string ChildFailure(const Result<ChildOutcome>& outcome);

// 1-minute load average from /proc/loadavg (-1 when unreadable).
double LoadAverage1();

// Mean current clock of the host's CPUs in MHz from /proc/cpuinfo's "cpu MHz" lines (-1 when
// unreadable; a VM often reports its nominal clock).
double MeanCpuMhz();

// The host's aggregate CPU times from /proc/stat's "cpu" line, in clock ticks (ok = false when
// unreadable), and the share of the time between two readings the hypervisor stole (-1: unknown, or
// a window under 100 ticks, too short for the 10 ms ticks to resolve a few percent).
struct CpuTimes {
  double total = 0, steal = 0;
  bool ok = false;
};
CpuTimes ReadCpuTimes();
double StealFraction(const CpuTimes& before, const CpuTimes& after);
// A run whose window had more stolen CPU than this measured the neighbours, not the pipeline: it is
// repeated once, and not scored if the repeat is over it too (docs/validation.md, "Noise").
inline constexpr double kStealBound = 0.05;

// Directory holding simreplay_capture: $SIMREPLAY_CAPTURE_PATH, else the first "capture" directory
// with a simreplay_capture package found walking up from this executable. Empty when none.
std::string FindCapturePath();
// This executable (for running `simreplay calibrate` as a child).
std::string SelfExecutable();

}  // namespace simreplay::validation
