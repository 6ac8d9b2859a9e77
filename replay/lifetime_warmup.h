// A fresh worker process's first samples cost more thread CPU than its later ones (first decodes,
// lazily set-up codecs, and mostly the allocator: every new largest image of a lifetime is mapped and
// faulted in afresh until glibc's thresholds have grown; docs/modelling.md, "The warm-up window").
// This measures that excess in recorded traces, per worker-process lifetime. One home for calibrate
// (which turns it into cpu.worker_warmup_cpu_s, charged at every predicted worker start) and for the
// replay (which takes it out of the recorded costs of the lifetimes that paid it, so a prediction does
// not charge it twice: once where the captured workers started, once where the predicted ones do).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "replay/trace_records.h"

namespace simreplay::replay {

// The worker samples (cpu_ns recorded) of one trace, and whether its workers were persistent (one
// process per worker for the run) or not (a fresh process per worker and epoch).
struct TraceSamples {
  std::vector<const SampleRecord*> samples;
  bool persistent_workers = false;
};

struct Lifetime {
  size_t trace = 0;                 // index into the input
  std::vector<const SampleRecord*> samples;  // in start order
  double window_cpu_s = 0;          // thread CPU of its first min(length, window) samples
  double excess_cpu_s = 0;          // of those, what exceeds their steady cost (may be negative)
  double first_excess_cpu_s = 0;    // the first sample's part of it
  bool priced = false;              // some window sample has a format with a steady cost
};

struct LifetimeWarmup {
  std::vector<Lifetime> lifetimes;  // per trace, in (rank, epoch, worker) order
  int window = 0;
  double window_samples = 0;        // summed over lifetimes
  bool measured = false;            // a steady cost for at least one format (>= 20 samples past the windows)
  std::map<std::string, double> steady_cpu_s_per_unit;  // per format
};

// Per format, the steady cost per unit (width x height x max(1, frames)) is the median thread CPU per
// unit over every sample at ordinal >= `window` in its lifetime (pooled over the traces); a lifetime's
// excess is what its first min(length, window) samples cost beyond that. A sample whose format has no
// steady cost (fewer than 20 samples past the windows) counts none. Samples without cpu_ns or loaded
// by the main process (worker < 0) are ignored. Given `steady` (a calibration's, measured over all its
// traces), the excess is priced with those costs instead of the traces' own.
LifetimeWarmup MeasureLifetimeWarmup(const std::vector<TraceSamples>& traces, int window,
                                     const std::map<std::string, double>* steady = nullptr);

}  // namespace simreplay::replay
