#include "calibrate/trace_data.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "common/quantile.h"
#include "replay/manifest.h"
#include "replay/trace_reader.h"

namespace simreplay::calibrate {

namespace {

Status Contradiction(const std::string& path, int64_t line, const std::string& what) {
  return Status::InvalidArgument(fmt::format("{}:{}: contradictory fields: {}", path, line, what));
}

// Each rank's step record indices, in trace order.
std::map<int64_t, std::vector<size_t>> StepIndicesByRank(const TraceData& t) {
  std::map<int64_t, std::vector<size_t>> by_rank;
  for (size_t i = 0; i < t.steps.size(); ++i) by_rank[t.steps[i].rank].push_back(i);
  return by_rank;
}

// A sample's thread CPU time cannot exceed its call's wall time, yet a VM's clocks under steal produce
// one now and then (a what-if base capture, 2026-12-08, at 15-29% steal: 5.07 ms of CPU in a 2.60 ms
// call, once in 2,160 samples). A stray one is clamped to its wall time and named in a warning; a
// trace where more than kMaxStrayCpuShare of the samples do it is refused, as a tracer that measures
// CPU wrongly would be.
constexpr double kMaxStrayCpuShare = 0.01;

Status ClampStrayCpuTimes(const std::vector<size_t>& impossible, TraceData* t) {
  if (impossible.empty()) return Status::Ok();
  const auto& first = t->samples[impossible.front()];
  const int64_t first_wall = std::max(first.wall_ns, first.read_ns + first.decode_ns + first.augment_ns);
  const int64_t first_line = t->sample_lines[impossible.front()];
  if (static_cast<double>(impossible.size()) > kMaxStrayCpuShare * static_cast<double>(t->samples.size())) {
    return Contradiction(t->path, first_line,
                         fmt::format("cpu_ns {} exceeds the call's wall time {} ns (thread CPU time cannot), and {} of "
                                     "{} samples do",
                                     first.cpu_ns, first_wall, impossible.size(), t->samples.size()));
  }
  for (size_t i : impossible) {
    auto& s = t->samples[i];
    s.cpu_ns = std::max(s.wall_ns, s.read_ns + s.decode_ns + s.augment_ns);
  }
  t->warnings.push_back(fmt::format(
      "{}:{}: {} of {} samples record more thread CPU than their call's wall time (here cpu_ns {} in {} ns; a VM's "
      "clocks under steal do this): clamped to the wall time",
      t->path, first_line, impossible.size(), t->samples.size(), first.cpu_ns, first_wall));
  return Status::Ok();
}

}  // namespace

using replay::ManifestInt;
using replay::ManifestBool;

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

// Rejects traces that measured nothing or contradict themselves; clamps stray impossible CPU times.
Status ValidateTrace(TraceData* trace) {
  const TraceData& t = *trace;
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
  std::vector<size_t> impossible_cpu;  // samples whose thread CPU time exceeds their call's wall time
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
    // The call's wall time: the record's own when it has one (the stages do not cover the whole call:
    // a sample of the held-out video set, 2026-12-02, spent 1.7 ms in its stages and 3.6 ms in the
    // call, with 3.6 ms of thread CPU), else the stages' sum.
    const int64_t wall = std::max(s.wall_ns, s.read_ns + s.decode_ns + s.augment_ns);
    if (s.cpu_ns > wall + wall / 2 + 1'000'000) impossible_cpu.push_back(i);
  }
  SIMREPLAY_RETURN_IF_ERROR(ClampStrayCpuTimes(impossible_cpu, trace));
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

replay::RunWindow WindowOf(const TraceData& t) {
  replay::RunWindow w;
  for (const auto& e : t.events) {
    if (e.value("kind", "") == "epoch_start" && e.contains("t_ns") && e["t_ns"].is_number_integer()) {
      w.AddEpochStart(e["t_ns"].get<int64_t>());
    }
  }
  for (const auto& b : t.batches) w.AddBatch(b);
  for (const auto& s : t.steps) w.AddStep(s);
  for (const auto& s : t.samples) w.AddSample(s);
  return w;
}

StepWarmup FindStepWarmup(const TraceData& t) {
  StepWarmup w;
  w.is_warmup.assign(t.steps.size(), false);
  w.host_cpu = t.manifest.value("accelerator", "") != "cuda";
  // The cost whose one-time part is looked for: the GPU's compute, or an emulated step's host CPU
  // (unrecorded: -1, then no warm-up is found).
  auto cost = [&](size_t i) {
    return static_cast<double>(w.host_cpu ? t.steps[i].cpu_ns : t.steps[i].compute_ns);
  };
  const std::map<int64_t, std::vector<size_t>> by_rank = StepIndicesByRank(t);
  for (const auto& [rank, idx] : by_rank) {
    if (idx.size() < 4) continue;
    std::vector<double> after_first;
    for (size_t k = 1; k < idx.size(); ++k) after_first.push_back(cost(idx[k]));
    const double median = Median(after_first);
    if (median <= 0) continue;
    size_t n = 0;
    while (n < idx.size() / 4 && cost(idx[n]) > kStepWarmupFactor * median) ++n;
    if (n == 0) continue;
    double warm = 0, steady = 0;
    for (size_t k = 0; k < idx.size(); ++k) (k < n ? warm : steady) += cost(idx[k]);
    const double steady_mean = steady / static_cast<double>(idx.size() - n);
    for (size_t k = 0; k < n; ++k) w.is_warmup[idx[k]] = true;
    w.steps += static_cast<int64_t>(n);
    w.extra_s = std::max(w.extra_s, (warm - steady_mean * static_cast<double>(n)) * kNs);
  }
  return w;
}

AfterForkSteps FindAfterForkSteps(const TraceData& t) {
  AfterForkSteps f;
  f.later.assign(t.steps.size(), false);
  f.first.assign(t.steps.size(), false);
  if (ManifestInt(t.manifest, "loader", "num_workers", 0) <= 0) return f;
  const bool persistent = ManifestBool(t.manifest, "loader", "persistent_workers");
  const std::map<int64_t, std::vector<size_t>> by_rank = StepIndicesByRank(t);
  for (const auto& e : t.events) {
    if (e.value("kind", "") != "epoch_start" || !e.contains("t_ns") || !e["t_ns"].is_number()) continue;
    const int64_t epoch = e.value("epoch", static_cast<int64_t>(0));
    if (epoch > 0 && persistent) continue;  // persistent workers are forked once
    const auto t_ns = e["t_ns"].get<int64_t>();
    for (const auto& [rank, idx] : by_rank) {
      if (e.contains("rank") && e["rank"].is_number() && e["rank"].get<int64_t>() != rank) continue;
      auto it = std::find_if(idx.begin(), idx.end(), [&](size_t i) { return t.steps[i].t_start_ns >= t_ns; });
      if (it != idx.end()) (epoch > 0 ? f.later : f.first)[*it] = true;
    }
  }
  return f;
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
  m.gpu_warmup_excluded_s = FindStepWarmup(t).extra_s;
  compute -= m.gpu_warmup_excluded_s;
  m.wall_s = WindowOf(t).wall_s() - m.gpu_warmup_excluded_s;
  if (m.wall_s > 0) {
    m.train_throughput_samples_per_s = m.samples / m.wall_s;
    m.gpu_idle_fraction = std::clamp(1 - compute / m.wall_s, 0.0, 1.0);
  }
  m.mean_data_wait_s = m.batches > 0 ? wait / m.batches : 0;
  return m;
}

nlohmann::json MeasuredSummary::ToJson() const {
  nlohmann::json j = {{"samples", samples},
                      {"batches", batches},
                      {"wall_s", wall_s},
                      {"train_throughput_samples_per_s", train_throughput_samples_per_s},
                      {"gpu_idle_fraction", gpu_idle_fraction},
                      {"mean_data_wait_s", mean_data_wait_s}};
  if (gpu_warmup_excluded_s > 0) j["gpu_warmup_excluded_s"] = gpu_warmup_excluded_s;
  return j;
}

}  // namespace simreplay::calibrate
