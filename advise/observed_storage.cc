#include "advise/observed_storage.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace simreplay::advise {

bool ChooseCeiling(const TraceRecords& r, const StorageProbeFits& probe, StorageCeiling* out) {
  const auto& m = r.manifest;
  std::string pattern = "random", why = "no manifest.loader.shuffle: assumed random reads";
  if (m.is_object() && m.contains("loader") && m["loader"].is_object() && m["loader"].contains("shuffle") &&
      m["loader"]["shuffle"].is_boolean()) {
    const bool shuffle = m["loader"]["shuffle"].get<bool>();
    pattern = shuffle ? "random" : "sequential";
    why = shuffle ? "manifest.loader.shuffle = true: random reads" : "manifest.loader.shuffle = false: sequential reads";
  }
  const ProbeFit* fit = pattern == "random" ? &probe.random : &probe.sequential;
  if (!fit->present || fit->peak_bytes_per_s <= 0) {
    const std::string other = pattern == "random" ? "sequential" : "random";
    why += "; the probe has no " + pattern + " peak, so its " + other + " one is used";
    pattern = other;
    fit = pattern == "random" ? &probe.random : &probe.sequential;
  }
  if (!fit->present || fit->peak_bytes_per_s <= 0) return false;
  *out = {probe.file, pattern, why, fit->peak_bytes_per_s, fit->stream_bytes_per_s, fit->latency_s};
  return true;
}

StorageThroughput ObserveStorage(const TraceRecords& r, const StorageProbeFits* probe) {
  StorageThroughput out;
  for (const auto& s : r.samples) {
    if (s.unsplit) continue;
    ++out.samples;
    out.read_bytes += static_cast<double>(s.read_bytes);
    out.read_s += s.read_ns * kNsToS;
  }
  out.from.records["sample"] = out.samples;
  // Device bytes: the increase of each process's cumulative counter over its records.
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::pair<int64_t, int64_t>> io;  // -> (min, max)
  for (const auto& w : r.workers) {
    auto [it, fresh] = io.try_emplace({w.rank, w.worker, w.pid}, w.io_read_bytes, w.io_read_bytes);
    if (!fresh) {
      it->second.first = std::min(it->second.first, w.io_read_bytes);
      it->second.second = std::max(it->second.second, w.io_read_bytes);
    }
  }
  if (!io.empty() && r.wall_s > 0) {
    out.device_read_bytes = 0;
    for (const auto& [key, range] : io) out.device_read_bytes += static_cast<double>(range.second - range.first);
    out.device_bytes_per_s = out.device_read_bytes / r.wall_s;
    out.from.records["worker"] = static_cast<int64_t>(r.workers.size());
  }
  if (out.samples == 0 || r.wall_s <= 0 || out.read_bytes <= 0) return out;
  out.visible = true;
  out.delivered_bytes_per_s = out.read_bytes / r.wall_s;
  out.per_read_bytes_per_s = out.read_s > 0 ? out.read_bytes / out.read_s : 0;
  out.mean_reads_in_flight = out.read_s / r.wall_s;
  if (probe != nullptr && ChooseCeiling(r, *probe, &out.ceiling)) {
    out.has_ceiling = true;
    out.ceiling_share = out.delivered_bytes_per_s / out.ceiling.peak_bytes_per_s;
    out.near_ceiling = out.ceiling_share >= kNearCeilingShare;
    out.from.kind = "measured, against an input";
    out.from.inputs.push_back("probe " + out.ceiling.file + " (fit." + out.ceiling.pattern + ".peak_bytes_per_s)");
  }
  return out;
}

}  // namespace simreplay::advise
