// A reservation replayed many times (docs/planning.md, "Monte Carlo reservation"): interruptions drawn
// from an exponential distribution of mean M, the job's work done in segments of tau each followed by a
// save of delta, an interruption losing the segment under way, and a restart of R (which an
// interruption may cut short too) before work resumes from the last save. The same model as the exact
// expected wall time (plan/goodput.h), so its mean agrees with it within the sampling error; what it
// adds is the distribution: quantiles and the chance of finishing inside each slot.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace simreplay::plan {

struct ReplayInput {
  double work_s = 0;                 // failure-free work (training at the simulated steady rate + eval stalls)
  double checkpoint_interval_s = 0;  // tau (0: saves are free and continuous, nothing is lost)
  double checkpoint_write_s = 0;     // delta
  double restart_s = 0;              // R
  double job_mtbf_s = 0;             // M (infinity: no interruptions)
  double fixed_s = 0;                // phases outside training that are not replayed (download, export, ...)
  double buffer_fraction = 0;        // reservation.buffer on top of the whole
  // A failure schedule replayed instead of drawn (reliability.known_failures): with known_schedule,
  // the interruptions are exactly known_failures_s (seconds on the replay's clock, 0 = the start of
  // training, ascending; empty: none at all), every trial is this one schedule (one deterministic
  // trial) and job_mtbf_s is not used. Times past the job's end never happen.
  bool known_schedule = false;
  std::vector<double> known_failures_s;
  // The launch-to-launch spread (reliability.launch_spread), as offsets from the nominal figures: a
  // trial starts training one of start_offsets_s later than at 0 (a failure before that is one during
  // the start-up: a restart, nothing lost), and each restart takes restart_s plus one of
  // restart_offsets_s; each drawn uniformly. Either given: a known schedule is replayed in every trial.
  std::vector<double> start_offsets_s;
  std::vector<double> restart_offsets_s;
  // Saves at step boundaries (job.checkpoint.every_steps = K > 0): segment i is steps (iK, min((i+1)K, N)]
  // of `steps` = N, each `step_s` long, with an evaluation of `eval_s` after every `eval_every_steps`-th
  // step (before that step's save, as a training loop that evaluates, then saves), and a save of delta;
  // work_s is then N x step_s + floor(N / E) x eval_s. With K = 0 the segments are checkpoint_interval_s
  // of work each (saves by time) and evaluations are spread evenly over the work.
  int64_t checkpoint_every_steps = 0;
  int64_t steps = 0;
  double step_s = 0;
  int64_t eval_every_steps = 0;
  double eval_s = 0;
};

struct ReplayOptions {
  int64_t trials = 2000;
  uint64_t seed = 0;
  // Bound on the work: trials x expected interruptions per trial. Past it fewer trials run (stated).
  double max_events = 5e7;
};

struct ReservationDistribution {
  int64_t trials = 0;  // run (fewer than asked only past max_events)
  uint64_t seed = 0;
  double mean_days = 0, stddev_days = 0, p50_days = 0, p90_days = 0, p99_days = 0;
  double p2_5_days = 0, p97_5_days = 0;  // the central 95% of the trials
  double mean_failures = 0;
  std::vector<double> p_within;  // per slot: fraction of trials whose total is within it
  std::string note;
};

// The wall time of the replayed part (work, saves, lost work, restarts) of one trial, and its
// interruptions. `seed` fixes the trial (Rng(seed)).
double ReplayTrainingOnceS(const ReplayInput& in, uint64_t seed, int64_t* failures);

// K trials (one with in.known_schedule and no launch spread: nothing is random); trial k draws from Rng(Rng::DeriveSeed(options.seed, k)), so the same inputs give the same
// bytes on every machine and a larger K extends a smaller one. Totals: (fixed + replayed) x (1 + buffer).
// REQUIRES: a finite job_mtbf_s > 0 or infinity (or known_schedule); options.trials >= 1.
ReservationDistribution SimulateReservation(const ReplayInput& in, const std::vector<double>& slot_days,
                                            const ReplayOptions& options);

}  // namespace simreplay::plan
