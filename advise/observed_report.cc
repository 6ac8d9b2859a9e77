#include "advise/observed_report.h"

#include <fmt/format.h>

#include "sim/metrics.h"

namespace simreplay::advise {

namespace {

using sim::Round9;

// -1 stands for "not known" in the findings: null in JSON.
nlohmann::json OrNull(double v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(Round9(v)); }

std::string Mib(double bytes) { return fmt::format("{:.1f} MiB", bytes / (1 << 20)); }
std::string Pct(double fraction) { return fmt::format("{:.1f}%", 100 * fraction); }

// "[from: 352 sample, 20 worker records; manifest.hardware.threads]"
std::string FromText(const Provenance& p) {
  std::string s;
  for (const auto& [type, n] : p.records) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", n, type);
  if (!s.empty()) s += " records";
  for (const auto& in : p.inputs) s += (s.empty() ? "" : "; ") + in;
  return " [from: " + s + "]";
}

nlohmann::json GrowthJson(const GrowthFit& f) {
  return {{"first_bytes", Round9(f.first_bytes)},
          {"last_bytes", Round9(f.last_bytes)},
          {"slope_bytes_per_s", Round9(f.slope_bytes_per_s)},
          {"r2", Round9(f.r2)},
          {"clearly_growing", f.clearly_growing}};
}

nlohmann::json CpuJson(const CpuObservation& c) {
  nlohmann::json processes = nlohmann::json::array();
  for (const auto& p : c.processes) {
    processes.push_back({{"rank", p.rank},
                         {"worker", p.worker},
                         {"processes", p.processes},
                         {"records", p.records},
                         {"window_s", Round9(p.window_s)},
                         {"cpu_s", Round9(p.cpu_s)},
                         {"busy_fraction", Round9(p.busy_fraction)}});
  }
  return {{"processes", processes},
          {"mean_worker_busy_fraction", OrNull(c.mean_worker_busy_fraction)},
          {"from", ProvenanceJson(c.worker_from)},
          {"host",
           {{"visible", c.host_visible},
            {"window_s", Round9(c.host_window_s)},
            {"busy_cpu_s", Round9(c.host_busy_cpu_s)},
            {"busy_cpus", Round9(c.host_busy_cpus)},
            {"cpus", c.host_cpus},
            {"cpus_from", c.host_cpus_source},
            {"busy_fraction", OrNull(c.host_busy_fraction)},
            {"from", ProvenanceJson(c.host_from)}}}};
}

nlohmann::json WorkerMemoryJson(const WorkerMemoryObservation& m) {
  nlohmann::json processes = nlohmann::json::array();
  for (const auto& p : m.processes) {
    processes.push_back({{"rank", p.rank},
                         {"worker", p.worker},
                         {"pid", p.pid},
                         {"points", p.points},
                         {"start_s", Round9(p.start_s)},
                         {"span_s", Round9(p.span_s)},
                         {"rss", GrowthJson(p.rss)},
                         {"pss", GrowthJson(p.pss)},
                         {"growth", p.growth},
                         {"projected_epoch_end_pss_bytes", OrNull(p.projected_epoch_end_pss_bytes)},
                         {"projected_run_end_pss_bytes", OrNull(p.projected_run_end_pss_bytes)}});
  }
  return {{"rule", fmt::format("a series is clearly growing when it has >= {} points, its least-squares slope x its "
                               "span is >= max({} MiB, {:.0f}% of its first value) and r2 >= {}; leak = RSS "
                               "clearly growing, copy_on_read = PSS clearly growing while RSS is not",
                               kGrowthMinPoints, kGrowthMinBytes / (1 << 20), 100 * kGrowthMinShare, kGrowthMinR2)},
          {"processes", processes},
          {"leaking", m.leaking},
          {"copy_on_read", m.copy_on_read},
          {"horizon",
           {{"epoch_s", OrNull(m.horizon.epoch_s)},
            {"epoch_from", m.horizon.epoch_from},
            {"run_s", OrNull(m.horizon.run_s)},
            {"run_from", m.horizon.run_from},
            {"workers_restart_each_epoch", m.horizon.workers_restart_each_epoch}}},
          {"from", ProvenanceJson(m.from)}};
}

nlohmann::json HeadroomJson(const HostHeadroom& h) {
  return {{"visible", h.visible},
          {"peak_bytes", Round9(h.peak_bytes)},
          {"peak_from", h.peak_from},
          {"total_bytes", OrNull(h.total_bytes)},
          {"total_from", h.total_from},
          {"headroom_bytes", Round9(h.headroom_bytes)},
          {"headroom_fraction", Round9(h.headroom_fraction)},
          {"low", h.low},
          {"low_below_fraction", kLowHeadroomShare},
          {"projected_run_end_peak_bytes", OrNull(h.projected_run_end_peak_bytes)},
          {"projected_exceeds_total", h.projected_exceeds_total},
          {"from", ProvenanceJson(h.from)}};
}

nlohmann::json EpochStallsJson(const EpochStalls& e) {
  nlohmann::json epochs = nlohmann::json::array();
  for (const auto& b : e.epochs) {
    epochs.push_back({{"epoch", b.epoch},
                      {"batches", b.batches},
                      {"wait_s", Round9(b.wait_s)},
                      {"mean_wait_s", Round9(b.mean_wait_s)},
                      {"excess_s", Round9(b.excess_s)},
                      {"stall", b.stall}});
  }
  return {{"visible", e.visible},
          {"boundary_batches", e.boundary_batches},
          {"boundary_from", e.boundary_from},
          {"steady_batches", e.steady_batches},
          {"steady_median_wait_s", Round9(e.steady_median_wait_s)},
          {"epochs", epochs},
          {"excess_s", Round9(e.excess_s)},
          {"share_of_wall", Round9(e.share_of_wall)},
          {"stalls", e.stalls},
          {"rule", fmt::format("stall: the boundary batches' mean wait > {:g} x the steady median + {:g} ms",
                               kStallFactor, 1e3 * kStallMinS)},
          {"from", ProvenanceJson(e.from)}};
}

nlohmann::json HeadOfLineJson(const HeadOfLine& h) {
  return {{"visible", h.visible},
          {"batches", h.batches},
          {"data_wait_s", Round9(h.data_wait_s)},
          {"behind_slowest_s", Round9(h.behind_slowest_s)},
          {"share", Round9(h.share)},
          {"mean_slowest_over_median", Round9(h.mean_slowest_over_median)},
          {"from", ProvenanceJson(h.from)}};
}

nlohmann::json CollectivesJson(const CollectiveStragglers& c) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : c.by_rank) {
    ranks.push_back({{"rank", r.rank},
                     {"collectives", r.collectives},
                     {"matched", r.matched},
                     {"last_arrivals", r.last_arrivals},
                     {"last_share", Round9(r.last_share)},
                     {"mean_lateness_s", Round9(r.mean_lateness_s)},
                     {"collective_s", Round9(r.collective_s)},
                     {"step_s", Round9(r.step_s)},
                     {"collective_share", Round9(r.collective_share)},
                     {"exposed_comm_share", Round9(r.exposed_comm_share)},
                     {"straggler", r.straggler}});
  }
  return {{"visible", c.visible},
          {"groups", c.groups},
          {"ranks", c.ranks},
          {"straggler_share", Round9(c.straggler_share)},
          {"rule", fmt::format("straggler: last at >= min({:g}, 2 / ranks) of its collective groups, with >= {} groups "
                               "and >= 2 ranks",
                               kStragglerMaxShare, kStragglerMinGroups)},
          {"by_rank", ranks},
          {"from", ProvenanceJson(c.from)}};
}

nlohmann::json WorkerSamplesJson(const std::vector<WorkerSamples>& list) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& w : list) out.push_back({{"rank", w.rank}, {"worker", w.worker}, {"samples", w.samples}});
  return out;
}

nlohmann::json SamplesPerWorkerJson(const SamplesPerWorker& s) {
  return {{"visible", s.visible},
          {"dataset", s.dataset},
          {"dataset_from", s.dataset_from},
          {"num_workers", s.num_workers},
          {"workers", WorkerSamplesJson(s.workers)},
          {"idle", WorkerSamplesJson(s.idle)},
          {"max_over_min", Round9(s.max_over_min)},
          {"from", ProvenanceJson(s.from)}};
}

nlohmann::json StorageJson(const StorageThroughput& s) {
  nlohmann::json ceiling = nullptr;
  if (s.has_ceiling) {
    ceiling = {{"file", s.ceiling.file},
               {"pattern", s.ceiling.pattern},
               {"pattern_why", s.ceiling.pattern_why},
               {"peak_bytes_per_s", Round9(s.ceiling.peak_bytes_per_s)},
               {"stream_bytes_per_s", Round9(s.ceiling.stream_bytes_per_s)},
               {"latency_s", Round9(s.ceiling.latency_s)}};
  }
  return {{"visible", s.visible},
          {"samples", s.samples},
          {"read_bytes", Round9(s.read_bytes)},
          {"read_s", Round9(s.read_s)},
          {"delivered_bytes_per_s", Round9(s.delivered_bytes_per_s)},
          {"per_read_bytes_per_s", Round9(s.per_read_bytes_per_s)},
          {"mean_reads_in_flight", Round9(s.mean_reads_in_flight)},
          {"device_read_bytes", OrNull(s.device_read_bytes)},
          {"device_bytes_per_s", OrNull(s.device_bytes_per_s)},
          {"ceiling", ceiling},
          {"ceiling_share", s.has_ceiling ? nlohmann::json(Round9(s.ceiling_share)) : nlohmann::json(nullptr)},
          {"near_ceiling", s.near_ceiling},
          {"near_ceiling_from_share", kNearCeilingShare},
          {"from", ProvenanceJson(s.from)}};
}

nlohmann::json PageFaultsJson(const PageFaultObservation& p) {
  nlohmann::json j = p.fit.ToJson();
  j["visible"] = p.visible;
  j["worker_faults_per_sample"] = OrNull(p.worker_faults_per_sample);
  j["inline_faults_per_sample"] = OrNull(p.inline_faults_per_sample);
  j["worth_naming"] = p.worth_naming;
  j["worth_naming_from_share"] = models::kChurnShareWorthNaming;
  j["fix_to_try"] = p.worth_naming ? nlohmann::json(models::kMallocChurnFix) : nlohmann::json(nullptr);
  const FaultConcentration& w = p.where;
  j["concentration"] = {{"top_tenth_share", OrNull(w.top_tenth_share)},
                        {"lifetimes", w.lifetimes},
                        {"lifetimes_from_samples", kConcentrationMinSamples},
                        {"lifetime_min_faults_per_sample", OrNull(w.lifetime_min_faults_per_sample)},
                        {"lifetime_max_faults_per_sample", OrNull(w.lifetime_max_faults_per_sample)},
                        {"larger_than_largest_ratio", kLargerThanLargest},
                        {"larger_samples_share", OrNull(w.larger_samples_share)},
                        {"larger_faults_share", OrNull(w.larger_faults_share)}};
  j["from"] = ProvenanceJson(p.from);
  return j;
}

// Where the named churn falls, for the finding's line: "" when nothing was measurable.
std::string ConcentrationText(const FaultConcentration& w) {
  std::string text;
  if (w.top_tenth_share >= 0) text += fmt::format("; {} of the faults in the tenth of samples with the most", Pct(w.top_tenth_share));
  if (w.larger_faults_share >= 0) {
    text += fmt::format(", {} in the {} of samples decoding more than half the largest image before them in "
                        "their process (glibc's thresholds follow the largest block)",
                        Pct(w.larger_faults_share), Pct(w.larger_samples_share));
  }
  if (w.lifetimes >= 2) {
    text += fmt::format("; {:.0f}-{:.0f} per sample among its {} process lifetimes, so another worker count can "
                        "churn differently",
                        w.lifetime_min_faults_per_sample, w.lifetime_max_faults_per_sample, w.lifetimes);
  }
  return text;
}

}  // namespace

nlohmann::json StageJson(const StageDistribution& s) {
  return {{"stage", s.stage},         {"count", s.count},          {"mean_s", Round9(s.mean_s)},
          {"p50_s", Round9(s.p50_s)}, {"p95_s", Round9(s.p95_s)}, {"p99_s", Round9(s.p99_s)},
          {"max_s", Round9(s.max_s)}, {"record", s.record}};
}

nlohmann::json ProvenanceJson(const Provenance& p) {
  nlohmann::json records = nlohmann::json::object();
  for (const auto& [type, n] : p.records) records[type] = n;
  return {{"kind", p.kind}, {"records", records}, {"inputs", p.inputs}};
}

void AddObservedFindingsJson(const Observations& o, nlohmann::json* observed) {
  nlohmann::json media = nlohmann::json::array();
  for (const auto& m : o.media) {
    nlohmann::json stages = nlohmann::json::array();
    for (const auto& s : m.stages) stages.push_back(StageJson(s));
    media.push_back({{"format", m.format}, {"samples", m.samples}, {"read_bytes", Round9(m.read_bytes)}, {"stages", stages}});
  }
  nlohmann::json& j = *observed;
  j["traces"] = o.trace_paths;
  j["media"] = media;
  j["cpu"] = CpuJson(o.cpu);
  j["worker_memory"] = WorkerMemoryJson(o.worker_memory);
  j["host_memory_headroom"] = HeadroomJson(o.headroom);
  j["epoch_stalls"] = EpochStallsJson(o.epoch_stalls);
  j["head_of_line"] = HeadOfLineJson(o.head_of_line);
  j["collectives"] = CollectivesJson(o.collectives);
  j["samples_per_worker"] = SamplesPerWorkerJson(o.samples_per_worker);
  j["storage"] = StorageJson(o.storage);
  j["page_faults"] = PageFaultsJson(o.page_faults);
  j["findings"] = ObservedFindingLines(o);
}

std::vector<std::string> ObservedFindingLines(const Observations& o) {
  std::vector<std::string> lines;
  for (const auto& m : o.media) {
    std::string parts;
    for (const auto& s : m.stages) {
      parts += fmt::format("{}{} p50 {:.3f} / p99 {:.3f} ms", parts.empty() ? "" : ", ", s.stage, 1e3 * s.p50_s,
                           1e3 * s.p99_s);
    }
    lines.push_back(fmt::format("media {}: {} samples, {}{}", m.format, m.samples, parts,
                                FromText({"measured", {{"sample", m.samples}}, {}})));
  }
  const CpuObservation& c = o.cpu;
  if (c.mean_worker_busy_fraction >= 0) {
    std::string each;
    for (const auto& p : c.processes) {
      if (p.worker < 0) continue;
      each += fmt::format("{}{}w{} {}", each.empty() ? "" : ", ", o.ranks > 1 ? fmt::format("r{}.", p.rank) : "",
                          p.worker, Pct(p.busy_fraction));
    }
    lines.push_back(fmt::format("worker CPU: loader workers busy {} of their sampled time on average ({}){}",
                                Pct(c.mean_worker_busy_fraction), each, FromText(c.worker_from)));
  }
  if (c.host_visible) {
    lines.push_back(c.host_cpus > 0
                        ? fmt::format("host CPU: {} busy ({:.2f} of {} CPUs, {} over {:.2f} s){}",
                                      Pct(c.host_busy_fraction), c.host_busy_cpus, c.host_cpus, c.host_cpus_source,
                                      c.host_window_s, FromText(c.host_from))
                        : fmt::format("host CPU: {:.2f} CPUs busy over {:.2f} s{}", c.host_busy_cpus, c.host_window_s,
                                      FromText(c.host_from)));
  }
  const PageFaultObservation& pf = o.page_faults;
  if (pf.visible && pf.fit.measured) {
    lines.push_back(fmt::format(
        "page faults: {:.0f} per sample at {:.1f} us each, {} of the samples' CPU (R^2 {:.2f}){}{}", pf.fit.faults_per_sample,
        1e6 * pf.fit.fault_cost_s, Pct(pf.fit.cpu_share), pf.fit.r2,
        pf.worth_naming ? fmt::format(": allocator churn (a fresh worker's malloc returns and re-faults each sample's "
                                      "buffers){}; A/B the loader with {} in its environment",
                                      ConcentrationText(pf.where), models::kMallocChurnFix)
                        : std::string(),
        FromText(pf.from)));
  } else if (pf.visible) {
    lines.push_back(fmt::format("page faults: {:.0f} per sample; their cost is not measured ({}){}",
                                pf.fit.faults_per_sample, pf.fit.note, FromText(pf.from)));
  }
  const WorkerMemoryObservation& m = o.worker_memory;
  for (const auto& p : m.processes) {
    if (p.growth != "leak" && p.growth != "copy_on_read") continue;
    const GrowthFit& f = p.growth == "leak" ? p.rss : p.pss;
    std::string projected;
    if (p.projected_epoch_end_pss_bytes >= 0) projected += ", PSS at the epoch's end " + Mib(p.projected_epoch_end_pss_bytes);
    if (p.projected_run_end_pss_bytes >= 0) projected += ", at the run's end " + Mib(p.projected_run_end_pss_bytes);
    lines.push_back(fmt::format("worker memory: rank {} {} (pid {}) {}: {} grows {}/s over {:.1f} s ({} -> {}, r2 "
                                "{:.2f}){}{}",
                                p.rank, p.worker < 0 ? "main process" : fmt::format("worker {}", p.worker), p.pid,
                                p.growth == "leak" ? "looks like a leak" : "shows copy-on-read growth",
                                p.growth == "leak" ? "RSS" : "PSS", Mib(f.slope_bytes_per_s), p.span_s,
                                Mib(f.first_bytes), Mib(f.last_bytes), f.r2, projected, FromText(m.from)));
  }
  if (!m.processes.empty() && m.leaking + m.copy_on_read == 0) {
    lines.push_back(fmt::format("worker memory: no process grows clearly ({} processes){}", m.processes.size(),
                                FromText(m.from)));
  }
  const HostHeadroom& h = o.headroom;
  if (h.visible) {
    std::string projected;
    if (h.projected_run_end_peak_bytes >= 0) {
      projected = fmt::format("; with the workers' projected growth {} at the run's end{}",
                              Mib(h.projected_run_end_peak_bytes),
                              h.projected_exceeds_total ? ": MORE THAN THE TOTAL" : "");
    }
    lines.push_back(fmt::format("host memory: peak {} ({}) of {} ({}): headroom {} ({}){}{}{}", Mib(h.peak_bytes),
                                h.peak_from, Mib(h.total_bytes), h.total_from, Mib(h.headroom_bytes),
                                Pct(h.headroom_fraction), h.low ? ", LOW" : "", projected, FromText(h.from)));
  }
  const EpochStalls& e = o.epoch_stalls;
  if (e.visible) {
    lines.push_back(fmt::format("epoch boundaries: {} of {} later epochs stall; their first {} batch(es) waited {:.3f} s "
                                "more than the steady median of {:.3f} ms ({} of the wall time){}",
                                e.stalls, e.epochs.size(), e.boundary_batches, e.excess_s,
                                1e3 * e.steady_median_wait_s, Pct(e.share_of_wall), FromText(e.from)));
  }
  const HeadOfLine& hol = o.head_of_line;
  if (hol.visible) {
    lines.push_back(fmt::format("head-of-line: {} of the data wait ({:.3f} of {:.3f} s over {} batches) was spent "
                                "behind the slowest sample of a batch (slowest / median sample {:.2f}x on average){}",
                                Pct(hol.share), hol.behind_slowest_s, hol.data_wait_s, hol.batches,
                                hol.mean_slowest_over_median, FromText(hol.from)));
  }
  const CollectiveStragglers& cs = o.collectives;
  if (cs.visible) {
    for (const auto& r : cs.by_rank) {
      lines.push_back(fmt::format("collectives: rank {} arrived last at {} of {} collectives ({}), {:.3f} ms late on "
                                  "average; collectives {} of its step time (exposed {}){}{}",
                                  r.rank, r.last_arrivals, r.matched, Pct(r.last_share), 1e3 * r.mean_lateness_s,
                                  Pct(r.collective_share), Pct(r.exposed_comm_share),
                                  r.straggler ? ": STRAGGLER" : "", FromText(cs.from)));
    }
  }
  const SamplesPerWorker& sw = o.samples_per_worker;
  if (sw.visible) {
    std::string each;
    for (const auto& w : sw.workers) {
      each += fmt::format("{}{}w{} {}", each.empty() ? "" : ", ", o.ranks > 1 ? fmt::format("r{}.", w.rank) : "",
                          w.worker, w.samples);
    }
    std::string idle;
    if (!sw.idle.empty()) {
      idle = fmt::format("; {} worker(s) got nothing{}", sw.idle.size(),
                         sw.dataset == "iterable" ? " (an IterableDataset with fewer shards than workers?)" : "");
    }
    lines.push_back(fmt::format("samples per worker ({} dataset, {}): {}{}{}", sw.dataset, sw.dataset_from, each, idle,
                                FromText(sw.from)));
  }
  const StorageThroughput& st = o.storage;
  if (st.visible) {
    std::string ceiling;
    if (st.has_ceiling) {
      ceiling = fmt::format("; {} of the probe's {} ceiling of {}/s{}", Pct(st.ceiling_share), st.ceiling.pattern,
                            Mib(st.ceiling.peak_bytes_per_s), st.near_ceiling ? ": NEAR THE CEILING" : "");
    }
    lines.push_back(fmt::format("storage: samples read {}/s over the run ({}/s per read, {:.2f} reads in flight on "
                                "average){}{}",
                                Mib(st.delivered_bytes_per_s), Mib(st.per_read_bytes_per_s), st.mean_reads_in_flight,
                                ceiling, FromText(st.from)));
  }
  return lines;
}

}  // namespace simreplay::advise
