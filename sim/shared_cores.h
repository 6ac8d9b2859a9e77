// A node's cores as processor sharing, simulated here rather than by SimGrid's general solver: every
// CPU phase that runs progresses at the same rate, set by how many run (models::CoreCapacity: the
// node's capacity with n runnable, each capped at one core), with the node's background processes
// capped at their shares. This is the sharing SimGrid's multi-core CPU model gives the same executions;
// doing it here lets one job hold a whole sequence of phases (a worker's batch: each sample's read
// delay, then its decode and augment), so the simulation pays one SimGrid activity per job instead of
// two per sample (docs/performance.md, "Per-sample fidelity").
//
// Pure C++ on the caller's clock (sim/core_scheduler.h drives it from SimGrid actors). Equal rates make
// a CPU phase's end a fixed tag in "virtual time" (the CPU seconds each running phase has received), so
// every change costs O(log n). Deterministic: ties are broken by job number.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "models/model_params.h"

namespace simreplay::sim {

struct CorePhase {
  enum class Kind : uint8_t { kCpu, kRead };
  Kind kind;
  // kCpu: CPU seconds at the model's core speed (as recorded); kRead: a delay of wall seconds that
  // counts towards the node's storage busy time.
  double seconds;
  int64_t read_bytes = 0;  // kRead: the bytes it reads
};

// The CPU seconds and bytes read of the first `ended` of `phases`.
struct PhaseWork {
  double cpu_s = 0;
  int64_t read_bytes = 0;
};
PhaseWork WorkOf(const std::vector<CorePhase>& phases, size_t ended);

class SharedCores {
 public:
  // `speed` scales CPU seconds to this node's cores (core_speed_scale x the node's factor);
  // `background_threads` busy cores of other processes run as ceil(B) executions capped at their shares.
  SharedCores(int cores, double speed, const models::CpuParams& cpu, double background_threads);

  // Starts a job at `now` (not before the model's clock); returns its number. A job whose phases all
  // take no time is finished at once (reported by the next AdvanceTo).
  int Start(double now, std::vector<CorePhase> phases, bool counts_as_running);
  // Processes every phase change up to `t` (and those within kTimeSlackS after it: the SimGrid clock a
  // waiting actor wakes at may differ from the predicted end by rounding); appends the jobs that
  // finished, in the order they did.
  void AdvanceTo(double t, std::vector<int>* finished);
  // When the next job will finish if no other job starts (infinity when none runs).
  double NextFinish() const;
  // A finished job's phase end times, in phase order; valid until Release(job).
  const std::vector<double>& PhaseEnds(int job) const { return ends_[static_cast<size_t>(job)]; }
  void Release(int job);
  // The work of the phases `job` has ended so far.
  PhaseWork EndedWork(int job) const { return WorkOf(jobs_[static_cast<size_t>(job)].phases, ends_[static_cast<size_t>(job)].size()); }

  // CPU phases running now of jobs started with counts_as_running.
  int RunningNow() const { return state_.running; }
  // Seconds during which at least one kRead phase ran, over the periods that have ended since the last call.
  double TakeReadBusyS();

  static constexpr double kTimeSlackS = 1e-9;
  static constexpr double kNever = std::numeric_limits<double>::infinity();

 private:
  struct Job {
    std::vector<CorePhase> phases;
    bool counts_as_running = false;
  };
  // What changes as time passes; copied to look ahead (NextFinish).
  struct State {
    double now = 0;
    double virtual_s = 0;  // CPU seconds every running CPU phase has received so far
    int cpu_phases = 0, running = 0, reads = 0;
    double reads_since = 0, read_busy_s = 0;
    std::vector<std::pair<double, int>> cpu_ends;    // min-heap of (virtual end, job)
    std::vector<std::pair<double, int>> delay_ends;  // min-heap of (wall end, job)
    std::vector<uint32_t> phase;                     // per job: the phase it is in
  };

  // CPU seconds per second a running CPU phase receives with n of them running (memoised).
  double Rate(int cpu_phases) const;
  // Enters job's phase state->phase[job] at state->now, ending at once the phases that take no time;
  // pushes the job on `finished` when none is left. Phase ends go to `ends` (null when looking ahead).
  void EnterPhase(State* state, int job, std::vector<std::vector<double>>* ends, std::vector<int>* finished) const;
  // Moves `state` to its next phase change and returns true if that happens by `limit`; false otherwise.
  bool Step(State* state, double limit, std::vector<std::vector<double>>* ends, std::vector<int>* finished) const;

  int cores_;
  double speed_;
  models::CpuParams cpu_;
  std::vector<double> background_;  // shares of a core, ascending
  mutable std::vector<double> rates_;
  std::vector<Job> jobs_;
  std::vector<std::vector<double>> ends_;  // per job: its phases' end times so far
  std::vector<int> free_jobs_;
  std::vector<int> finished_early_;  // finished inside Start, reported by the next AdvanceTo
  State state_;
};

}  // namespace simreplay::sim
