#include "advise/observed_memory.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "common/quantile.h"

namespace simreplay::advise {

namespace {

bool ManifestBool(const nlohmann::json& m, const char* section, const char* key, bool fallback) {
  if (!m.is_object() || !m.contains(section) || !m[section].is_object()) return fallback;
  const auto& s = m[section];
  return s.contains(key) && s[key].is_boolean() ? s[key].get<bool>() : fallback;
}

// How long an epoch and the run are (docs/advice.md: the projection's horizon, in order of preference).
MemoryHorizon FindHorizon(const TraceRecords& r, const RunHorizon& h, double samples_per_s, double step_period_s) {
  MemoryHorizon out;
  std::vector<int64_t> starts = r.epoch_starts_ns;
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  if (starts.size() >= 2) {
    std::vector<double> gaps;
    for (size_t i = 1; i < starts.size(); ++i) gaps.push_back((starts[i] - starts[i - 1]) * kNsToS);
    out.epoch_s = Median(gaps);
    out.epoch_from = fmt::format("median gap between the trace's {} epoch_start events", starts.size());
  } else if (h.samples_per_epoch > 0 && samples_per_s > 0) {
    out.epoch_s = static_cast<double>(h.samples_per_epoch) / samples_per_s;
    out.epoch_from = fmt::format("{}: {} samples per epoch at the observed {:.4g} samples/s", h.source,
                                 h.samples_per_epoch, samples_per_s);
  } else if (const int64_t files = ManifestInt(r.manifest, "data", "files", 0); files > 0 && samples_per_s > 0) {
    out.epoch_s = static_cast<double>(files) / samples_per_s;
    out.epoch_from = fmt::format("manifest.data.files = {} (assumed: one sample per file) at the observed {:.4g} "
                                 "samples/s",
                                 files, samples_per_s);
  }
  if (h.steps > 0 && step_period_s > 0) {
    out.run_s = static_cast<double>(h.steps) * step_period_s;
    out.run_from = fmt::format("{}: {} steps at the observed mean step period of {:.4g} s", h.source, h.steps,
                               step_period_s);
  } else if (h.epochs > 0 && out.epoch_s > 0) {
    out.run_s = static_cast<double>(h.epochs) * out.epoch_s;
    out.run_from = fmt::format("{}: {} epochs of {:.4g} s ({})", h.source, h.epochs, out.epoch_s, out.epoch_from);
  }
  out.workers_restart_each_epoch = ManifestInt(r.manifest, "loader", "num_workers", 0) > 0 &&
                                   !ManifestBool(r.manifest, "loader", "persistent_workers", false);
  return out;
}

double Project(const GrowthFit& f, double from_s, double to_s) {
  return f.last_bytes + std::max(0.0, f.slope_bytes_per_s) * std::max(0.0, to_s - from_s);
}

}  // namespace

GrowthFit FitGrowth(const std::vector<double>& t, const std::vector<double>& y) {
  GrowthFit f;
  const size_t n = t.size();
  if (n == 0) return f;
  f.first_bytes = y.front();
  f.last_bytes = y.back();
  if (n < 2) return f;
  double mt = 0, my = 0;
  for (size_t i = 0; i < n; ++i) {
    mt += t[i];
    my += y[i];
  }
  mt /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double stt = 0, sty = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    stt += (t[i] - mt) * (t[i] - mt);
    sty += (t[i] - mt) * (y[i] - my);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (stt <= 0) return f;
  f.slope_bytes_per_s = sty / stt;
  f.r2 = syy > 0 ? sty * sty / (stt * syy) : 0;
  const double growth = f.slope_bytes_per_s * (t.back() - t.front());
  f.clearly_growing = static_cast<int>(n) >= kGrowthMinPoints && f.slope_bytes_per_s > 0 &&
                      growth >= std::max(kGrowthMinBytes, kGrowthMinShare * f.first_bytes) && f.r2 >= kGrowthMinR2;
  return f;
}

WorkerMemoryObservation ObserveWorkerMemory(const TraceRecords& r, const RunHorizon& horizon, double samples_per_s,
                                            double step_period_s) {
  WorkerMemoryObservation out;
  out.horizon = FindHorizon(r, horizon, samples_per_s, step_period_s);
  if (!out.horizon.epoch_from.empty() && out.horizon.epoch_from.rfind("median gap", 0) != 0) {
    out.from.inputs.push_back(out.horizon.epoch_from);
  }
  if (!out.horizon.run_from.empty()) out.from.inputs.push_back(out.horizon.run_from);
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<const replay::WorkerRecord*>> series;
  for (const auto& w : r.workers) series[{w.rank, w.worker, w.pid}].push_back(&w);
  out.from.records["worker"] = static_cast<int64_t>(r.workers.size());
  if (!r.epoch_starts_ns.empty()) out.from.records["event(epoch_start)"] = static_cast<int64_t>(r.epoch_starts_ns.size());
  std::vector<double> starts_s;
  for (int64_t t : r.epoch_starts_ns) starts_s.push_back((t - r.window_start_ns) * kNsToS);
  std::sort(starts_s.begin(), starts_s.end());
  for (auto& [key, points] : series) {
    std::stable_sort(points.begin(), points.end(), [](const auto* a, const auto* b) { return a->t_ns < b->t_ns; });
    ProcessMemoryGrowth p;
    std::tie(p.rank, p.worker, p.pid) = key;
    p.points = static_cast<int64_t>(points.size());
    std::vector<double> t, rss, pss;
    for (const auto* w : points) {
      t.push_back((w->t_ns - r.window_start_ns) * kNsToS);
      rss.push_back(static_cast<double>(w->rss_bytes));
      pss.push_back(static_cast<double>(w->pss_bytes));
    }
    p.start_s = t.front();
    p.span_s = t.back() - t.front();
    p.rss = FitGrowth(t, rss);
    p.pss = FitGrowth(t, pss);
    if (p.points < kGrowthMinPoints) {
      p.growth = "too_few_points";
    } else if (p.rss.clearly_growing) {
      p.growth = "leak";
      ++out.leaking;
    } else if (p.pss.clearly_growing) {
      p.growth = "copy_on_read";
      ++out.copy_on_read;
    } else {
      p.growth = "none";
    }
    const MemoryHorizon& h = out.horizon;
    const double t_last = t.back();
    const bool restarts = h.workers_restart_each_epoch && p.worker >= 0;
    if (h.epoch_s > 0) {
      double end = p.start_s + h.epoch_s;  // a restarted worker lives one epoch from its start
      if (!restarts) {
        double anchor = 0;
        for (double s : starts_s) {
          if (s <= t_last) anchor = s;
        }
        end = anchor + h.epoch_s;
      }
      p.projected_epoch_end_pss_bytes = Project(p.pss, t_last, end);
      // A worker restarted every epoch is a fresh process at the run's end: one epoch of growth.
      if (restarts && h.run_s > 0) p.projected_run_end_pss_bytes = p.projected_epoch_end_pss_bytes;
    }
    if (!restarts && h.run_s > 0) p.projected_run_end_pss_bytes = Project(p.pss, t_last, h.run_s);
    out.processes.push_back(p);
  }
  return out;
}

HostHeadroom ObserveHeadroom(const TraceRecords& r, const WorkerMemoryObservation& workers) {
  HostHeadroom out;
  out.from.records["host"] = static_cast<int64_t>(r.hosts.size());
  if (r.hosts.empty()) return out;
  double used = 0, peak_field = -1, total = -1;
  for (const auto& h : r.hosts) {
    used = std::max(used, static_cast<double>(h.mem_used_bytes));
    if (h.mem_peak_bytes >= 0) peak_field = std::max(peak_field, static_cast<double>(h.mem_peak_bytes));
    if (h.mem_total_bytes >= 0) total = std::max(total, static_cast<double>(h.mem_total_bytes));
  }
  out.peak_bytes = std::max(used, peak_field);
  out.peak_from = peak_field > used ? "host.mem_peak_bytes" : "host.mem_used_bytes";
  if (total > 0) {
    out.total_bytes = total;
    out.total_from = "host.mem_total_bytes";
  } else if (const int64_t ram = ManifestInt(r.manifest, "hardware", "ram_bytes", 0); ram > 0) {
    out.total_bytes = static_cast<double>(ram);
    out.total_from = "manifest.hardware.ram_bytes";
    out.from.inputs.push_back(out.total_from);
  }
  if (out.total_bytes <= 0) return out;
  out.visible = true;
  out.headroom_bytes = out.total_bytes - out.peak_bytes;
  out.headroom_fraction = out.headroom_bytes / out.total_bytes;
  out.low = out.headroom_fraction < kLowHeadroomShare;
  if (workers.horizon.run_s > 0) {
    // Per process slot the largest projected growth: a slot's processes of different epochs never
    // coexist.
    std::map<std::pair<int64_t, int64_t>, double> growth;
    for (const auto& p : workers.processes) {
      if (p.projected_run_end_pss_bytes < 0) continue;
      double& g = growth[{p.rank, p.worker}];
      g = std::max(g, p.projected_run_end_pss_bytes - p.pss.last_bytes);
    }
    out.projected_run_end_peak_bytes = out.peak_bytes;
    for (const auto& [slot, g] : growth) out.projected_run_end_peak_bytes += g;
    out.projected_exceeds_total = out.projected_run_end_peak_bytes > out.total_bytes;
    out.from.records["worker"] = static_cast<int64_t>(r.workers.size());
  }
  return out;
}

}  // namespace simreplay::advise
