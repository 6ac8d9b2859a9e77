// The measured CPU contention curve (`python3 -m simreplay_capture.probe_cpu`, docs/probe-cpu.md) and
// the simulator's CPU model fitted to it.
//
// The model (models/model_params.h, docs/model-format.md "Shared cores and oversubscription"): with n
// runnable CPU executions on C cores, every execution's CPU cost is multiplied by
//     f(n) = (1 + s x (min(n, C) - 1) / (C - 1)) x (1 + o x max(0, n - C) / C)
// s = cpu.busy_core_slowdown (shared caches, SMT siblings, memory bandwidth: a busy neighbour makes a
// core slower), o = cpu.oversubscription_overhead (more runnable processes than cores: context
// switches, cold caches after each switch, scheduler latency). f(1) = 1.
//
// What is fitted: per probe point k (k loader workers, all CPU-bound, the main process receiving),
// the core-seconds one delivered sample costs, cost(k) = usable cores / throughput(k), with usable
// cores = min(k, C - main process's busy cores). cost(k) = c0_r x f(k), one level c0_r per round r
// (the host drifts between rounds by as much as the effects fitted): s, o and the levels by least
// squares on log cost (grid over s in [0, 1.5] and o in [0, 3], levels in closed form; deterministic).
// o is kept only when the data show it: an F-test of the extra parameter at 95% (extra sum of squares
// against the fit without o, F(1, points - rounds - 2)), and the fit without o more than 1% rms off.
// The same fit on the mean thread CPU time of __getitem__ gives the part of the
// slowdown that a trace's cpu_ns contains (used to de-contend it; calibrate/cpu_stage.cc).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace simreplay::calibrate {

struct CpuProbePoint {
  int workers = 0;
  int round = 0;
  double wall_s = 0;
  double throughput_samples_per_s = 0;
  double getitem_cpu_s = 0;       // mean thread CPU time of one __getitem__
  double getitem_wall_s = 0;      // mean wall time of one __getitem__
  double main_cpu_s = 0;          // main process CPU over the window
  double loadavg_1m = -1;         // at the start of the window
  double workers_cpu_s = -1;      // the workers' CPU over the window; -1 = not recorded
  double host_busy_cores = -1;    // all processes on the host; -1 = not recorded
  double wake_delay_s = -1;       // mean wake-up delay of the main loop's timed sleeps; -1 = not recorded
  double minflt_per_sample = -1;  // mean minor page faults of one __getitem__; -1 = not recorded
};

// The probe's final point: the same items loaded by the main process itself (num_workers = 0).
struct CpuProbeInline {
  double throughput_samples_per_s = 0;
  double getitem_cpu_s = 0;
  double minflt_per_sample = -1;  // -1 = not recorded
};

struct CpuProbe {
  std::string file;
  int cores = 0;
  std::vector<CpuProbePoint> points;
  double baseline_wake_delay_s = -1;  // the main process's wake-up delay with no worker running; -1 = none
  std::optional<CpuProbeInline> inline_point;
};

// Reads a simreplay.probe-cpu/1 document. Errors: "FILE:LINE: ..." for unparsable JSON, "FILE: field:
// expected ..., found ..." for a wrong schema, a missing or non-finite field, a negative value, workers
// < 1, cores < 1, or no point at all.
Result<CpuProbe> ReadCpuProbeFile(const std::string& path);

// One (n, cost) observation of the curve: n concurrent executions, the per-unit cost measured.
struct CurvePoint {
  double n = 1;
  double cost = 0;
  int block = 0;  // the probe's round: each block gets its own level (the host drifts between rounds)
};

struct ContentionCurveFit {
  double base_cost = 0;               // c0: the cost with one execution running
  double slowdown = 0;                // s
  double overhead = 0;                // o (0 when not kept)
  double overhead_unconstrained = 0;  // o of the fit with o free, reported even when not kept
  double rms_log_error = 0;           // of the kept fit
  double rms_log_error_without_overhead = 0;
  bool overhead_kept = false;
  double overhead_f = 0;           // F statistic of adding o (extra-sum-of-squares)
  double overhead_f_critical = 0;  // its 95% quantile, F(1, points - blocks - 2)
  int points = 0;
  std::string note;
  // f(n) of this fit, for C cores.
  double Factor(double n, int cores) const;
  nlohmann::json ToJson() const;
};

// f(n) for C cores (the formula above); shared with the simulator's capacity function by definition.
double ContentionFactor(double n, int cores, double slowdown, double overhead);

// Least-squares fit of the curve to the points (at least 2 distinct n; costs > 0). Points with the same
// n are kept as separate observations (repeated rounds). Requires cores >= 1.
Result<ContentionCurveFit> FitContentionCurve(const std::vector<CurvePoint>& points, int cores);

// Mean busy cores on the host during the probe that were not the probe's own (host_busy_cores minus
// the main process's and the workers' CPU per second), over the points that recorded both; -1 when
// none did. Other load bends the curve: calibrate warns above a quarter of a core.
double ProbeForeignBusyCores(const CpuProbe& probe);

// The scheduler's wake-up delay of a blocked thread as a function of the executions running beside it:
// d(n) = base_s + per_excess_s x max(0, n + 1 - C) (models/model_params.h cpu.wakeup_delay_*), fitted
// by least squares to the probe's points (n = k workers) and its baseline (n = 0), both coefficients
// >= 0. Needs the wake-up delay at 2 or more distinct excess values; otherwise an error saying why.
struct WakeDelayFit {
  double base_s = 0;
  double per_excess_s = 0;
  double rms_s = 0;
  int points = 0;
  double Delay(double running, int cores) const;
  nlohmann::json ToJson() const;
};
Result<WakeDelayFit> FitWakeDelay(const CpuProbe& probe);

// Each probe point's cost at a reference page-fault level over its cost at its own: a sample's CPU is
// no_fault_cpu_s + fault_cost_s x faults (models/page_fault_churn.h, fitted on a trace), and a fresh
// worker's allocator falls into one of two regimes at random (40-60 or 160-190 faults per sample on the
// same items, 2026-12-06), which moves a point's cost by a third whatever the concurrency. Factor 1 for
// a point that did not count its faults.
std::vector<double> ProbeFaultFactors(const CpuProbe& probe, double no_fault_cpu_s, double fault_cost_s,
                                      double reference_faults);

// The throughput curve (core-seconds per delivered sample) and the thread-CPU curve of a probe, each
// point's cost times its factor (empty: 1 for all; else one per probe point).
std::vector<CurvePoint> ThroughputCostPoints(const CpuProbe& probe, const std::vector<double>& factors = {});
std::vector<CurvePoint> ThreadCpuPoints(const CpuProbe& probe, const std::vector<double>& factors = {});

}  // namespace simreplay::calibrate
