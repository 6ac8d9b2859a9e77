// Estimating the shared-core slowdown (cpu.busy_core_slowdown) from one trace: on SMT siblings and
// shared caches a sample's CPU time grows when other cores are busy at the same time. Measured here:
// a sample's thread CPU time rose ~9-12% when the other worker ran beside it on the 2-core VM
// (docs/model-format.md, "Shared cores").
//
// Method: for every sample with cpu_ns, overlap = (time-integral of the other loader samples running
// during it) / (its duration x (C - 1)), capped at 1. Per media format, a Huber fit of
// cpu = a + b x pixels + c x overlap (least squares) gives the slowdown at full overlap c / mean(a + b x pixels);
// formats are averaged by sample count. Samples in a worker's warm-up window (`warmup`: its first
// samples after the fork, whose excess cpu.worker_warmup_cpu_s charges on its own) count in the others'
// overlap but are left out of the fit: every worker starts at once at an epoch's start, so they ran at
// 0.63 overlap against 0.09-0.15 after, and their allocator excess came out as a slowdown of 1.25-2.5
// (clamped to 1) where the steady samples give 0.06-0.34 (docs/modelling.md, "Shared cores"). Not
// measured (0, assumed) when fewer than 50 fitted samples carry cpu_ns, the cores are 1, the overlap
// hardly varies (std < 0.1: e.g. one worker), or no format's slope is positive and 3 standard errors
// from zero.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace simreplay::calibrate {

struct BusyCoreSample {
  double start_s = 0;
  double duration_s = 0;  // read + decode + augment wall time
  double cpu_s = 0;       // thread CPU time of the call
  double pixels = 0;      // width x height x max(1, frames)
  std::string format;     // media format
  bool warmup = false;    // in its process's warm-up window: an overlap for the others, not fitted
};

struct BusyCoreEstimate {
  double slowdown = 0;      // -> cpu.busy_core_slowdown
  double mean_overlap = 0;  // mean overlap of the fitted samples (0..1): what their cpu_ns already contains
  int64_t samples = 0;      // fitted (outside the warm-up windows)
  bool measured = false;
  std::string note;
  nlohmann::json ToJson() const;
};

// Concurrency each sample saw: 1 + (time-integral of the other samples running during it) / its
// duration (same order as `samples`; 1 for a sample without duration). Not capped at the cores:
// beyond them it counts runnable samples waiting for a core.
std::vector<double> SampleConcurrency(const std::vector<BusyCoreSample>& samples);

// Overlap of each sample with the others (same order as `samples`), in [0, 1].
std::vector<double> SampleOverlaps(const std::vector<BusyCoreSample>& samples, int cores);

BusyCoreEstimate EstimateBusyCoreSlowdown(const std::vector<BusyCoreSample>& samples, int cores);

}  // namespace simreplay::calibrate
