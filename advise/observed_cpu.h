// CPU from the trace's resource samples (docs/advice.md, "Observed"): how busy each loader worker was
// (worker records: cumulative CPU time over the process's sampled window) and how busy the host was
// (host records: cumulative busy CPU time over all CPUs, divided by the CPUs the manifest records).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "advise/observed_records.h"

namespace simreplay::advise {

// One loader process slot (rank, worker id; -1 = the main process), summed over the processes that
// held it (non-persistent workers get a new pid every epoch).
struct ProcessCpu {
  int64_t rank = 0, worker = 0;
  int64_t processes = 0;  // distinct pids with at least two records
  int64_t records = 0;
  double window_s = 0;  // sum over those pids of (last t_ns - first t_ns)
  double cpu_s = 0;     // sum over those pids of (last cpu_ns - first cpu_ns)
  double busy_fraction = 0;  // cpu_s / window_s: 1 = one core busy all the time
};

struct CpuObservation {
  std::vector<ProcessCpu> processes;     // by (rank, worker); the main process (-1) first
  double mean_worker_busy_fraction = -1;  // over loader workers (worker >= 0); -1: not visible
  Provenance worker_from;
  bool host_visible = false;  // two or more host records
  double host_window_s = 0, host_busy_cpu_s = 0;
  double host_busy_cpus = 0;        // busy CPU-seconds per second (the number of CPUs kept busy)
  int64_t host_cpus = 0;            // 0: the manifest records none
  std::string host_cpus_source;     // "manifest.hardware.threads" or "manifest.hardware.cores"
  double host_busy_fraction = -1;   // host_busy_cpus / host_cpus; -1 without host_cpus
  Provenance host_from;
};

CpuObservation ObserveCpu(const TraceRecords& records);

}  // namespace simreplay::advise
