// Steady-state detection and extrapolation of a simulated run (docs/planning.md, "Steady state").
// A month of training cannot be simulated step by step; a few hundred steps can. The detector finds
// where the optimizer-step interval stops drifting, and the extrapolation continues the steady rate
// (plus the measured cost of each later epoch boundary) to the job's full length.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace simreplay::plan {

// Where epochs start in optimizer steps: epoch e's first micro-batch is micro-batch e x M of the rank
// (M micro-batches per epoch), inside optimizer step floor(e x M / A) (A = gradient accumulation).
struct EpochGeometry {
  int64_t micro_batches_per_epoch = 0;  // per rank
  int64_t grad_accum = 1;
  double StepsPerEpoch() const { return static_cast<double>(micro_batches_per_epoch) / grad_accum; }
  int64_t BoundaryStep(int64_t epoch) const { return epoch * micro_batches_per_epoch / grad_accum; }
};

struct SteadyState {
  bool steady = false;             // false: the drift never fell under the tolerance (estimate from the last half)
  bool periodic = false;           // windows are whole epochs (short epochs) rather than runs of steps
  int64_t warmup_steps = 0;        // steps before the steady part (they are replayed as simulated)
  double warmup_end_s = 0;         // simulated time at the end of those steps
  double step_s = 0;               // mean optimizer-step interval in the steady part
  double drift = 0;                // relative difference of the steady part's two halves
  double relative_se = 0;          // standard error of step_s (from window means) / step_s
  int64_t window_steps = 0;        // (approximate) steps per window
  double boundary_extra_s = 0;     // long epochs: extra time of an epoch boundary over a steady step
  bool boundary_measured = false;  // the extra came from simulated boundaries, not from the start-up
  std::string detail;              // one line for the report
};

// Finds the steady state of the simulated step intervals `interval_s` (step k lasts interval_s[k];
// step 0 includes start-up). `tolerance` is the largest relative drift accepted (e.g. 0.005).
SteadyState DetectSteadyState(const std::vector<double>& interval_s, const EpochGeometry& epochs, double tolerance);

// Predicted wall time of `total_steps` optimizer steps: the simulated time when the job is no longer
// than the simulation, else warm-up as simulated + steady rate x the remaining steps + the boundary
// extra x the epoch boundaries among them (long epochs; short ones are inside the steady rate).
double ExtrapolateS(const SteadyState& steady, const std::vector<double>& interval_s, const EpochGeometry& epochs,
                    int64_t total_steps);

}  // namespace simreplay::plan
