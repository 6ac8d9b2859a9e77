#include "calibrate/stages.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "calibrate/busy_cores.h"
#include "calibrate/calibrator.h"
#include "calibrate/cpu_probe.h"
#include "common/quantile.h"
#include "models/page_fault_churn.h"
#include "replay/lifetime_warmup.h"
#include "replay/manifest.h"

namespace simreplay::calibrate {

using replay::ManifestBool;

using replay::ManifestInt;

namespace {

// Worker time outside the recorded stages, per batch, as a mean (sums are what throughput depends on):
//  - inside a batch: span (first sample start to t_ready) minus the recorded stages and collate;
//  - before a batch: its first sample start minus the later of (the worker's previous t_ready, the
//    moment its task was sent). The task for batch j is sent when batch j - P x W is handed to the
//    loop (PyTorch's _try_put_index), so waiting for a task is not counted, only receipt and
//    hand-off. Batches primed at iter() (j < P x W) are skipped.
void WorkerOverhead(const TraceData& t, double* overhead_per_batch_s, double* cpu_work_per_batch_s) {
  struct Agg {
    int64_t first_start = INT64_MAX;
    int64_t stage_ns = 0;
    int64_t cpu_ns = 0;
  };
  using Key = std::tuple<int64_t, int64_t, int64_t>;  // (rank, epoch, batch)
  std::map<Key, Agg> by_batch;
  for (const auto& s : t.samples) {
    Agg& a = by_batch[{s.rank, s.epoch, s.batch}];
    a.first_start = std::min(a.first_start, s.t_start_ns);
    a.stage_ns += s.read_ns + s.decode_ns + s.augment_ns;
    a.cpu_ns += s.decode_ns + s.augment_ns;
  }
  std::map<Key, int64_t> delivered;
  for (const auto& b : t.batches) {
    if (b.t_next_start_ns >= 0) delivered[{b.rank, b.epoch, b.batch}] = b.t_next_start_ns + b.wait_ns;
  }
  const int64_t window = static_cast<int64_t>(ManifestInt(t.manifest, "loader", "prefetch_factor", 2)) *
                         ManifestInt(t.manifest, "loader", "num_workers", 0);
  double inside = 0, before = 0, work = 0;
  int64_t n_inside = 0, n_before = 0;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<std::pair<int64_t, const replay::BatchRecord*>>>
      per_worker;
  for (const auto& b : t.batches) {
    auto it = by_batch.find({b.rank, b.epoch, b.batch});
    if (it == by_batch.end() || b.t_ready_ns <= 0) continue;
    const Agg& a = it->second;
    inside += std::max<int64_t>(0, b.t_ready_ns - a.first_start - a.stage_ns - b.collate_ns) * kNs;
    work += (a.cpu_ns + b.collate_ns) * kNs;
    ++n_inside;
    if (b.worker >= 0) per_worker[{b.rank, b.epoch, b.worker}].push_back({a.first_start, &b});
  }
  for (auto& [key, list] : per_worker) {
    std::sort(list.begin(), list.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (size_t i = 1; i < list.size(); ++i) {
      const auto* b = list[i].second;
      if (window <= 0 || b->batch < window) continue;
      auto sent = delivered.find({b->rank, b->epoch, b->batch - window});
      if (sent == delivered.end()) continue;
      const int64_t free_at = std::max(list[i - 1].second->t_ready_ns, sent->second);
      before += std::max<int64_t>(0, list[i].first - free_at) * kNs;
      ++n_before;
    }
  }
  *overhead_per_batch_s = (n_inside > 0 ? inside / n_inside : 0) + (n_before > 0 ? before / n_before : 0);
  *cpu_work_per_batch_s = n_inside > 0 ? work / n_inside : 0;
}

// Worker samples with cpu_ns (the ones the busy-core and contention fits read), and their dataset indices;
// those in `warmup_window` (a lifetime's first samples) are marked so.
std::vector<BusyCoreSample> WorkerCpuSamples(const TraceData& t, std::vector<int64_t>* indices = nullptr,
                                             const std::set<const replay::SampleRecord*>* warmup_window = nullptr) {
  std::vector<BusyCoreSample> samples;
  for (const auto& s : t.samples) {
    if (s.cpu_ns < 0 || s.worker < 0) continue;
    samples.push_back({s.t_start_ns * kNs, (s.read_ns + s.decode_ns + s.augment_ns) * kNs, s.cpu_ns * kNs,
                       static_cast<double>(s.width * s.height * std::max<int64_t>(1, s.frames)), s.format,
                       warmup_window != nullptr && warmup_window->count(&s) > 0});
    if (indices != nullptr) indices->push_back(s.index);
  }
  return samples;
}

// A worker's first samples after its fork: their excess is the warm-up's (FitWorkerWarmup), measured
// over this window, and the simulator spreads it over as many samples of every predicted start.
constexpr int kWarmupSamples = 30;

// A trace's samples as the lifetime measurement reads them.
replay::TraceSamples LifetimeSamplesOf(const TraceData& t) {
  replay::TraceSamples ts;
  ts.persistent_workers = ManifestBool(t.manifest, "loader", "persistent_workers");
  for (const auto& s : t.samples) ts.samples.push_back(&s);
  return ts;
}

// The shared-core slowdown from one trace's worker samples, those in a lifetime's warm-up window left
// out of the fit (calibrate/busy_cores.h says why).
BusyCoreEstimate TraceBusyCores(const TraceData& t) {
  std::set<const replay::SampleRecord*> in_window;
  for (const auto& l : replay::MeasureLifetimeWarmup({LifetimeSamplesOf(t)}, kWarmupSamples).lifetimes) {
    const size_t window = std::min(l.samples.size(), static_cast<size_t>(kWarmupSamples));
    in_window.insert(l.samples.begin(), l.samples.begin() + static_cast<std::ptrdiff_t>(window));
  }
  return EstimateBusyCoreSlowdown(WorkerCpuSamples(t, nullptr, &in_window),
                                  ManifestInt(t.manifest, "hardware", "cores", 0));
}

// The contention curve the model holds: from a CPU probe (measured), else jointly from traces at
// different concurrency (thread CPU time of the same samples), else none (the single-trace busy-core
// estimate, as before probes existed).
struct ContentionCurves {
  std::string source = "assumed";  // probe | traces | assumed
  int cores = 0;
  std::optional<ContentionCurveFit> throughput;  // f: the simulator's capacity function
  std::optional<ContentionCurveFit> thread_cpu;  // g: what a trace's cpu_ns contains
  nlohmann::json report = nlohmann::json::object();
};

// Per trace: the cpu-weighted mean concurrency its samples ran at, and the mean cpu over `common`
// dataset indices (per index mean first, so traces that loaded an index more often do not weigh it more).
struct TraceCpuPoint {
  double concurrency = 1;
  std::map<int64_t, std::pair<double, int>> cpu_by_index;  // index -> (sum cpu_s, count)
  int64_t samples = 0;
};

TraceCpuPoint CpuPointOf(const TraceData& t) {
  TraceCpuPoint p;
  std::vector<int64_t> indices;
  const std::vector<BusyCoreSample> samples = WorkerCpuSamples(t, &indices);
  const std::vector<double> n = SampleConcurrency(samples);
  double weighted = 0, cpu = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    weighted += n[i] * samples[i].cpu_s;
    cpu += samples[i].cpu_s;
    auto& slot = p.cpu_by_index[indices[i]];
    slot.first += samples[i].cpu_s;
    slot.second += 1;
  }
  p.concurrency = cpu > 0 ? weighted / cpu : 1;
  p.samples = static_cast<int64_t>(samples.size());
  return p;
}

// The primary trace's page-fault churn: each sample's CPU regressed on its minor faults.
models::PageFaultFit PrimaryFaultFit(const CalibrationInput& in) {
  std::vector<models::FaultSample> samples;
  for (const auto& s : in.primary().samples) {
    if (s.cpu_ns >= 0 && s.minflt >= 0) samples.push_back({s.cpu_ns * kNs, static_cast<double>(s.minflt)});
  }
  return models::FitPageFaultChurn(samples);
}

Result<ContentionCurves> FitCurves(const CalibrationInput& in, std::vector<std::string>* warnings) {
  ContentionCurves c;
  const int trace_cores = ManifestInt(in.primary().manifest, "hardware", "cores", 0);
  if (in.cpu_probe) {
    const CpuProbe& probe = *in.cpu_probe;
    c.source = "probe";
    c.cores = probe.cores;
    auto f = FitContentionCurve(ThroughputCostPoints(probe), probe.cores);
    if (!f.ok()) return Status::InvalidArgument(probe.file + ": " + f.status().message());
    auto g = FitContentionCurve(ThreadCpuPoints(probe), probe.cores);
    if (!g.ok()) return Status::InvalidArgument(probe.file + ": " + g.status().message());
    // The curves the model holds have each point brought to the trace's page-fault level
    // (ProbeFaultFactors): a fresh worker's allocator falls into one of two regimes at random, so a
    // point's cost measures its regime as much as its concurrency (docs/probe-cpu.md, "Each point at the
    // trace's page-fault level"). The fits of the points as measured are reported beside them.
    const models::PageFaultFit faults = PrimaryFaultFit(in);
    const std::vector<double> factors =
        faults.measured ? ProbeFaultFactors(probe, faults.no_fault_cpu_s, faults.fault_cost_s, faults.faults_per_sample)
                        : std::vector<double>{};
    c.throughput = *f;
    c.thread_cpu = *g;
    nlohmann::json fault_level = {{"normalized", false}};
    if (factors.empty()) {
      fault_level["note"] = "the points as measured: " + (faults.measured ? "the probe counted no page faults" : faults.note);
    } else {
      auto fn = FitContentionCurve(ThroughputCostPoints(probe, factors), probe.cores);
      if (!fn.ok()) return Status::InvalidArgument(probe.file + ": " + fn.status().message());
      auto gn = FitContentionCurve(ThreadCpuPoints(probe, factors), probe.cores);
      if (!gn.ok()) return Status::InvalidArgument(probe.file + ": " + gn.status().message());
      c.throughput = *fn;
      c.thread_cpu = *gn;
      fault_level = {{"normalized", true},
                     {"reference_faults_per_sample", faults.faults_per_sample},
                     {"no_fault_cpu_s", faults.no_fault_cpu_s},
                     {"fault_cost_s", faults.fault_cost_s},
                     {"as_measured_throughput_fit", f->ToJson()},
                     {"as_measured_thread_cpu_fit", g->ToJson()},
                     {"note",
                      "the model's curves are fitted with each point's cost x (no_fault_cpu_s + fault_cost_s x "
                      "reference) / (no_fault_cpu_s + fault_cost_s x its own faults per sample), the primary "
                      "trace's page-fault fit; the fits of the points as measured are reported here"}};
    }
    const double foreign = ProbeForeignBusyCores(probe);
    if (foreign > 0.25) {
      warnings->push_back(
          fmt::format("{}: about {:.1f} cores were busy with other processes while the probe ran: "
                      "the measured curve includes their contention (probe a quiet machine, or "
                      "one as loaded as the one you predict)",
                      probe.file, foreign));
    }
    if (trace_cores > 0 && trace_cores != probe.cores) {
      warnings->push_back(
          fmt::format("{}: probed on {} cores, the trace {} was captured on {}: the curve is the "
                      "probe host's",
                      probe.file, probe.cores, in.primary().path, trace_cores));
    }
    // Each point against the fits in use, at its own page-fault level.
    nlohmann::json pts = nlohmann::json::array();
    for (size_t i = 0; i < probe.points.size(); ++i) {
      const auto& p = probe.points[i];
      const double factor = factors.empty() ? 1.0 : factors[i];
      const double cost =
          std::min<double>(p.workers, std::max(1e-3, probe.cores - std::clamp(p.main_cpu_s / p.wall_s, 0.0, 1.0))) /
          p.throughput_samples_per_s;
      const double fitted_thr = p.throughput_samples_per_s * cost * factor /
                                (c.throughput->base_cost * c.throughput->Factor(p.workers, probe.cores));
      pts.push_back({{"workers", p.workers},
                     {"round", p.round},
                     {"throughput_samples_per_s", p.throughput_samples_per_s},
                     {"fitted_throughput_samples_per_s", fitted_thr},
                     {"error_pct", 100 * (fitted_thr - p.throughput_samples_per_s) / p.throughput_samples_per_s},
                     {"getitem_cpu_s", p.getitem_cpu_s},
                     {"fitted_getitem_cpu_s",
                      c.thread_cpu->base_cost * c.thread_cpu->Factor(p.workers, probe.cores) / factor},
                     {"minflt_per_sample", p.minflt_per_sample},
                     {"fault_level_factor", factor},
                     {"loadavg_1m", p.loadavg_1m}});
    }
    c.report = {{"source", "probe"},
                {"file", probe.file},
                {"cores", probe.cores},
                {"foreign_busy_cores", foreign},
                {"fault_level", fault_level},
                {"throughput_fit", c.throughput->ToJson()},
                {"thread_cpu_fit", c.thread_cpu->ToJson()},
                {"points", pts}};
    return c;
  }
  // Joint fit over traces of the same pipeline at different worker counts.
  std::vector<TraceCpuPoint> points;
  for (const auto& t : in.traces) points.push_back(CpuPointOf(t));
  std::map<int64_t, int> seen;  // index -> traces that loaded it
  int usable = 0;
  for (const auto& p : points) {
    if (p.samples < 20) continue;
    ++usable;
    for (const auto& [index, slot] : p.cpu_by_index) ++seen[index];
  }
  double lo = 1e300, hi = 0;
  for (const auto& p : points) {
    if (p.samples < 20) continue;
    lo = std::min(lo, p.concurrency);
    hi = std::max(hi, p.concurrency);
  }
  if (usable < 2 || hi - lo < 0.25 || trace_cores <= 0) {
    c.report = {{"source", "assumed"},
                {"note",
                 "no CPU probe and no traces at different concurrency: the contention curve is assumed "
                 "(shared-core slowdown from the primary trace when significant, no oversubscription "
                 "overhead); measure it with python3 -m simreplay_capture.probe_cpu"}};
    return c;
  }
  std::vector<CurvePoint> curve;
  nlohmann::json per_trace = nlohmann::json::array();
  for (size_t ti = 0; ti < points.size(); ++ti) {
    const auto& p = points[ti];
    if (p.samples < 20) continue;
    double sum = 0;
    int n = 0;
    for (const auto& [index, slot] : p.cpu_by_index) {
      if (seen[index] != usable) continue;
      sum += slot.first / slot.second;
      ++n;
    }
    if (n < 10) continue;
    curve.push_back({p.concurrency, sum / n});
    per_trace.push_back({{"trace", in.traces[ti].path},
                         {"num_workers", ManifestInt(in.traces[ti].manifest, "loader", "num_workers", -1)},
                         {"mean_concurrency", p.concurrency},
                         {"common_indices", n},
                         {"mean_cpu_s", sum / n}});
  }
  auto g = FitContentionCurve(curve, trace_cores);
  if (!g.ok()) {
    c.report = {{"source", "assumed"},
                {"note", "joint fit over traces failed: " + g.status().message()},
                {"traces", per_trace}};
    return c;
  }
  c.source = "traces";
  c.cores = trace_cores;
  c.thread_cpu = *g;
  c.throughput = *g;  // the traces show thread CPU only: the simulator's curve is assumed to be the same
  for (auto& row : per_trace) {
    row["fitted_cpu_s"] = g->base_cost * g->Factor(row["mean_concurrency"].get<double>(), trace_cores);
  }
  c.report = {{"source", "traces"},
              {"cores", trace_cores},
              {"thread_cpu_fit", g->ToJson()},
              {"traces", per_trace},
              {"note",
               "fitted jointly to the thread CPU time of the same samples in every trace; the throughput "
               "curve is assumed equal to it (CPU lost outside thread time, e.g. to context switches, is "
               "not seen: a CPU probe measures it)"}};
  return c;
}

// How much the cpu_ns of a trace's samples is inflated by the contention they ran under: sum(cpu) /
// sum(cpu / g(n_i + background)), with n_i the concurrency each sample saw among the trace's own workers
// and `background` the runnable threads of other processes beside them (ContentionEstimate::
// background_threads: another rank's loader on the same cores, other load). 1 without cpu_ns.
double CpuInflation(const TraceData& t, const ContentionCurveFit& g, int cores, double background) {
  const std::vector<BusyCoreSample> samples = WorkerCpuSamples(t);
  const std::vector<double> n = SampleConcurrency(samples);
  double cpu = 0, intrinsic = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    cpu += samples[i].cpu_s;
    intrinsic += samples[i].cpu_s / g.Factor(n[i] + background, cores);
  }
  return intrinsic > 0 ? cpu / intrinsic : 1.0;
}

ContentionEstimate TraceContention(const TraceData& t) {
  ContentionInput in;
  for (const auto& s : t.samples) {
    in.samples.push_back({s.read_ns * kNs, (s.decode_ns + s.augment_ns) * kNs, s.cpu_ns >= 0 ? s.cpu_ns * kNs : -1});
  }
  for (const auto& b : t.batches) in.collate_s += b.collate_ns * kNs;
  WorkerOverhead(t, &in.worker_overhead_per_batch_s, &in.cpu_work_per_batch_s);
  in.workers = ManifestInt(t.manifest, "loader", "num_workers", 0);
  in.cores = ManifestInt(t.manifest, "hardware", "cores", 0);
  in.run_wall_s = WindowOf(t).wall_s();
  std::map<int64_t, std::pair<const replay::WorkerRecord*, const replay::WorkerRecord*>> by_pid;
  for (const auto& w : t.workers) {
    if (w.worker < 0) continue;
    auto& [first, last] = by_pid[w.pid];
    if (first == nullptr || w.t_ns < first->t_ns) first = &w;
    if (last == nullptr || w.t_ns > last->t_ns) last = &w;
  }
  bool main_thread_known = true;
  for (const auto& [pid, fl] : by_pid) {
    const auto& [first, last] = fl;
    if (last->t_ns <= first->t_ns) continue;
    in.worker_cpu_utilization.push_back(static_cast<double>(last->cpu_ns - first->cpu_ns) /
                                        static_cast<double>(last->t_ns - first->t_ns));
    // Stage CPU of this worker inside the window (a worker id is reused by restarted workers, but
    // their windows do not overlap).
    double stage_cpu = 0, out_bytes = 0;
    bool all_have_cpu = true;
    int64_t window_samples = 0;
    for (const auto& s : t.samples) {
      if (s.worker != first->worker || s.t_start_ns < first->t_ns || s.t_start_ns > last->t_ns) continue;
      if (s.cpu_ns < 0) all_have_cpu = false;
      stage_cpu += s.cpu_ns * kNs;
      out_bytes += static_cast<double>(s.out_bytes);
      ++window_samples;
    }
    for (const auto& b : t.batches) {
      if (b.worker == first->worker && b.t_ready_ns >= first->t_ns && b.t_ready_ns <= last->t_ns)
        stage_cpu += b.collate_ns * kNs;
    }
    if (!all_have_cpu || stage_cpu <= 0) continue;
    in.worker_process_cpu_s += (last->cpu_ns - first->cpu_ns) * kNs;
    in.worker_stage_cpu_s += stage_cpu;
    in.worker_window_samples += window_samples;
    main_thread_known = main_thread_known && first->main_thread_cpu_ns >= 0 && last->main_thread_cpu_ns >= 0;
    if (main_thread_known) in.worker_main_thread_cpu_s += (last->main_thread_cpu_ns - first->main_thread_cpu_ns) * kNs;
    in.worker_window_out_bytes += out_bytes;
  }
  if (!main_thread_known) in.worker_main_thread_cpu_s = in.worker_window_out_bytes = 0;  // no split (method 6)
  return EstimateContention(in);
}

// Whether trace `t` is another repetition of the primary's configuration: the same loader settings and
// storage format (the dataset and pipeline are the user's to keep equal, as for any set of traces).
bool SameConfiguration(const TraceData& a, const TraceData& b) {
  for (const char* key : {"num_workers", "batch_size", "prefetch_factor"}) {
    if (ManifestInt(a.manifest, "loader", key, -1) != ManifestInt(b.manifest, "loader", key, -1)) return false;
  }
  for (const char* key : {"persistent_workers", "pin_memory"}) {
    if (ManifestBool(a.manifest, "loader", key) != ManifestBool(b.manifest, "loader", key)) return false;
  }
  auto format = [](const TraceData& t) {
    const auto& data = t.manifest.value("data", nlohmann::json::object());
    return data.is_object() ? data.value("format", std::string()) : std::string();
  };
  return format(a) == format(b);
}

// Repetitions of the primary's configuration among the traces: the replayed samples stay the primary's,
// at the mean per-sample cost level of all repetitions (recorded decode+augment x each trace's own
// scale), so that the host's speed during one repetition does not set the model's (a shared VM drifts
// by 10-20% within minutes). Returns the factor on worker_cost_scale (1 with one repetition).
double RepetitionsCostRatio(const CalibrationInput& in, const CalibrationDraft& d, bool as_captured,
                            nlohmann::json* cpu_quality) {
  const TraceData& primary = in.primary();
  auto level = [&](size_t i) {
    double sum = 0;
    int64_t n = 0;
    const bool with_workers = ManifestInt(in.traces[i].manifest, "loader", "num_workers", 0) > 0;
    for (const auto& s : in.traces[i].samples) {
      if (s.worker < 0 && with_workers) continue;  // the loader's samples only, not inline ones
      sum += (s.decode_ns + s.augment_ns) * kNs;
      ++n;
    }
    const auto& c = d.contention[i];
    return n > 0 ? sum / static_cast<double>(n) * (as_captured ? c.as_captured_scale : c.intrinsic_scale) : 0.0;
  };
  const double primary_level = level(0);
  std::vector<double> levels;
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < in.traces.size(); ++i) {
    if (i > 0 && !SameConfiguration(primary, in.traces[i])) continue;
    const double l = level(i);
    if (l <= 0) continue;
    levels.push_back(l);
    rows.push_back({{"trace", in.traces[i].path}, {"cost_per_sample_s", l}});
  }
  if (levels.size() < 2 || primary_level <= 0) return 1.0;
  const double ratio = MeanOf(levels) / primary_level;
  (*cpu_quality)["repetitions"] = {
      {"traces", rows},
      {"worker_cost_scale_factor", ratio},
      {"note",
       "repetitions of the primary trace's configuration: its samples replay at the mean cost level of all of them"}};
  return ratio;
}

// Contention per trace (intrinsic and as-captured scales, busy-core slowdown) and the model's cpu scale,
// overhead factor and slowdown from the primary trace.
Status FitContentionAndScale(const CalibrationInput& in, CalibrationDraft* d, nlohmann::json* cpu_quality) {
  nlohmann::json& cpu_q = *cpu_quality;
  const CalibrateOptions& options = *in.options;
  const std::vector<TraceData>& traces = in.traces;
  const TraceData& primary = in.primary();
  const std::string primary_src = "trace " + primary.path;
  models::ModelParams& model = d->model;
  std::vector<std::string>& warnings = d->warnings;
  nlohmann::json per_trace = nlohmann::json::array();
  std::vector<ContentionEstimate>& contention = d->contention;
  std::vector<BusyCoreEstimate>& busy_cores = d->busy_cores;  // per trace; the primary's slowdown is the model's
  auto curves = FitCurves(in, &warnings);
  if (!curves.ok()) return curves.status();
  for (const auto& t : traces) {
    contention.push_back(TraceContention(t));
    // Shared-core slowdown: the cpu_ns of samples that ran beside others already contain it, so it is
    // divided out of the scale and the simulator applies it for the configuration it predicts.
    BusyCoreEstimate busy = TraceBusyCores(t);
    if (options.busy_core_slowdown >= 0) {
      busy.slowdown = options.busy_core_slowdown;
      busy.measured = false;
      busy.note = "given on the command line (--busy-core-slowdown)";
    }
    const double slowdown = busy_cores.empty() ? busy.slowdown : busy_cores.front().slowdown;
    double inflation = 1.0 + slowdown * busy.mean_overlap;
    // The intrinsic cost is a dedicated machine's, so its scale also loses the slowdown the other
    // processes' runnable threads caused; the as-captured one keeps that load, as it keeps their share.
    double intrinsic_inflation = inflation;
    if (curves->thread_cpu && options.busy_core_slowdown < 0) {
      inflation = CpuInflation(t, *curves->thread_cpu, curves->cores, 0);
      intrinsic_inflation = CpuInflation(t, *curves->thread_cpu, curves->cores, contention.back().background_threads);
    }
    const bool as_captured = options.cpu_scale == "as-captured";
    contention.back().intrinsic_scale /= intrinsic_inflation;
    contention.back().as_captured_scale /= inflation;
    // process CPU ran under the same slowdown
    contention.back().overhead_per_sample_s /= as_captured ? inflation : intrinsic_inflation;
    contention.back().send_s_per_byte /= as_captured ? inflation : intrinsic_inflation;  // reported alike
    contention.back().send_per_sample_s /= as_captured ? inflation : intrinsic_inflation;
    d->cpu_ns_inflation.push_back(as_captured ? inflation : intrinsic_inflation);
    busy_cores.push_back(busy);
    nlohmann::json j = contention.back().ToJson();
    j["trace"] = t.path;
    j["busy_cores"] = busy_cores.back().ToJson();
    j["num_workers"] = ManifestInt(t.manifest, "loader", "num_workers", -1);
    j["cores"] = ManifestInt(t.manifest, "hardware", "cores", 0);
    j["cpu_ns_inflation"] = inflation;
    j["cpu_ns_inflation_with_background"] = intrinsic_inflation;
    per_trace.push_back(j);
  }
  cpu_q["contention"] = per_trace;
  cpu_q["contention_curve"] = curves->report;
  const auto& c0 = contention.front();
  // The overhead is per sample (additive), so the scales hold none of it and inline loading needs no
  // factor to take it out again.
  model.cpu.worker_overhead_factor = 1.0;
  SetProvenance(&model, "cpu.worker_overhead_factor", false,
                "1: the worker overhead is cpu.worker_overhead_per_sample_s (fit_quality.cpu.contention[] "
                "reports the factor)");
  // The part of the overhead that ran off the workers' main threads is the result queue's feeder
  // pickling each batch into shared memory: it runs on a send thread per worker, beside the worker's next
  // batch (docs/modelling.md, "The worker's send thread"), and only the rest stays on the worker's thread.
  const bool send_split = c0.send_s_per_byte > 0;
  model.cpu.worker_overhead_per_sample_s =
      send_split ? std::max(0.0, c0.overhead_per_sample_s - c0.send_per_sample_s) : c0.overhead_per_sample_s;
  SetProvenance(&model, "cpu.worker_overhead_per_sample_s", c0.overhead_method == "none",
                std::string(send_split ? "worker main-thread CPU" : "worker CPU") +
                    " outside the recorded stages per sample (" + c0.overhead_method + "), " + primary_src);
  model.cpu.worker_send_s_per_byte = c0.send_s_per_byte;
  SetProvenance(&model, "cpu.worker_send_s_per_byte", !send_split,
                send_split ? "worker CPU off the main threads per tensor byte of the samples in the worker records' "
                             "windows (the result queue's feeder), " +
                                 primary_src
                           : "0: no worker CPU counted off the main threads (worker records without "
                             "main_thread_cpu_ns, captures before 2026-12-06, or none in the clock ticks): the whole "
                             "overhead is cpu.worker_overhead_per_sample_s");
  model.cpu.busy_core_slowdown = busy_cores.front().slowdown;
  SetProvenance(&model, "cpu.busy_core_slowdown", !busy_cores.front().measured,
                busy_cores.front().note + ", " + primary_src);
  SetProvenance(&model, "cpu.oversubscription_overhead", true,
                "assumed 0: no measured contention curve (simreplay_capture.probe_cpu, --cpu-probe)");
  if (curves->throughput && options.busy_core_slowdown < 0) {
    const ContentionCurveFit& f = *curves->throughput;
    const bool probed = curves->source == "probe";
    const std::string from = probed
                                 ? "CPU probe " + in.cpu_probe->file
                                 : fmt::format("thread CPU time of {} traces at different concurrency", traces.size());
    model.cpu.busy_core_slowdown = f.slowdown;
    SetProvenance(&model, "cpu.busy_core_slowdown", false,
                  fmt::format("contention curve fitted to the {} (rms {:.2f}%)", from, 100 * f.rms_log_error));
    model.cpu.oversubscription_overhead = f.overhead;
    // Measured even when 0: the curve was fitted and did not show an overhead.
    SetProvenance(&model, "cpu.oversubscription_overhead", false,
                  fmt::format("contention curve fitted to the {}: {}", from, f.note));
  } else if (curves->source == "assumed" && options.busy_core_slowdown < 0) {
    warnings.push_back(
        "CPU contention curve assumed (no --cpu-probe, no traces at different worker counts): predictions for "
        "other worker counts, oversubscribed ones in particular, rest on it; measure it with python3 -m "
        "simreplay_capture.probe_cpu");
  }
  const bool as_captured = d->as_captured = options.cpu_scale == "as-captured";
  model.cpu.worker_cost_scale = as_captured ? c0.as_captured_scale : c0.intrinsic_scale;
  const double repetitions_ratio = RepetitionsCostRatio(in, *d, as_captured, cpu_quality);
  model.cpu.worker_cost_scale *= repetitions_ratio;
  SetProvenance(
      &model, "cpu.worker_cost_scale", c0.assumed,
      std::string(as_captured ? "as captured: min(1, cores / busy loader threads) (keeps the slowdown from other load "
                                "during capture), "
                              : "intrinsic: sum(cpu_ns in decode+augment) / sum(decode+augment wall), ") +
          (c0.method == "cpu_ns" ? "" : "fair share of cores assumed (no cpu_ns), ") + primary_src +
          (repetitions_ratio != 1.0
               ? fmt::format(", x {:.4f}: the mean cost level of the repetitions of its configuration",
                             repetitions_ratio)
               : std::string()));
  if (c0.background_threads > 0.5) {
    warnings.push_back(fmt::format(
        "{}: about {:.1f} runnable threads of other processes competed with the loader during capture; "
        "{}",
        primary.path, c0.background_threads,
        as_captured
            ? "the model keeps the slowdown it caused (--cpu-scale as-captured)"
            : "the model holds the intrinsic cost (--cpu-scale intrinsic): predictions assume a dedicated machine"));
  }
  model.cpu.core_speed_scale = 1.0;
  SetProvenance(&model, "cpu.core_speed_scale", true,
                "1 = the captured machine's cores (set it to simulate other cores)");
  return Status::Ok();
}

void FitMainPerBatch(const CalibrationInput& in, CalibrationDraft* d, nlohmann::json* cpu_quality) {
  nlohmann::json& cpu_q = *cpu_quality;
  const std::vector<TraceData>& traces = in.traces;
  models::ModelParams& model = d->model;
  std::vector<std::string>& warnings = d->warnings;
  // main_per_batch_s: next() on a batch that was already finished measures the main process's own work.
  std::vector<double> ready_waits;
  for (const auto& t : traces) {
    for (const auto& b : t.batches) {
      if (b.worker >= 0 && b.t_next_start_ns >= 0 && b.t_ready_ns > 0 && b.t_ready_ns < b.t_next_start_ns) {
        ready_waits.push_back(b.wait_ns * kNs);
      }
    }
  }
  // The training loop's own per-batch work outside next() and the step (moving the batch, bookkeeping):
  // next() return -> step start, and step end -> the next next(), matched by order.
  std::vector<double> before_step, after_step;
  for (const auto& t : traces) {
    if (t.steps.size() != t.batches.size()) continue;
    std::vector<replay::BatchRecord> b = t.batches;
    std::vector<replay::StepRecord> st = t.steps;
    std::sort(b.begin(), b.end(), [](const auto& x, const auto& y) { return x.t_next_start_ns < y.t_next_start_ns; });
    std::sort(st.begin(), st.end(), [](const auto& x, const auto& y) { return x.t_start_ns < y.t_start_ns; });
    for (size_t i = 0; i < b.size(); ++i) {
      if (b[i].t_next_start_ns < 0) continue;
      const int64_t back = b[i].t_next_start_ns + b[i].wait_ns;
      if (st[i].t_start_ns >= back) before_step.push_back((st[i].t_start_ns - back) * kNs);
      const int64_t end = st[i].t_start_ns + st[i].step_ns;
      if (i + 1 < b.size() && b[i + 1].t_next_start_ns >= end)
        after_step.push_back((b[i + 1].t_next_start_ns - end) * kNs);
    }
  }
  // Medians: the loop's gaps include epoch boundaries (iter()), which the simulator models separately.
  const double loop_s = (before_step.empty() ? 0 : QuantileNearestRank(before_step, 0.5)) +
                        (after_step.empty() ? 0 : QuantileNearestRank(after_step, 0.5));
  cpu_q["main_loop_per_batch_s"] = {{"next_return_to_step_start", QuantileSummary(before_step)},
                                    {"step_end_to_next_call", QuantileSummary(after_step)}};
  nlohmann::json q = QuantileSummary(ready_waits);
  if (ready_waits.size() >= 3) {
    model.cpu.main_per_batch_s = QuantileNearestRank(ready_waits, 0.5) + loop_s;
    SetProvenance(&model, "cpu.main_per_batch_s", false,
                  "median next() time of batches finished before next() was called + "
                  "median loop time outside next() and the step");
  } else {
    warnings.push_back("cpu.main_per_batch_s: fewer than 3 batches were ready before next(): default kept (assumed)");
  }
  cpu_q["main_per_batch_s"] = {{"method", "median wait of batches ready before next()"},
                               {"observations", q},
                               {"low_confidence", ready_waits.size() < 10}};
}

void FitWorkerLifecycle(const CalibrationInput& in, CalibrationDraft* d, nlohmann::json* cpu_quality) {
  nlohmann::json& cpu_q = *cpu_quality;
  const std::vector<TraceData>& traces = in.traces;
  models::ModelParams& model = d->model;
  // Worker start-up, spawn and resume from epoch_start events and each worker's first sample; shutdown
  // from epoch_end events: DataLoader joins every worker of a non-persistent epoch inside the next()
  // that ends it, so (epoch_end - the loop's last step or batch before it) / num_workers.
  std::vector<double> spawn, startup, resume, shutdown;
  for (const auto& t : traces) {
    const int w = ManifestInt(t.manifest, "loader", "num_workers", 0);
    const bool persistent = ManifestBool(t.manifest, "loader", "persistent_workers");
    if (w <= 0) continue;
    std::vector<int64_t> loop_marks;  // when the loop last did something before calling next() again
    for (const auto& s : t.steps) loop_marks.push_back(s.t_start_ns + s.step_ns);
    if (t.steps.empty()) {
      for (const auto& b : t.batches) loop_marks.push_back(b.t_next_start_ns + b.wait_ns);
    }
    std::sort(loop_marks.begin(), loop_marks.end());
    // Only epochs the loop ran to exhaustion (another epoch started after them); the last one's
    // epoch_end comes when the loop lets go of the iterator, with no join inside a next().
    std::set<int64_t> started;
    for (const auto& e : t.events) {
      if (e.value("kind", "") == "epoch_start") started.insert(e.value("epoch", int64_t{-1}));
    }
    for (const auto& e : t.events) {
      if (persistent || e.value("kind", "") != "epoch_end" || !e.contains("t_ns") || !e["t_ns"].is_number_integer() ||
          !started.count(e.value("epoch", int64_t{-2}) + 1))
        continue;
      const int64_t end_ns = e["t_ns"].get<int64_t>();
      auto it = std::upper_bound(loop_marks.begin(), loop_marks.end(), end_ns);
      if (it == loop_marks.begin()) continue;
      shutdown.push_back((end_ns - *std::prev(it)) * kNs / w);
    }
    for (const auto& e : t.events) {
      if (e.value("kind", "") != "epoch_start" || !e.contains("iter_ns") || !e["iter_ns"].is_number()) continue;
      const int64_t epoch = e.value("epoch", int64_t{0});
      const double iter_s = e["iter_ns"].get<double>() * kNs;
      const int64_t t0 = e.value("t_ns", int64_t{0});
      if (persistent && epoch > 0) {
        resume.push_back(iter_s / w);
        continue;
      }
      const double spawn_s = iter_s / w;
      spawn.push_back(spawn_s);
      std::map<int64_t, int64_t> first;
      for (const auto& s : t.samples) {
        if (s.epoch != epoch || s.worker < 0) continue;
        auto it = first.find(s.worker);
        if (it == first.end() || s.t_start_ns < it->second) first[s.worker] = s.t_start_ns;
      }
      for (const auto& [worker, start_ns] : first) {
        startup.push_back(std::max(0.0, (start_ns - t0) * kNs - (worker + 1) * spawn_s));
      }
    }
  }
  if (!spawn.empty()) {
    model.cpu.worker_spawn_s = MeanOf(spawn);
    SetProvenance(&model, "cpu.worker_spawn_s", false, "mean iter() time / num_workers (epoch_start events)");
  }
  if (!startup.empty()) {
    model.cpu.worker_startup_s = MeanOf(startup);
    SetProvenance(&model, "cpu.worker_startup_s", false, "mean of (worker's first sample - its spawn) per epoch");
  }
  if (!shutdown.empty()) {
    model.cpu.worker_shutdown_s = QuantileNearestRank(shutdown, 0.5);
    SetProvenance(&model, "cpu.worker_shutdown_s", false,
                  "median of (epoch_end - the loop's last step end before it) / num_workers, non-persistent epochs");
  } else {
    SetProvenance(&model, "cpu.worker_shutdown_s", true, "assumed 0: no non-persistent epoch ended in the traces");
  }
  if (!resume.empty()) {
    model.cpu.worker_resume_s = MeanOf(resume);
    SetProvenance(&model, "cpu.worker_resume_s", false, "mean iter() time / num_workers, persistent epochs >= 1");
  }
  cpu_q["worker_spawn_s"] = QuantileSummary(spawn);
  cpu_q["worker_startup_s"] = QuantileSummary(startup);
  cpu_q["worker_resume_s"] = QuantileSummary(resume);
  cpu_q["worker_shutdown_s"] = QuantileSummary(shutdown);
}

// Collate per sample (the simulator prefers the trace's own mean; this is its fallback).
void FitCollate(const CalibrationInput& in, CalibrationDraft* d) {
  const TraceData& primary = in.primary();
  const std::string primary_src = "trace " + primary.path;
  models::ModelParams& model = d->model;
  double collate = 0;
  int64_t n = 0;
  for (const auto& b : primary.batches) {
    if (b.worker >= 0 || b.collate_ns > 0) {
      collate += b.collate_ns * kNs;
      n += b.size;
    }
  }
  if (n > 0 && collate > 0) {
    model.cpu.collate_per_sample_s = collate / n * model.cpu.worker_cost_scale;
    SetProvenance(&model, "cpu.collate_per_sample_s", false,
                  "mean collate_ns per sample x worker_cost_scale, " + primary_src);
  }
}

void FitPin(const CalibrationInput& in, CalibrationDraft* d, nlohmann::json* cpu_quality) {
  nlohmann::json& cpu_q = *cpu_quality;
  const std::vector<TraceData>& traces = in.traces;
  models::ModelParams& model = d->model;
  // Pin speed from batches that were pinned.
  double bytes = 0, secs = 0;
  for (const auto& t : traces) {
    for (const auto& b : t.batches) {
      if (b.pin_ns > 0 && b.bytes > 0) {
        bytes += static_cast<double>(b.bytes);
        secs += b.pin_ns * kNs;
      }
    }
  }
  if (secs > 0 && bytes > 0) {
    model.cpu.pin_bytes_per_s = bytes / secs;
    SetProvenance(&model, "cpu.pin_bytes_per_s", false, "sum(batch bytes) / sum(pin_ns) of pinned batches");
  } else {
    SetProvenance(&model, "cpu.pin_bytes_per_s", true,
                  "default: no pinned batch in the traces (pin_memory off or no CUDA)");
  }
  cpu_q["pin"] = {{"bytes", bytes}, {"seconds", secs}};
}

// A fresh worker process's first samples cost more thread CPU than its later ones
// (replay/lifetime_warmup.h measures it per lifetime). That excess belongs to a process's lifetime, not
// to a sample: the simulator charges it where the predicted configuration's workers start, over as many
// samples as their lifetimes reach (more workers, shorter lifetimes, more of it per sample), and the
// replay takes each captured lifetime's own excess out of the recorded costs that paid it
// (cpu.recorded_warmup_samples), so that no start pays it twice. The model holds the mean excess per
// sample of the window times the window (cpu.worker_warmup_cpu_s, de-contended like the costs): the
// lifetimes' first-sample share of it on a process's first sample (cpu.worker_warmup_first_share), the
// rest spread evenly over the window (cpu.worker_warmup_samples). One lifetime is enough: a one-epoch
// capture at one worker (a short multi-rank job's rank 0) shows its warm-up as plainly as many do, and
// assuming none made every predicted re-fork free (3-4-rank validation cases 10-26% too fast at their
// epoch restarts; at least 3 lifetimes were required until 2026-12-06 night).
//
// 30 samples, chosen on the development suite (docs/validation-log.md, 2026-12-06 afternoon): a
// lifetime's faults per sample there fall from 560 (its first 10 samples) to 330 (10-49) and 150-220
// (50-99) (docs/measurements/churn-lifetimes-2026-12-05). One run of the suite re-analysed with seven
// CPU probes put 6 workers (lifetimes of 46 samples) +20-+24% too fast with the window of 10 charged at
// the start (the model before), and +0.5-+4.6%, -2.0-+2.2%, -2.8-+1.7% with windows of 30, 40, 50 spread;
// 1 worker (lifetimes of 280) at -1.7-+3.3%, +3.0-+7.8%, +6.8-+11.3%, +11.4-+15.9%: a single worker keeps
// churning past its first samples as the 2-worker lifetimes do not, so a longer window takes too much
// out of its steady cost.
void FitWorkerWarmup(const CalibrationInput& in, CalibrationDraft* d, nlohmann::json* cpu_quality) {
  models::ModelParams& model = d->model;
  std::vector<replay::TraceSamples> traces;
  for (const auto& t : in.traces) traces.push_back(LifetimeSamplesOf(t));
  const replay::LifetimeWarmup warmup = replay::MeasureLifetimeWarmup(traces, kWarmupSamples);
  std::vector<double> excess;                   // per lifetime
  double first_excess = 0, primary_excess = 0;  // summed over lifetimes (the primary trace's for the latter)
  for (const auto& l : warmup.lifetimes) {
    excess.push_back(l.excess_cpu_s);
    first_excess += l.first_excess_cpu_s;
    if (l.trace == 0) primary_excess += l.excess_cpu_s;
  }
  nlohmann::json q = {{"warm_after_samples", kWarmupSamples}, {"starts", excess.size()}};
  if (excess.empty() || !warmup.measured) {
    SetProvenance(&model, "cpu.worker_warmup_cpu_s", true,
                  fmt::format("assumed 0: no worker process with cpu_ns in the traces, or fewer than 20 "
                              "samples past their first {}",
                              kWarmupSamples));
    q["note"] = "not measured";
    (*cpu_quality)["worker_warmup"] = q;
    return;
  }
  const double per_window_sample =
      std::max(0.0, std::accumulate(excess.begin(), excess.end(), 0.0) / warmup.window_samples);
  // cpu_ns -> the model's CPU seconds: the factor worker_cost_scale puts on the primary's recorded
  // decode+augment wall, over their cpu_ns (contention removed, repetitions' level, worker overhead).
  double primary_wall = 0, primary_stage_cpu = 0, primary_cpu = 0;
  for (const auto& s : in.primary().samples) {
    if (s.worker < 0 || s.cpu_ns < 0) continue;
    primary_wall += (s.decode_ns + s.augment_ns) * kNs;
    primary_stage_cpu += s.cpu_ns * kNs * (s.decode_ns + s.augment_ns) /
                         std::max<double>(1, static_cast<double>(s.read_ns + s.decode_ns + s.augment_ns));
    primary_cpu += s.cpu_ns * kNs;
  }
  const double cpu_to_model =
      primary_stage_cpu > 0 ? model.cpu.worker_cost_scale * primary_wall / primary_stage_cpu : 1.0;
  model.cpu.worker_warmup_cpu_s = per_window_sample * kWarmupSamples * cpu_to_model;
  model.cpu.worker_warmup_samples = kWarmupSamples;
  model.cpu.recorded_warmup_samples = kWarmupSamples;
  model.warmup_steady_cpu_s_per_unit = warmup.steady_cpu_s_per_unit;
  // The first sample's part: the lifetimes' mean first-sample excess over a whole window's excess.
  const double lifetime_excess = per_window_sample * kWarmupSamples;
  model.cpu.worker_warmup_first_share =
      lifetime_excess > 0
          ? std::clamp(first_excess / static_cast<double>(excess.size()) / lifetime_excess, 0.0, 1.0)
          : 0.0;
  SetProvenance(&model, "cpu.worker_warmup_cpu_s", false,
                fmt::format("mean excess thread CPU per sample of a worker's first {} samples over the steady cost per "
                            "unit, x {}; {} worker lifetime(s)",
                            kWarmupSamples, kWarmupSamples, excess.size()));
  SetProvenance(&model, "cpu.worker_warmup_samples", false,
                fmt::format("the window the warm-up excess was measured over (a process's first {} samples)",
                            kWarmupSamples));
  SetProvenance(&model, "cpu.worker_warmup_first_share", false,
                "the lifetimes' first-sample excess over a whole window's excess (the rest is spread over the "
                "window)");
  SetProvenance(&model, "cpu.recorded_warmup_samples", false,
                fmt::format("the same window: the replay takes each captured lifetime's excess out of its first {} "
                            "recorded samples",
                            kWarmupSamples));
  q["excess_cpu_s"] = QuantileSummary(excess);
  q["excess_per_window_sample_cpu_s"] = per_window_sample;
  q["first_sample_excess_cpu_s"] = first_excess / static_cast<double>(excess.size());
  q["primary_share_of_cpu"] = primary_cpu > 0 ? primary_excess / primary_cpu : 0.0;
  (*cpu_quality)["worker_warmup"] = q;
}

// The scheduler's wake-up delay of a blocked loop thread, from the probe's timed sleeps (none without
// a probe, or with one recorded before the probe measured it: 0, assumed).
void FitWakeupDelay(const CalibrationInput& in, CalibrationDraft* d, nlohmann::json* cpu_quality) {
  models::ModelParams& model = d->model;
  const char* assumed = "assumed 0: no CPU probe with wake-up delays (simreplay_capture.probe_cpu, --cpu-probe)";
  SetProvenance(&model, "cpu.wakeup_delay_s", true, assumed);
  SetProvenance(&model, "cpu.wakeup_delay_per_excess_s", true, assumed);
  if (!in.cpu_probe) return;
  auto fit = FitWakeDelay(*in.cpu_probe);
  if (!fit.ok()) {
    (*cpu_quality)["wakeup_delay"] = {{"note", fit.status().message()}};
    return;
  }
  model.cpu.wakeup_delay_s = fit->base_s;
  model.cpu.wakeup_delay_per_excess_s = fit->per_excess_s;
  const std::string src = fmt::format("least squares on the CPU probe's timed sleeps ({} points, rms {:.3g} s), {}",
                                      fit->points, fit->rms_s, in.cpu_probe->file);
  SetProvenance(&model, "cpu.wakeup_delay_s", false, src);
  SetProvenance(&model, "cpu.wakeup_delay_per_excess_s", false, src);
  (*cpu_quality)["wakeup_delay"] = fit->ToJson();
}

// The share of the primary trace's per-sample CPU that went to page faults (models/page_fault_churn.h),
// and the probe's faults per sample beside it when the probe counted them.
void FitPageFaults(const CalibrationInput& in, CalibrationDraft* d, nlohmann::json* cpu_quality) {
  models::ModelParams& model = d->model;
  const models::PageFaultFit fit = PrimaryFaultFit(in);
  model.cpu.page_fault_cpu_share = fit.cpu_share;
  SetProvenance(&model, "cpu.page_fault_cpu_share", !fit.measured,
                fit.measured ? fmt::format("least squares of the samples' cpu_ns on their minflt, {}: {}",
                                           in.primary().path, fit.note)
                             : "assumed 0: " + fit.note);
  nlohmann::json q = fit.ToJson();
  q["trace"] = in.primary().path;
  // Inline loading churns less than a fresh worker: the probe's inline point says how much less.
  const bool captured_workers = ManifestInt(in.primary().manifest, "loader", "num_workers", 0) > 0;
  const CpuProbeInline* inline_point =
      in.cpu_probe && in.cpu_probe->inline_point && in.cpu_probe->inline_point->minflt_per_sample >= 0
          ? &*in.cpu_probe->inline_point
          : nullptr;
  model.cpu.inline_page_fault_ratio = 1;
  if (fit.measured && captured_workers && inline_point != nullptr && fit.faults_per_sample > 0) {
    model.cpu.inline_page_fault_ratio = inline_point->minflt_per_sample / fit.faults_per_sample;
    SetProvenance(
        &model, "cpu.inline_page_fault_ratio", false,
        fmt::format("the CPU probe's inline point, {:.0f} page faults per sample ({}), over the captured "
                    "workers' {:.0f} ({})",
                    inline_point->minflt_per_sample, in.cpu_probe->file, fit.faults_per_sample, in.primary().path));
  } else {
    SetProvenance(&model, "cpu.inline_page_fault_ratio", true,
                  !fit.measured       ? "assumed 1: no page-fault churn measured"
                  : !captured_workers ? "assumed 1: the capture loaded inline (num_workers = 0)"
                                      : "assumed 1: no CPU probe with an inline point that counted page faults");
  }
  q["inline_page_fault_ratio"] = model.cpu.inline_page_fault_ratio;
  if (in.cpu_probe) {
    nlohmann::json probe = nlohmann::json::array();
    for (const auto& p : in.cpu_probe->points) {
      if (p.minflt_per_sample >= 0)
        probe.push_back({{"workers", p.workers},
                         {"round", p.round},
                         {"faults_per_sample", p.minflt_per_sample},
                         {"getitem_cpu_s", p.getitem_cpu_s}});
    }
    if (in.cpu_probe->inline_point) {
      const CpuProbeInline& i = *in.cpu_probe->inline_point;
      probe.push_back({{"workers", 0}, {"faults_per_sample", i.minflt_per_sample}, {"getitem_cpu_s", i.getitem_cpu_s}});
    }
    if (!probe.empty()) q["probe_points"] = probe;
  }
  (*cpu_quality)["page_faults"] = q;
}

}  // namespace

Status FitCpu(const CalibrationInput& in, CalibrationDraft* d) {
  nlohmann::json cpu_q = nlohmann::json::object();
  SIMREPLAY_RETURN_IF_ERROR(FitContentionAndScale(in, d, &cpu_q));
  FitWakeupDelay(in, d, &cpu_q);
  FitWorkerWarmup(in, d, &cpu_q);
  FitMainPerBatch(in, d, &cpu_q);
  FitWorkerLifecycle(in, d, &cpu_q);
  FitCollate(in, d);
  FitPin(in, d, &cpu_q);
  FitPageFaults(in, d, &cpu_q);
  d->quality["cpu"] = cpu_q;
  return Status::Ok();
}

}  // namespace simreplay::calibrate
