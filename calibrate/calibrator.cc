#include "calibrate/calibrator.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "calibrate/busy_cores.h"
#include "calibrate/cost_regression.h"
#include "calibrate/format_model.h"
#include "calibrate/probe_file.h"
#include "common/atomic_file.h"
#include "common/json_fields.h"
#include "models/format_model.h"
#include "replay/manifest.h"
#include "replay/trace_reader.h"

namespace simreplay::calibrate {

namespace {

constexpr double kNs = 1e-9;

// Every record of one trace, kept in memory (the calibrator needs several passes).
struct TraceData {
  std::string path;
  nlohmann::json manifest;
  std::vector<replay::SampleRecord> samples;
  std::vector<int64_t> sample_lines;
  std::vector<replay::BatchRecord> batches;
  std::vector<int64_t> batch_lines;
  std::vector<replay::StepRecord> steps;
  std::vector<int64_t> step_lines;
  std::vector<replay::WorkerRecord> workers;
  std::vector<replay::HostRecord> hosts;
  std::vector<nlohmann::json> events;
  bool has_footer = false;
  std::vector<std::string> warnings;
};

using replay::ManifestBool;
using replay::ManifestDouble;
using replay::ManifestInt;

Result<TraceData> ReadTrace(const std::string& path) {
  TraceData t;
  t.path = path;
  auto reader = replay::TraceReader::Open(path);
  if (!reader.ok()) return reader.status();
  t.manifest = (*reader)->header().manifest;
  replay::TraceRecord record;
  while (true) {
    auto more = (*reader)->Next(&record);
    if (!more.ok()) return more.status();
    if (!*more) break;
    int64_t line = (*reader)->line_number();
    if (auto* s = std::get_if<replay::SampleRecord>(&record)) {
      t.samples.push_back(std::move(*s));
      t.sample_lines.push_back(line);
    } else if (auto* b = std::get_if<replay::BatchRecord>(&record)) {
      t.batches.push_back(*b);
      t.batch_lines.push_back(line);
    } else if (auto* st = std::get_if<replay::StepRecord>(&record)) {
      t.steps.push_back(*st);
      t.step_lines.push_back(line);
    } else if (auto* w = std::get_if<replay::WorkerRecord>(&record)) {
      t.workers.push_back(*w);
    } else if (auto* h = std::get_if<replay::HostRecord>(&record)) {
      t.hosts.push_back(*h);
    } else if (auto* o = std::get_if<replay::OtherRecord>(&record)) {
      if (o->type == "event") t.events.push_back(o->json);
      if (o->type == "footer") t.has_footer = true;
    }
  }
  t.warnings = (*reader)->warnings();
  return t;
}

Status Contradiction(const std::string& path, int64_t line, const std::string& what) {
  return Status::InvalidArgument(fmt::format("{}:{}: contradictory fields: {}", path, line, what));
}

// Rejects traces that measured nothing or contradict themselves.
Status ValidateTrace(const TraceData& t) {
  if (t.samples.empty() && t.batches.empty()) {
    return Status::InvalidArgument(t.path + ": no sample or batch records: nothing to calibrate");
  }
  bool any_time = false;
  for (const auto& s : t.samples) any_time |= s.read_ns + s.decode_ns + s.augment_ns > 0;
  for (const auto& b : t.batches) any_time |= b.wait_ns + b.collate_ns > 0;
  for (const auto& s : t.steps) any_time |= s.step_ns + s.compute_ns > 0;
  if (!any_time) return Status::InvalidArgument(t.path + ": every recorded time is zero: the trace measured nothing");
  const int workers = ManifestInt(t.manifest, "loader", "num_workers", -1);
  const int batch_size = ManifestInt(t.manifest, "loader", "batch_size", -1);
  for (size_t i = 0; i < t.samples.size(); ++i) {
    const auto& s = t.samples[i];
    const int64_t line = t.sample_lines[i];
    if (workers >= 0 && s.worker >= workers) {
      return Contradiction(
          t.path, line, fmt::format("sample worker {} but the manifest's loader.num_workers is {}", s.worker, workers));
    }
    if (workers == 0 && s.worker >= 0) {
      return Contradiction(t.path, line,
                           fmt::format("sample worker {} but num_workers is 0 (main process = -1)", s.worker));
    }
    if (s.unsplit && (s.read_ns > 0 || s.augment_ns > 0)) {
      return Contradiction(t.path, line, "stages \"unsplit\" with read_ns or augment_ns > 0");
    }
    const int64_t wall = s.read_ns + s.decode_ns + s.augment_ns;
    if (s.cpu_ns > wall + wall / 2 + 1'000'000) {
      return Contradiction(
          t.path, line,
          fmt::format("cpu_ns {} exceeds the call's wall time {} ns (thread CPU time cannot)", s.cpu_ns, wall));
    }
  }
  for (size_t i = 0; i < t.batches.size(); ++i) {
    const auto& b = t.batches[i];
    if (batch_size > 0 && b.size > batch_size) {
      return Contradiction(t.path, t.batch_lines[i],
                           fmt::format("batch size {} exceeds loader.batch_size {}", b.size, batch_size));
    }
    if (workers >= 0 && b.worker >= workers) {
      return Contradiction(t.path, t.batch_lines[i],
                           fmt::format("batch from worker {} but num_workers is {}", b.worker, workers));
    }
  }
  for (size_t i = 0; i < t.steps.size(); ++i) {
    const auto& s = t.steps[i];
    if (s.compute_ns > s.step_ns + s.step_ns / 10 + 1'000'000) {
      return Contradiction(t.path, t.step_lines[i],
                           fmt::format("compute_ns {} exceeds step_ns {}", s.compute_ns, s.step_ns));
    }
    if (s.micro_batches < 1) return Contradiction(t.path, t.step_lines[i], "micro_batches < 1");
  }
  return Status::Ok();
}

// Start of the run on the simulator's clock: the first iter() (epoch_start event), else the first next().
int64_t RunStartNs(const TraceData& t) {
  int64_t start = INT64_MAX;
  for (const auto& e : t.events) {
    if (e.value("kind", "") == "epoch_start" && e.contains("t_ns") && e["t_ns"].is_number_integer()) {
      start = std::min(start, e["t_ns"].get<int64_t>());
    }
  }
  if (start != INT64_MAX) return start;
  for (const auto& b : t.batches) {
    start = std::min(start, b.t_next_start_ns >= 0 ? b.t_next_start_ns : b.t_ready_ns - b.wait_ns);
  }
  if (start == INT64_MAX) {
    for (const auto& s : t.samples) start = std::min(start, s.t_start_ns);
  }
  return start == INT64_MAX ? 0 : start;
}

int64_t RunEndNs(const TraceData& t) {
  int64_t end = INT64_MIN;
  for (const auto& s : t.steps) end = std::max(end, s.t_start_ns + s.step_ns);
  if (end == INT64_MIN) {
    for (const auto& b : t.batches) {
      end = std::max(end, (b.t_next_start_ns >= 0 ? b.t_next_start_ns : b.t_ready_ns - b.wait_ns) + b.wait_ns);
    }
  }
  if (end == INT64_MIN) {
    for (const auto& s : t.samples) end = std::max(end, s.t_start_ns + s.read_ns + s.decode_ns + s.augment_ns);
  }
  return end == INT64_MIN ? 0 : end;
}

MeasuredSummary Summarize(const TraceData& t) {
  MeasuredSummary m;
  m.batches = static_cast<int64_t>(t.batches.size());
  double wait = 0, compute = 0;
  for (const auto& b : t.batches) {
    m.samples += b.size;
    wait += b.wait_ns * kNs;
  }
  for (const auto& s : t.steps) compute += s.compute_ns * kNs;
  m.wall_s = std::max(0.0, (RunEndNs(t) - RunStartNs(t)) * kNs);
  if (m.wall_s > 0) {
    m.train_throughput_samples_per_s = m.samples / m.wall_s;
    m.gpu_idle_fraction = std::clamp(1 - compute / m.wall_s, 0.0, 1.0);
  }
  m.mean_data_wait_s = m.batches > 0 ? wait / m.batches : 0;
  return m;
}

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

BusyCoreEstimate TraceBusyCores(const TraceData& t) {
  std::vector<BusyCoreSample> samples;
  for (const auto& s : t.samples) {
    if (s.cpu_ns < 0 || s.worker < 0) continue;
    samples.push_back({s.t_start_ns * kNs, (s.read_ns + s.decode_ns + s.augment_ns) * kNs, s.cpu_ns * kNs,
                       static_cast<double>(s.width * s.height * std::max<int64_t>(1, s.frames)), s.format});
  }
  return EstimateBusyCoreSlowdown(samples, ManifestInt(t.manifest, "hardware", "cores", 0));
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
  in.run_wall_s = (RunEndNs(t) - RunStartNs(t)) * kNs;
  std::map<int64_t, std::pair<const replay::WorkerRecord*, const replay::WorkerRecord*>> by_pid;
  for (const auto& w : t.workers) {
    if (w.worker < 0) continue;
    auto& [first, last] = by_pid[w.pid];
    if (first == nullptr || w.t_ns < first->t_ns) first = &w;
    if (last == nullptr || w.t_ns > last->t_ns) last = &w;
  }
  for (const auto& [pid, fl] : by_pid) {
    const auto& [first, last] = fl;
    if (last->t_ns <= first->t_ns) continue;
    in.worker_cpu_utilization.push_back(static_cast<double>(last->cpu_ns - first->cpu_ns) /
                                        static_cast<double>(last->t_ns - first->t_ns));
    // Stage CPU of this worker inside the window (a worker id is reused by restarted workers, but
    // their windows do not overlap).
    double stage_cpu = 0;
    bool all_have_cpu = true;
    for (const auto& s : t.samples) {
      if (s.worker != first->worker || s.t_start_ns < first->t_ns || s.t_start_ns > last->t_ns) continue;
      if (s.cpu_ns < 0) all_have_cpu = false;
      stage_cpu += s.cpu_ns * kNs;
    }
    for (const auto& b : t.batches) {
      if (b.worker == first->worker && b.t_ready_ns >= first->t_ns && b.t_ready_ns <= last->t_ns)
        stage_cpu += b.collate_ns * kNs;
    }
    if (!all_have_cpu || stage_cpu <= 0) continue;
    in.worker_process_cpu_s += (last->cpu_ns - first->cpu_ns) * kNs;
    in.worker_stage_cpu_s += stage_cpu;
  }
  return EstimateContention(in);
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

nlohmann::json QuantileSummary(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  double mean = 0;
  for (double x : v) mean += x;
  return {{"count", v.size()},       {"mean", mean / static_cast<double>(v.size())},
          {"p50", Quantile(v, 0.5)}, {"p90", Quantile(v, 0.9)},
          {"min", Quantile(v, 0)},   {"max", Quantile(v, 1)}};
}

void Set(models::ModelParams* m, const std::string& name, bool assumed, const std::string& source) {
  m->info[name] = models::ParamInfo{assumed, source};
}

}  // namespace

nlohmann::json MeasuredSummary::ToJson() const {
  return {{"samples", samples},
          {"batches", batches},
          {"wall_s", wall_s},
          {"train_throughput_samples_per_s", train_throughput_samples_per_s},
          {"gpu_idle_fraction", gpu_idle_fraction},
          {"mean_data_wait_s", mean_data_wait_s}};
}

std::string TracePathForModel(const std::string& trace, const std::string& model_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path model_dir = fs::path(model_path).parent_path();
  if (model_dir.empty()) model_dir = ".";
  fs::path abs_trace = fs::absolute(trace, ec);
  fs::path abs_dir = fs::absolute(model_dir, ec);
  if (ec) return trace;
  fs::path rel = abs_trace.lexically_normal().lexically_relative(abs_dir.lexically_normal());
  if (rel.empty()) return abs_trace.lexically_normal().string();
  return rel.string();
}

Result<CalibrationResult> Calibrate(const CalibrateOptions& options) {
  if (options.traces.empty()) return Status::InvalidArgument("calibrate: no trace given");
  if (options.storage_mode != "recorded" && options.storage_mode != "model") {
    return Status::InvalidArgument("storage mode must be \"recorded\" or \"model\", found \"" + options.storage_mode +
                                   "\"");
  }
  std::vector<TraceData> traces;
  for (const auto& path : options.traces) {
    auto t = ReadTrace(path);
    if (!t.ok()) return t.status();
    SIMREPLAY_RETURN_IF_ERROR(ValidateTrace(*t));
    traces.push_back(std::move(*t));
  }

  CalibrationResult result;
  models::ModelParams& model = result.model;
  std::vector<std::string>& warnings = result.warnings;
  nlohmann::json quality = nlohmann::json::object();
  const TraceData& primary = traces.front();
  const std::string primary_src = "trace " + primary.path;
  model.trace_path = TracePathForModel(primary.path, options.model_path.empty() ? "model.json" : options.model_path);
  model.storage.mode = options.storage_mode;
  for (const auto& t : traces) {
    for (const auto& w : t.warnings) warnings.push_back(w);
    if (!t.has_footer)
      warnings.push_back(t.path + ": no footer: the capture was killed or is still running (prefix used)");
  }

  // ---- CPU: contention, intrinsic scale (per trace; the model's scale is the primary trace's). ----
  nlohmann::json cpu_q = nlohmann::json::object();
  nlohmann::json per_trace = nlohmann::json::array();
  std::vector<ContentionEstimate> contention;
  std::vector<BusyCoreEstimate> busy_cores;  // per trace; the primary's slowdown is the model's
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
    const double inflation = 1.0 + slowdown * busy.mean_overlap;
    contention.back().intrinsic_scale /= inflation;
    contention.back().as_captured_scale /= inflation;
    busy_cores.push_back(busy);
    nlohmann::json j = contention.back().ToJson();
    j["trace"] = t.path;
    j["busy_cores"] = busy_cores.back().ToJson();
    j["num_workers"] = ManifestInt(t.manifest, "loader", "num_workers", -1);
    j["cores"] = ManifestInt(t.manifest, "hardware", "cores", 0);
    per_trace.push_back(j);
  }
  cpu_q["contention"] = per_trace;
  const auto& c0 = contention.front();
  model.cpu.worker_overhead_factor = c0.overhead_factor;
  Set(&model, "cpu.worker_overhead_factor", c0.overhead_method == "none",
      "worker CPU outside the recorded stages (" + c0.overhead_method + "), " + primary_src);
  model.cpu.busy_core_slowdown = busy_cores.front().slowdown;
  Set(&model, "cpu.busy_core_slowdown", !busy_cores.front().measured, busy_cores.front().note + ", " + primary_src);
  const bool as_captured = options.cpu_scale == "as-captured";
  model.cpu.worker_cost_scale = as_captured ? c0.as_captured_scale : c0.intrinsic_scale;
  Set(&model, "cpu.worker_cost_scale", c0.assumed,
      std::string(as_captured
                      ? "as captured: min(1, cores / busy loader threads) x overhead factor (keeps the "
                        "slowdown from other load during capture), "
                      : "intrinsic: sum(cpu_ns in decode+augment) / sum(decode+augment wall) x overhead factor, ") +
          (c0.method == "cpu_ns" ? "" : "fair share of cores assumed (no cpu_ns), ") + primary_src);
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
  Set(&model, "cpu.core_speed_scale", true, "1 = the captured machine's cores (set it to simulate other cores)");

  // main_per_batch_s: next() on a batch that was already finished measures the main process's own work.
  {
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
    const double loop_s =
        (before_step.empty() ? 0 : Quantile(before_step, 0.5)) + (after_step.empty() ? 0 : Quantile(after_step, 0.5));
    cpu_q["main_loop_per_batch_s"] = {{"next_return_to_step_start", QuantileSummary(before_step)},
                                      {"step_end_to_next_call", QuantileSummary(after_step)}};
    nlohmann::json q = QuantileSummary(ready_waits);
    if (ready_waits.size() >= 3) {
      model.cpu.main_per_batch_s = Quantile(ready_waits, 0.5) + loop_s;
      Set(&model, "cpu.main_per_batch_s", false,
          "median next() time of batches finished before next() was called + "
          "median loop time outside next() and the step");
    } else {
      warnings.push_back("cpu.main_per_batch_s: fewer than 3 batches were ready before next(): default kept (assumed)");
    }
    cpu_q["main_per_batch_s"] = {{"method", "median wait of batches ready before next()"},
                                 {"observations", q},
                                 {"low_confidence", ready_waits.size() < 10}};
  }
  // Worker start-up, spawn and resume from epoch_start events and each worker's first sample.
  {
    std::vector<double> spawn, startup, resume;
    for (const auto& t : traces) {
      const int w = ManifestInt(t.manifest, "loader", "num_workers", 0);
      const bool persistent = ManifestBool(t.manifest, "loader", "persistent_workers");
      if (w <= 0) continue;
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
      model.cpu.worker_spawn_s = Mean(spawn);
      Set(&model, "cpu.worker_spawn_s", false, "mean iter() time / num_workers (epoch_start events)");
    }
    if (!startup.empty()) {
      model.cpu.worker_startup_s = Mean(startup);
      Set(&model, "cpu.worker_startup_s", false, "mean of (worker's first sample - its spawn) per epoch");
    }
    if (!resume.empty()) {
      model.cpu.worker_resume_s = Mean(resume);
      Set(&model, "cpu.worker_resume_s", false, "mean iter() time / num_workers, persistent epochs >= 1");
    }
    cpu_q["worker_spawn_s"] = QuantileSummary(spawn);
    cpu_q["worker_startup_s"] = QuantileSummary(startup);
    cpu_q["worker_resume_s"] = QuantileSummary(resume);
  }
  // Collate per sample (the simulator prefers the trace's own mean; this is its fallback).
  {
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
      Set(&model, "cpu.collate_per_sample_s", false, "mean collate_ns per sample x worker_cost_scale, " + primary_src);
    }
  }
  // Pin speed from batches that were pinned.
  {
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
      Set(&model, "cpu.pin_bytes_per_s", false, "sum(batch bytes) / sum(pin_ns) of pinned batches");
    } else {
      Set(&model, "cpu.pin_bytes_per_s", true, "default: no pinned batch in the traces (pin_memory off or no CUDA)");
    }
    cpu_q["pin"] = {{"bytes", bytes}, {"seconds", secs}};
  }
  quality["cpu"] = cpu_q;

  // ---- Per-sample cost regressions per media format and stage (intrinsic seconds). ----
  nlohmann::json media_json = nlohmann::json::object();
  nlohmann::json regression_q = nlohmann::json::object();
  {
    struct Rows {
      std::vector<std::array<double, 3>> x;
      std::vector<double> read, decode, augment, getitem;
      std::vector<std::array<double, 3>> x_unsplit;
    };
    std::map<std::string, Rows> by_format;
    for (size_t ti = 0; ti < traces.size(); ++ti) {
      const double scale = contention[ti].intrinsic_scale;
      for (const auto& s : traces[ti].samples) {
        std::array<double, 3> x = {static_cast<double>(s.read_bytes),
                                   static_cast<double>(s.width * s.height * std::max<int64_t>(1, s.frames)),
                                   static_cast<double>(s.frames)};
        Rows& r = by_format[s.format];
        if (s.unsplit) {
          r.x_unsplit.push_back(x);
          r.getitem.push_back(s.decode_ns * kNs * scale);
        } else {
          r.x.push_back(x);
          r.read.push_back(s.read_ns * kNs);
          r.decode.push_back(s.decode_ns * kNs * scale);
          r.augment.push_back(s.augment_ns * kNs * scale);
        }
      }
    }
    auto fit_stage = [&](const std::string& format, const char* stage, const std::vector<std::array<double, 3>>& xs,
                         const std::vector<double>& ys, bool bytes_only, nlohmann::json* out) {
      if (ys.empty()) return;
      const Eigen::Index n = static_cast<Eigen::Index>(ys.size());
      Eigen::MatrixXd x(n, bytes_only ? 1 : 3);
      Eigen::VectorXd y(n);
      for (Eigen::Index i = 0; i < n; ++i) {
        for (Eigen::Index j = 0; j < x.cols(); ++j) x(i, j) = xs[static_cast<size_t>(i)][static_cast<size_t>(j)];
        y[i] = ys[static_cast<size_t>(i)];
      }
      std::vector<std::string> names =
          bytes_only ? std::vector<std::string>{"bytes"} : std::vector<std::string>{"bytes", "pixels", "frames"};
      auto fit = FitHuber(x, y, names, "format " + format + " stage " + stage);
      if (!fit.ok()) {
        warnings.push_back(fit.status().message());
        return;
      }
      (*out)[stage] = fit->ToJson();
      regression_q[format + "." + stage] = {
          {"samples", fit->samples}, {"r2", fit->r2}, {"mape", fit->mape}, {"low_confidence", fit->low_confidence}};
      if (fit->low_confidence) {
        std::string why;
        for (const auto& r : fit->reasons) why += (why.empty() ? "" : "; ") + r;
        warnings.push_back("low confidence: cost of " + format + "/" + stage + ": " + why);
      }
    };
    for (const auto& [format, rows] : by_format) {
      nlohmann::json stages = nlohmann::json::object();
      fit_stage(format, "read", rows.x, rows.read, true, &stages);
      fit_stage(format, "decode", rows.x, rows.decode, false, &stages);
      fit_stage(format, "augment", rows.x, rows.augment, false, &stages);
      fit_stage(format, "getitem", rows.x_unsplit, rows.getitem, false, &stages);
      media_json[format] = {{"samples", rows.x.size() + rows.x_unsplit.size()},
                            {"units",
                             "decode/augment/getitem: intrinsic CPU seconds (recorded x the trace's "
                             "worker_cost_scale); read: recorded seconds"},
                            {"stages", stages}};
    }
  }
  quality["cost_regression"] = regression_q;

  // ---- Storage: probe, trace reads, page cache. ----
  nlohmann::json storage_q = nlohmann::json::object();
  models::FormatParams formats = models::CatalogueFormats();
  formats.captured = ContainerOfManifest(primary.manifest);
  {
    bool from_probe = false;
    if (!options.probe_path.empty()) {
      auto probe = LoadProbeFile(options.probe_path);
      if (!probe.ok()) return probe.status();
      if (!probe->pattern.empty()) {
        const std::string src = "probe " + options.probe_path + " fit." + probe->pattern;
        if (probe->latency_s) {
          model.storage.latency_s = *probe->latency_s;
          Set(&model, "storage.latency_s", false, src);
        }
        if (probe->bandwidth_bytes_per_s) {
          model.storage.bandwidth_bytes_per_s = *probe->bandwidth_bytes_per_s;
          Set(&model, "storage.bandwidth_bytes_per_s", false, src);
          from_probe = true;
        }
        if (probe->max_useful_concurrency) model.storage.max_concurrency = *probe->max_useful_concurrency;
        storage_q["probe"] = {{"path", options.probe_path},
                              {"pattern", probe->pattern},
                              {"fit", probe->fit},
                              {"cache_drop", probe->cache_drop}};
      } else {
        warnings.push_back(options.probe_path + ": the probe has no usable fit: storage from trace reads or defaults");
      }
      if (probe->page_cache_bytes_per_s) {
        model.storage.page_cache_bytes_per_s = *probe->page_cache_bytes_per_s;
        Set(&model, "storage.page_cache_bytes_per_s", false, "probe " + options.probe_path + " fit.page_cache");
      }
    }
    // Trace read times, per container format; the primary's container refines the storage model.
    std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> reads;
    std::map<std::string, std::string> first_trace;
    for (const auto& t : traces) {
      const std::string c = ContainerOfManifest(t.manifest);
      first_trace.emplace(c, t.path);
      for (const auto& s : t.samples) {
        if (s.unsplit || s.read_bytes <= 0) continue;
        reads[c].first.push_back(static_cast<double>(s.read_bytes));
        reads[c].second.push_back(s.read_ns * kNs);
      }
    }
    nlohmann::json trace_reads = nlohmann::json::object();
    for (auto& [container, xy] : reads) {
      auto fit = FitContainerReads(xy.first, xy.second, container, first_trace[container], &formats);
      if (!fit.ok()) {
        warnings.push_back(fit.status().message());
        continue;
      }
      trace_reads[container] = fit->ToJson();
      if (container == formats.captured && !from_probe && fit->used[1] && fit->coefficients[1] > 0) {
        model.storage.latency_s = std::max(0.0, fit->coefficients[0]);
        model.storage.bandwidth_bytes_per_s = 1.0 / fit->coefficients[1];
        Set(&model, "storage.latency_s", false, "Huber fit of read_ns on read_bytes, " + primary_src);
        Set(&model, "storage.bandwidth_bytes_per_s", false, "Huber fit of read_ns on read_bytes, " + primary_src);
      }
    }
    storage_q["trace_reads"] = trace_reads;
    formats.reference_bandwidth_bytes_per_s = model.storage.bandwidth_bytes_per_s;
    // Page cache: the share of the dataset that fits in the memory that was free at the start.
    const double dataset_bytes = ManifestDouble(primary.manifest, "data", "bytes", 0);
    const double ram = ManifestDouble(primary.manifest, "hardware", "ram_bytes", 0);
    double used = 0;
    if (!primary.hosts.empty()) {
      used = static_cast<double>(
          std::min_element(primary.hosts.begin(), primary.hosts.end(), [](const auto& a, const auto& b) {
            return a.t_ns < b.t_ns;
          })->mem_used_bytes);
    }
    if (dataset_bytes > 0 && ram > 0) {
      double free_bytes = std::max(0.0, ram - used);
      model.storage.page_cache_hit_ratio = std::clamp(free_bytes / dataset_bytes, 0.0, 1.0);
      Set(&model, "storage.page_cache_hit_ratio", true,
          fmt::format("derived: min(1, free memory {:.3g} B / dataset {:.3g} B) (steady state, after the first epoch)",
                      free_bytes, dataset_bytes));
      storage_q["page_cache"] = {{"dataset_bytes", dataset_bytes}, {"free_bytes", free_bytes}, {"ram_bytes", ram}};
    }
    storage_q["mode"] = model.storage.mode;
    if (!from_probe && reads.count(formats.captured) == 0) {
      warnings.push_back("storage: no probe and no read times: latency and bandwidth are defaults (assumed)");
    }
  }
  quality["storage"] = storage_q;

  // ---- Memory. ----
  nlohmann::json memory_q = nlohmann::json::object();
  {
    std::map<std::pair<size_t, int64_t>, double> worker_peak;  // (trace, pid) -> max PSS
    std::vector<double> main_rss;
    for (size_t ti = 0; ti < traces.size(); ++ti) {
      const replay::WorkerRecord* first_main = nullptr;
      for (const auto& w : traces[ti].workers) {
        if (w.worker >= 0) {
          if (w.pss_bytes > 0) {
            double& peak = worker_peak[{ti, w.pid}];
            peak = std::max(peak, static_cast<double>(w.pss_bytes));
          }
        } else if (first_main == nullptr || w.t_ns < first_main->t_ns) {
          first_main = &w;
        }
      }
      if (first_main != nullptr && first_main->rss_bytes > 0)
        main_rss.push_back(static_cast<double>(first_main->rss_bytes));
    }
    std::vector<double> pss;
    for (const auto& [k, v] : worker_peak) pss.push_back(v);
    if (!pss.empty()) {
      model.memory.worker_base_pss_bytes = Quantile(pss, 0.5);
      Set(&model, "memory.worker_base_pss_bytes", false, "median over worker processes of their peak pss_bytes");
    }
    if (!main_rss.empty()) {
      model.memory.main_base_bytes = Quantile(main_rss, 0.5);
      Set(&model, "memory.main_base_bytes", false, "main process rss_bytes at its first resource sample");
    }
    const double ram = ManifestDouble(primary.manifest, "hardware", "ram_bytes", 0);
    if (ram > 0) {
      model.memory.capacity_bytes = ram;
      Set(&model, "memory.capacity_bytes", false, "manifest hardware.ram_bytes");
    }
    Set(&model, "memory.batch_bytes_scale", true, "assumed 1: a queued batch holds its tensor bytes (shared memory)");
    memory_q = {{"worker_pss_bytes", QuantileSummary(pss)},
                {"main_rss_bytes", QuantileSummary(main_rss)},
                {"low_confidence", pss.size() < 2}};
  }
  quality["memory"] = memory_q;

  // ---- PCIe. ----
  nlohmann::json pcie_q = nlohmann::json::object();
  {
    double pinned_b = 0, pinned_s = 0, pageable_b = 0, pageable_s = 0;
    for (const auto& t : traces) {
      const bool pinned = ManifestBool(t.manifest, "loader", "pin_memory");
      for (const auto& b : t.batches) {
        if (b.h2d_ns <= 0 || b.h2d_bytes <= 0) continue;
        (pinned ? pinned_b : pageable_b) += static_cast<double>(b.h2d_bytes);
        (pinned ? pinned_s : pageable_s) += b.h2d_ns * kNs;
      }
    }
    if (pinned_s > 0) {
      model.pcie.h2d_pinned_bytes_per_s = pinned_b / pinned_s;
      Set(&model, "pcie.h2d_pinned_bytes_per_s", false, "sum(h2d_bytes) / sum(h2d_ns), pin_memory traces");
    } else {
      Set(&model, "pcie.h2d_pinned_bytes_per_s", true,
          "catalogue: PCIe 4.0 x16 effective, pinned source (no GPU copy measured)");
    }
    if (pageable_s > 0) {
      model.pcie.h2d_pageable_bytes_per_s = pageable_b / pageable_s;
      Set(&model, "pcie.h2d_pageable_bytes_per_s", false, "sum(h2d_bytes) / sum(h2d_ns), pageable traces");
    } else {
      Set(&model, "pcie.h2d_pageable_bytes_per_s", true,
          "catalogue: PCIe 4.0 x16, pageable source via bounce buffer (no GPU copy measured)");
    }
    Set(&model, "pcie.latency_s", true, "catalogue: 10 us per copy");
    pcie_q = {
        {"pinned_bytes", pinned_b}, {"pinned_s", pinned_s}, {"pageable_bytes", pageable_b}, {"pageable_s", pageable_s}};
  }
  quality["pcie"] = pcie_q;

  // ---- GPU step. ----
  nlohmann::json gpu_q = nlohmann::json::object();
  {
    std::map<int, std::vector<double>> by_batch_size;  // compute per micro-batch
    std::string accel = "emulated";
    for (const auto& t : traces) {
      const int bs = ManifestInt(t.manifest, "loader", "batch_size", 0);
      // One step record per micro-batch (the capture's bench) or per optimizer step.
      const bool per_micro = t.steps.size() >= t.batches.size() * 9 / 10;
      for (const auto& s : t.steps) {
        by_batch_size[bs].push_back(s.compute_ns * kNs / (per_micro ? 1.0 : static_cast<double>(s.micro_batches)));
      }
      if (!t.steps.empty() && t.manifest.value("accelerator", "") == "cuda") accel = "cuda";
    }
    const int primary_bs = ManifestInt(primary.manifest, "loader", "batch_size", 0);
    const std::vector<double>* v = by_batch_size.count(primary_bs) ? &by_batch_size[primary_bs] : nullptr;
    if (v == nullptr && !by_batch_size.empty()) v = &by_batch_size.begin()->second;
    if (v != nullptr && !v->empty()) {
      double mean = 0, m2 = 0, m3 = 0;
      for (double x : *v) mean += x;
      mean /= static_cast<double>(v->size());
      for (double x : *v) {
        m2 += (x - mean) * (x - mean);
        m3 += (x - mean) * (x - mean) * (x - mean);
      }
      m2 /= static_cast<double>(v->size());
      m3 /= static_cast<double>(v->size());
      const double sd = std::sqrt(m2);
      const double cv = mean > 0 ? sd / mean : 0;
      const double skew = sd > 0 ? m3 / (sd * sd * sd) : 0;
      model.gpu.step_time_s = mean;
      model.gpu.step_cv = cv;
      model.gpu.distribution = cv < 0.01 ? "constant" : (skew > 0.5 ? "lognormal" : "normal");
      model.gpu.accelerator = accel;
      model.gpu.measured_batch_size = by_batch_size.count(primary_bs) ? primary_bs : by_batch_size.begin()->first;
      const std::string src = accel == "cuda" ? "mean compute_ns per micro-batch (CUDA events)"
                                              : "mean compute_ns per micro-batch (emulated step: a sleep, no GPU)";
      Set(&model, "gpu.step_time_s", false, src);
      Set(&model, "gpu.step_cv", false, "coefficient of variation of compute_ns");
      gpu_q = {{"samples", v->size()}, {"distribution", QuantileSummary(*v)}, {"cv", cv}, {"skewness", skew},
               {"accelerator", accel}, {"low_confidence", v->size() < 10}};
      if (by_batch_size.size() >= 2) {
        // Two or more batch sizes: step = a + b x batch_size, by Huber on the per-step times.
        std::vector<double> xs, ys;
        for (const auto& [bs, times] : by_batch_size) {
          for (double t : times) {
            xs.push_back(bs);
            ys.push_back(t);
          }
        }
        Eigen::MatrixXd x(static_cast<Eigen::Index>(xs.size()), 1);
        Eigen::VectorXd y(static_cast<Eigen::Index>(ys.size()));
        for (size_t i = 0; i < xs.size(); ++i) {
          x(static_cast<Eigen::Index>(i), 0) = xs[i];
          y[static_cast<Eigen::Index>(i)] = ys[i];
        }
        auto fit = FitHuber(x, y, {"batch_size"}, "gpu step vs batch size");
        if (fit.ok()) {
          gpu_q["batch_size_fit"] = fit->ToJson();
          if (fit->used[1] && fit->coefficients[1] > 0) {
            model.gpu.step_intercept_s = std::max(0.0, fit->coefficients[0]);
            model.gpu.step_per_sample_s = fit->coefficients[1];
            Set(&model, "gpu.step_intercept_s", false, "Huber fit of step time on batch size (several sizes measured)");
            Set(&model, "gpu.step_per_sample_s", false,
                "Huber fit of step time on batch size (several sizes measured)");
          }
        }
        gpu_q["batch_size_scaling"] = "measured at several batch sizes: see batch_size_fit (step = a + b x batch_size)";
      } else {
        gpu_q["batch_size_scaling"] = "assumed linear (proportional): measured at one batch size only";
        warnings.push_back(
            fmt::format("gpu.step_time_s measured at batch size {} only: other sizes scale it linearly (assumed)",
                        model.gpu.measured_batch_size));
      }
      if (accel != "cuda")
        warnings.push_back("gpu.step_time_s comes from an emulated step (no GPU in the captured run)");
    } else {
      Set(&model, "gpu.step_time_s", true, "default: no step records");
      warnings.push_back("no step records: gpu.step_time_s is the default (assumed)");
    }
  }
  quality["gpu"] = gpu_q;

  // ---- Collectives. ----
  nlohmann::json coll_q = nlohmann::json::object();
  {
    std::vector<double> comm;
    int world = 1;
    for (const auto& t : traces) {
      world = std::max(world, static_cast<int>(t.manifest.value("world_size", 1)));
      for (const auto& s : t.steps) {
        if (s.comm_ns > 0) comm.push_back(s.comm_ns * kNs);
      }
    }
    if (world > 1 && !comm.empty()) {
      double mean = 0;
      for (double c : comm) mean += c;
      model.collective.time_per_step_s = mean / static_cast<double>(comm.size());
      Set(&model, "collective.time_per_step_s", false, fmt::format("mean comm_ns per step, {} ranks", world));
      warnings.push_back("collective time measured at one world size only: alpha-beta parameters are assumed");
    } else {
      Set(&model, "collective.time_per_step_s", true, "no multi-rank trace: no collective measured");
    }
    coll_q = {{"world_size", world}, {"comm_s", QuantileSummary(comm)}};
  }
  quality["collective"] = coll_q;

  // ---- Formats, measured range, provenance. ----
  nlohmann::json formats_json = models::FormatParamsToJson(formats);
  formats_json["media"] = media_json;
  std::set<std::string> containers_measured, media_measured;
  int min_w = INT32_MAX, max_w = -1, min_c = INT32_MAX, max_c = 0, min_bs = INT32_MAX, max_bs = 0;
  int min_pf = INT32_MAX, max_pf = 0;
  bool any_oversubscribed = false;
  std::set<bool> pin, persistent;
  nlohmann::json prov = nlohmann::json::array();
  for (const auto& t : traces) {
    containers_measured.insert(ContainerOfManifest(t.manifest));
    for (const auto& s : t.samples) media_measured.insert(s.format);
    const int w = ManifestInt(t.manifest, "loader", "num_workers", -1);
    const int c = ManifestInt(t.manifest, "hardware", "cores", 0);
    const int bs = ManifestInt(t.manifest, "loader", "batch_size", 0);
    const int pf = ManifestInt(t.manifest, "loader", "prefetch_factor", 2);
    if (w >= 0) min_w = std::min(min_w, w), max_w = std::max(max_w, w);
    if (c > 0) min_c = std::min(min_c, c), max_c = std::max(max_c, c);
    if (bs > 0) min_bs = std::min(min_bs, bs), max_bs = std::max(max_bs, bs);
    min_pf = std::min(min_pf, pf), max_pf = std::max(max_pf, pf);
    if (w >= 0 && c > 0 && w + 1 > c) any_oversubscribed = true;
    pin.insert(ManifestBool(t.manifest, "loader", "pin_memory"));
    persistent.insert(ManifestBool(t.manifest, "loader", "persistent_workers"));
    nlohmann::json entry = {{"path", t.path},
                            {"records",
                             {{"sample", t.samples.size()},
                              {"batch", t.batches.size()},
                              {"step", t.steps.size()},
                              {"worker", t.workers.size()},
                              {"host", t.hosts.size()}}},
                            {"complete", t.has_footer}};
    for (const char* key : {"source", "commit", "dirty", "versions", "hardware", "storage", "loader", "data", "command",
                            "start_time", "accelerator", "rank", "world_size", "per_sample_costs"}) {
      if (t.manifest.contains(key)) entry["manifest"][key] = t.manifest[key];
    }
    prov.push_back(entry);
  }
  nlohmann::json range = nlohmann::json::object();
  if (max_w >= 0) range["num_workers"] = {min_w, max_w};
  if (max_c > 0) range["cpu_cores"] = {min_c, max_c};
  if (max_w >= 0 && max_c > 0) range["max_workers_plus_main_over_cores"] = static_cast<double>(max_w + 1) / min_c;
  range["oversubscribed_measured"] = any_oversubscribed;
  if (max_bs > 0) range["batch_size"] = {min_bs, max_bs};
  range["prefetch_factor"] = {min_pf, max_pf};
  range["pin_memory"] = std::vector<bool>(pin.begin(), pin.end());
  range["persistent_workers"] = std::vector<bool>(persistent.begin(), persistent.end());
  range["formats"] = std::vector<std::string>(containers_measured.begin(), containers_measured.end());
  range["media"] = std::vector<std::string>(media_measured.begin(), media_measured.end());
  range["gpu_batch_sizes"] =
      gpu_q.contains("batch_size_fit") ? nlohmann::json("several") : nlohmann::json(model.gpu.measured_batch_size);

  model.extra["fit_quality"] = quality;
  model.extra["formats"] = formats_json;
  model.extra["measured_range"] = range;
  model.extra["provenance"] = {
      {"traces", prov},
      {"probe", options.probe_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(options.probe_path)},
      {"calibrated_by", "simreplay calibrate"},
      {"model_trace", model.trace_path}};
  model.extra["warnings"] = warnings;

  // ---- Captured configurations for the self-check. ----
  for (size_t ti = 0; ti < traces.size(); ++ti) {
    const auto& t = traces[ti];
    CapturedRun run;
    run.trace = t.path;
    run.contention = contention[ti];
    run.worker_cost_scale = as_captured ? contention[ti].as_captured_scale : contention[ti].intrinsic_scale;
    run.measured = Summarize(t);
    const auto& m = t.manifest;
    if (t.batches.empty()) run.skip_reason = "no batch records";
    if (!m.contains("loader") || !m["loader"].is_object()) run.skip_reason = "no loader config in the manifest";
    if (m.value("world_size", 1) > 1) run.skip_reason = "multi-rank trace: self-check covers single-rank runs";
    if (run.measured.wall_s <= 0) run.skip_reason = "no measurable run time";
    int grad_accum = 1;
    if (m.contains("notes") && m["notes"].is_object() && m["notes"].contains("grad_accum") &&
        m["notes"]["grad_accum"].is_number_integer()) {
      grad_accum = std::max(1, m["notes"]["grad_accum"].get<int>());
    }
    nlohmann::json loader = {{"num_workers", std::max(0, ManifestInt(m, "loader", "num_workers", 0))},
                             {"batch_size", std::max(1, ManifestInt(m, "loader", "batch_size", 1))},
                             {"prefetch_factor", std::max(1, ManifestInt(m, "loader", "prefetch_factor", 2))},
                             {"pin_memory", ManifestBool(m, "loader", "pin_memory")},
                             {"persistent_workers", ManifestBool(m, "loader", "persistent_workers") &&
                                                        ManifestInt(m, "loader", "num_workers", 0) > 0},
                             {"drop_last", ManifestBool(m, "loader", "drop_last")},
                             {"shuffle", ManifestBool(m, "loader", "shuffle")}};
    nlohmann::json train = {{"steps", std::max<int64_t>(1, static_cast<int64_t>(t.batches.size()) / grad_accum)},
                            {"grad_accum", grad_accum}};
    const double files = ManifestDouble(m, "data", "files", 0);
    if (files > 0) train["dataset_samples"] = static_cast<int64_t>(files);
    run.scenario = {{"name", "self-check " + t.path},
                    {"trace", std::filesystem::absolute(t.path).string()},
                    {"loader", loader},
                    {"hardware", {{"cpu_cores", std::max(0, ManifestInt(m, "hardware", "cores", 0))}, {"gpus", 1}}},
                    {"train", train},
                    {"seed", 0}};
    result.captured.push_back(std::move(run));
  }
  return result;
}

Result<nlohmann::json> SelfCheck(const CalibrationResult& result, const std::string& temp_dir,
                                 const SimulateFn& simulate) {
  nlohmann::json rows = nlohmann::json::array();
  double worst = 0;
  int checked = 0;
  for (const auto& run : result.captured) {
    nlohmann::json row = {{"trace", run.trace}};
    if (!run.skip_reason.empty()) {
      row["skipped"] = run.skip_reason;
      rows.push_back(row);
      continue;
    }
    models::ModelParams model = result.model;
    model.cpu.worker_cost_scale = run.worker_cost_scale;
    model.trace_path = std::filesystem::absolute(run.trace).string();
    model.extra = nlohmann::json::object();
    const std::string model_path =
        std::filesystem::absolute(fmt::format("{}/selfcheck-model.{}.{}.json", temp_dir, ::getpid(), checked)).string();
    SIMREPLAY_RETURN_IF_ERROR(WriteFileAtomically(model_path, models::ModelToJson(model).dump(2)));
    nlohmann::json scenario_json = run.scenario;
    scenario_json["model"] = model_path;
    auto scenario = scenarios::ParseScenario(scenario_json, "self-check scenario for " + run.trace, temp_dir);
    if (!scenario.ok()) {
      std::filesystem::remove(model_path);
      return scenario.status();
    }
    auto sim = simulate(*scenario);
    std::filesystem::remove(model_path);
    if (!sim.ok()) return Status(sim.status());
    const auto& m = (*sim)["metrics"];
    const double p_tp = m["train_throughput_samples_per_s"].get<double>();
    const double p_idle = m["gpu_idle_fraction"].get<double>();
    const double p_wait = m["data_wait_s"]["mean"].get<double>();
    const auto& meas = run.measured;
    const double err = meas.train_throughput_samples_per_s > 0
                           ? 100.0 * (p_tp - meas.train_throughput_samples_per_s) / meas.train_throughput_samples_per_s
                           : 0;
    worst = std::max(worst, std::abs(err));
    ++checked;
    row["config"] = {{"loader", run.scenario["loader"]},
                     {"cpu_cores", run.scenario["hardware"]["cpu_cores"]},
                     {"steps", run.scenario["train"]["steps"]},
                     {"worker_cost_scale", run.worker_cost_scale}};
    row["predicted"] = {{"train_throughput_samples_per_s", p_tp},
                        {"gpu_idle_fraction", p_idle},
                        {"mean_data_wait_s", p_wait},
                        {"pipeline_throughput_samples_per_s", m["pipeline_throughput_samples_per_s"]}};
    row["measured"] = meas.ToJson();
    row["error"] = {
        {"train_throughput_pct", err},
        {"gpu_idle_points", 100.0 * (p_idle - meas.gpu_idle_fraction)},
        {"mean_data_wait_pct",
         meas.mean_data_wait_s > 0 ? 100.0 * (p_wait - meas.mean_data_wait_s) / meas.mean_data_wait_s : 0.0}};
    if (sim->contains("warnings")) row["simulator_warnings"] = (*sim)["warnings"];
    rows.push_back(row);
  }
  return nlohmann::json{{"mode",
                         "the captured configuration simulated on the calibrated model, with that trace's own "
                         "worker_cost_scale of the kind the model holds (--cpu-scale)"},
                        {"runs", rows},
                        {"checked", checked},
                        {"max_abs_train_throughput_error_pct", worst},
                        {"target_pct", 3.0},
                        {"within_target", checked > 0 && worst <= 3.0}};
}

std::string FormatSelfCheckTable(const nlohmann::json& sc) {
  std::string out = "self-check (captured configuration simulated on the calibrated model)\n";
  out += fmt::format("{:<40} {:>14} {:>14} {:>9}\n", "quantity", "predicted", "measured", "error");
  for (const auto& row : sc["runs"]) {
    out += "trace " + row["trace"].get<std::string>() + "\n";
    if (row.contains("skipped")) {
      out += "  skipped: " + row["skipped"].get<std::string>() + "\n";
      continue;
    }
    const auto& p = row["predicted"];
    const auto& m = row["measured"];
    const auto& e = row["error"];
    out += fmt::format("  {:<38} {:>14.3f} {:>14.3f} {:>+8.2f}%\n", "train throughput (samples/s)",
                       p["train_throughput_samples_per_s"].get<double>(),
                       m["train_throughput_samples_per_s"].get<double>(), e["train_throughput_pct"].get<double>());
    out += fmt::format("  {:<38} {:>13.2f}% {:>13.2f}% {:>+7.2f}pt\n", "GPU idle",
                       100 * p["gpu_idle_fraction"].get<double>(), 100 * m["gpu_idle_fraction"].get<double>(),
                       e["gpu_idle_points"].get<double>());
    out += fmt::format("  {:<38} {:>14.5f} {:>14.5f} {:>+8.2f}%\n", "mean data wait (s)",
                       p["mean_data_wait_s"].get<double>(), m["mean_data_wait_s"].get<double>(),
                       e["mean_data_wait_pct"].get<double>());
  }
  out += fmt::format("max |throughput error| {:.2f}% (target <= {:.0f}%)\n",
                     sc["max_abs_train_throughput_error_pct"].get<double>(), sc["target_pct"].get<double>());
  return out;
}

}  // namespace simreplay::calibrate
