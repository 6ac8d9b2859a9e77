// Storage reads as the trace saw them (docs/advice.md, "Observed"): the bytes the samples read over
// the run's wall time, per read, and how many reads were in flight on average; against the ceiling of
// a `simreplay probe storage` document when one is given (docs/probe-format.md).
#pragma once

#include <cstdint>
#include <string>

#include "advise/observed_records.h"

namespace simreplay::advise {

// One access pattern's fit of a probe document (docs/probe-format.md, "fit").
struct ProbeFit {
  bool present = false;
  double peak_bytes_per_s = 0;    // the best cold bandwidth over block sizes and threads; 0 unknown
  double stream_bytes_per_s = 0;  // the fit's one-stream bandwidth; 0 unknown
  double latency_s = 0;
};

// A `probe storage` document's figures (the CLI reads it with calibrate::ReadProbeFile).
struct StorageProbeFits {
  std::string file;
  ProbeFit random, sequential;
};

// The ceiling the run is held against: the fit of the pattern the loader read in.
struct StorageCeiling {
  std::string file;
  std::string pattern;      // "random" or "sequential"
  std::string pattern_why;  // e.g. "manifest.loader.shuffle = true"
  double peak_bytes_per_s = 0;
  double stream_bytes_per_s = 0;
  double latency_s = 0;
};

struct StorageThroughput {
  bool visible = false;  // split sample records with reads
  int64_t samples = 0;
  double read_bytes = 0, read_s = 0;
  double delivered_bytes_per_s = 0;  // read_bytes / the run's wall time
  double per_read_bytes_per_s = 0;   // read_bytes / read_s (one request's view)
  double mean_reads_in_flight = 0;   // read_s / the run's wall time
  // From the worker records' cumulative io_read_bytes (the device's bytes: page-cache hits excluded).
  double device_read_bytes = -1, device_bytes_per_s = -1;
  bool has_ceiling = false;
  StorageCeiling ceiling;
  double ceiling_share = 0;  // delivered_bytes_per_s / ceiling.peak_bytes_per_s
  bool near_ceiling = false; // ceiling_share >= kNearCeilingShare
  Provenance from;
};

inline constexpr double kNearCeilingShare = 0.8;

// The probe fit that matches the loader's reads: random when manifest.loader.shuffle is true or not
// recorded (said so), sequential when false; the other pattern when the matching one has no peak.
// Returns false when neither has one.
bool ChooseCeiling(const TraceRecords& records, const StorageProbeFits& probe, StorageCeiling* out);

StorageThroughput ObserveStorage(const TraceRecords& records, const StorageProbeFits* probe);

}  // namespace simreplay::advise
