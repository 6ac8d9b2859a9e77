#include "advise/observed_cpu.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace simreplay::advise {

namespace {

struct Span {
  int64_t first_t = INT64_MAX, last_t = INT64_MIN, first_cpu = 0, last_cpu = 0, records = 0;
  void Add(int64_t t, int64_t cpu) {
    ++records;
    if (t < first_t) {
      first_t = t;
      first_cpu = cpu;
    }
    if (t > last_t) {
      last_t = t;
      last_cpu = cpu;
    }
  }
  bool usable() const { return records >= 2 && last_t > first_t; }
};

}  // namespace

CpuObservation ObserveCpu(const TraceRecords& r) {
  CpuObservation out;
  std::map<std::tuple<int64_t, int64_t, int64_t>, Span> by_pid;  // (rank, worker, pid)
  for (const auto& w : r.workers) by_pid[{w.rank, w.worker, w.pid}].Add(w.t_ns, w.cpu_ns);
  std::map<std::pair<int64_t, int64_t>, ProcessCpu> slots;
  for (const auto& [key, span] : by_pid) {
    const auto& [rank, worker, pid] = key;
    ProcessCpu& p = slots[{rank, worker}];
    p.rank = rank;
    p.worker = worker;
    p.records += span.records;
    if (!span.usable()) continue;
    ++p.processes;
    p.window_s += (span.last_t - span.first_t) * kNsToS;
    p.cpu_s += std::max<int64_t>(0, span.last_cpu - span.first_cpu) * kNsToS;
  }
  double worker_sum = 0;
  int workers = 0;
  for (auto& [key, p] : slots) {
    if (p.window_s > 0) p.busy_fraction = p.cpu_s / p.window_s;
    out.worker_from.records["worker"] += p.records;
    if (p.processes == 0) continue;
    if (p.worker >= 0) {
      worker_sum += p.busy_fraction;
      ++workers;
    }
    out.processes.push_back(p);
  }
  // The map orders by (rank, worker): rank 0's main process (-1) comes first.
  if (workers > 0) out.mean_worker_busy_fraction = worker_sum / workers;

  Span host;
  for (const auto& h : r.hosts) host.Add(h.t_ns, h.cpu_busy_ns);
  out.host_from.records["host"] = host.records;
  if (!host.usable()) return out;
  out.host_visible = true;
  out.host_window_s = (host.last_t - host.first_t) * kNsToS;
  out.host_busy_cpu_s = std::max<int64_t>(0, host.last_cpu - host.first_cpu) * kNsToS;
  out.host_busy_cpus = out.host_busy_cpu_s / out.host_window_s;
  // /proc/stat's busy time counts every logical CPU, so the logical CPU count is the denominator; a
  // manifest without it falls back to the physical cores.
  for (const char* key : {"threads", "cores"}) {
    const int64_t n = ManifestInt(r.manifest, "hardware", key, 0);
    if (n > 0) {
      out.host_cpus = n;
      out.host_cpus_source = std::string("manifest.hardware.") + key;
      break;
    }
  }
  if (out.host_cpus > 0) {
    out.host_busy_fraction = out.host_busy_cpus / static_cast<double>(out.host_cpus);
    out.host_from.inputs.push_back(out.host_cpus_source);
  }
  return out;
}

}  // namespace simreplay::advise
