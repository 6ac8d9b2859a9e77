#include "advise/observations.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <variant>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/json_fields.h"
#include "common/quantile.h"
#include "replay/run_window.h"
#include "replay/trace_reader.h"

namespace simreplay::advise {

namespace {

StageDistribution Distribute(const std::string& stage, const std::vector<double>& values_s,
                             const char* record = "sample") {
  StageDistribution d;
  d.stage = stage;
  d.record = record;
  d.count = static_cast<int64_t>(values_s.size());
  if (values_s.empty()) return d;
  std::vector<double> sorted = values_s;
  std::sort(sorted.begin(), sorted.end());
  d.mean_s = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(sorted.size());
  d.p50_s = SortedQuantileLinear(sorted, 0.5);
  d.p95_s = SortedQuantileLinear(sorted, 0.95);
  d.p99_s = SortedQuantileLinear(sorted, 0.99);
  d.max_s = sorted.back();
  return d;
}

// Everything gathered in the one pass over the records that is not kept in TraceRecords.
struct Collected {
  replay::RunWindow window;
  std::vector<double> read_s, decode_s, augment_s, unsplit_s, collate_s, pin_s, h2d_s;
  std::vector<std::pair<int64_t, double>> host_memory;  // (t_ns, bytes)
  int64_t first_next_ns = INT64_MAX;
  double first_wait_s = 0;
  int max_rank = 0;
  TraceRecords records;
};

int FormatIndex(const std::string& format, TraceRecords* r) {
  auto it = std::find(r->formats.begin(), r->formats.end(), format);
  if (it != r->formats.end()) return static_cast<int>(it - r->formats.begin());
  r->formats.push_back(format);
  return static_cast<int>(r->formats.size()) - 1;
}

// A `collective` record's fields, validated as the reader validates its own records.
Status CollectCollective(const nlohmann::json& json, const std::string& where, TraceRecords* r) {
  JsonFields f(json, where);
  CollectiveObservation c;
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("rank", &c.rank));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("step", &c.step, JsonFields::Sign::kAny));
  if (c.step < -1) return f.Error("field 'step' must be >= -1 (-1 = outside any step)");
  SIMREPLAY_RETURN_IF_ERROR(f.GetString("op", &c.op));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("t_start_ns", &c.t_start_ns, JsonFields::Sign::kAny));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("duration_ns", &c.duration_ns));
  r->collectives.push_back(std::move(c));
  return Status::Ok();
}

Status Collect(const replay::TraceRecord& record, const std::string& where, Observations* o, Collected* c) {
  TraceRecords& kept = c->records;
  if (const auto* s = std::get_if<replay::SampleRecord>(&record)) {
    c->window.AddSample(*s);
    c->max_rank = std::max(c->max_rank, static_cast<int>(s->rank));
    o->has_sample_records = true;
    if (s->unsplit) {
      c->unsplit_s.push_back(s->decode_ns * kNsToS);
    } else {
      c->read_s.push_back(s->read_ns * kNsToS);
      c->decode_s.push_back(s->decode_ns * kNsToS);
      c->augment_s.push_back(s->augment_ns * kNsToS);
    }
    SampleCost cost;
    cost.rank = s->rank;
    cost.epoch = s->epoch;
    cost.batch = s->batch;
    cost.worker = s->worker;
    cost.t_start_ns = s->t_start_ns;
    cost.read_ns = s->read_ns;
    cost.decode_ns = s->decode_ns;
    cost.augment_ns = s->augment_ns;
    cost.read_bytes = s->read_bytes;
    cost.unsplit = s->unsplit;
    cost.format = FormatIndex(s->format, &kept);
    cost.cpu_ns = s->cpu_ns;
    cost.minflt = s->minflt;
    cost.pixels = s->width * s->height * std::max<int64_t>(1, s->frames);
    kept.samples.push_back(cost);
  } else if (const auto* b = std::get_if<replay::BatchRecord>(&record)) {
    c->window.AddBatch(*b);
    c->max_rank = std::max(c->max_rank, static_cast<int>(b->rank));
    kept.batches.push_back(*b);
    if (b->rank != 0) return Status::Ok();
    ++o->batches;
    o->samples += b->size;
    o->data_wait_s += b->wait_ns * kNsToS;
    o->copy_s += (b->pin_ns + b->h2d_ns) * kNsToS;
    c->collate_s.push_back(b->collate_ns * kNsToS);
    if (b->pin_ns > 0) c->pin_s.push_back(b->pin_ns * kNsToS);
    if (b->h2d_ns > 0) c->h2d_s.push_back(b->h2d_ns * kNsToS);
    const int64_t next_ns = b->t_next_start_ns >= 0 ? b->t_next_start_ns : b->t_ready_ns - b->wait_ns;
    if (next_ns < c->first_next_ns) {
      c->first_next_ns = next_ns;
      c->first_wait_s = b->wait_ns * kNsToS;
    }
  } else if (const auto* st = std::get_if<replay::StepRecord>(&record)) {
    c->window.AddStep(*st);
    c->max_rank = std::max(c->max_rank, static_cast<int>(st->rank));
    kept.steps.push_back(*st);
    if (st->rank != 0) return Status::Ok();
    ++o->steps;
    o->compute_s += st->compute_ns * kNsToS;
    o->comm_s += st->comm_ns * kNsToS;
  } else if (const auto* w = std::get_if<replay::WorkerRecord>(&record)) {
    kept.workers.push_back(*w);
    if (w->worker >= 0) o->max_worker_pss_bytes = std::max(o->max_worker_pss_bytes, static_cast<double>(w->pss_bytes));
  } else if (const auto* h = std::get_if<replay::HostRecord>(&record)) {
    kept.hosts.push_back(*h);
    c->host_memory.emplace_back(h->t_ns, static_cast<double>(h->mem_used_bytes));
  } else if (const auto* other = std::get_if<replay::OtherRecord>(&record)) {
    if (other->type == "collective") return CollectCollective(other->json, where, &kept);
    if (other->type == "event" && other->json.value("kind", "") == "epoch_start") {
      const int64_t t = other->json.value("t_ns", int64_t{0});
      c->window.AddEpochStart(t);
      kept.epoch_starts_ns.push_back(t);
    }
  }
  return Status::Ok();
}

// Per format, the per-sample stage distributions; formats in name order.
std::vector<MediaStageCosts> MediaCosts(const TraceRecords& r) {
  struct Times {
    std::vector<double> read, decode, augment, unsplit;
    double read_bytes = 0;
  };
  std::map<std::string, Times> by_format;
  for (const auto& s : r.samples) {
    Times& t = by_format[r.formats[static_cast<size_t>(s.format)]];
    t.read_bytes += static_cast<double>(s.read_bytes);
    if (s.unsplit) {
      t.unsplit.push_back(s.decode_ns * kNsToS);
    } else {
      t.read.push_back(s.read_ns * kNsToS);
      t.decode.push_back(s.decode_ns * kNsToS);
      t.augment.push_back(s.augment_ns * kNsToS);
    }
  }
  std::vector<MediaStageCosts> out;
  for (const auto& [format, t] : by_format) {
    MediaStageCosts m;
    m.format = format;
    m.samples = static_cast<int64_t>(t.read.size() + t.unsplit.size());
    m.read_bytes = t.read_bytes;
    if (!t.read.empty()) {
      m.stages.push_back(Distribute("read", t.read));
      m.stages.push_back(Distribute("decode", t.decode));
      m.stages.push_back(Distribute("augment", t.augment));
    }
    if (!t.unsplit.empty()) m.stages.push_back(Distribute("getitem (unsplit)", t.unsplit));
    out.push_back(std::move(m));
  }
  return out;
}

Status ReadTrace(const std::string& path, bool first, Observations* o, Collected* c, bool* footer) {
  auto reader = replay::TraceReader::Open(path);
  if (!reader.ok()) return reader.status();
  if (first) {
    c->records.manifest = (*reader)->header().manifest;
    o->accelerator = c->records.manifest.value("accelerator", "emulated") == "cuda" ? "cuda" : "emulated";
  }
  replay::TraceRecord record;
  while (true) {
    auto more = (*reader)->Next(&record);
    if (!more.ok()) return more.status();
    if (!*more) break;
    if (const auto* other = std::get_if<replay::OtherRecord>(&record); other != nullptr && other->type == "footer") {
      *footer = true;
    }
    SIMREPLAY_RETURN_IF_ERROR(
        Collect(record, path + ":" + std::to_string((*reader)->line_number()), o, c));
  }
  for (const auto& w : (*reader)->warnings()) o->warnings.push_back(w);
  return Status::Ok();
}

// The findings computed from the kept records (one module per concern).
void ObserveFindings(const ObserveOptions& options, Observations* o, const TraceRecords& r) {
  o->media = MediaCosts(r);
  o->cpu = ObserveCpu(r);
  const double step_period_s = o->steps > 0 ? o->wall_s / static_cast<double>(o->steps) : 0;
  o->worker_memory = ObserveWorkerMemory(r, options.horizon, o->train_samples_per_s, step_period_s);
  o->headroom = ObserveHeadroom(r, o->worker_memory);
  o->epoch_stalls = ObserveEpochStalls(r);
  o->head_of_line = ObserveHeadOfLine(r);
  o->collectives = ObserveCollectives(r);
  o->samples_per_worker = ObserveSamplesPerWorker(r);
  o->storage = ObserveStorage(r, options.storage_probe);
  o->page_faults = ObservePageFaults(r);
}

// What the findings could not see, in words (after the ones about samples, host records and footers).
void SayWhatFindingsCannotSee(const Observations& o, const TraceRecords& r, std::vector<std::string>* out) {
  if (!r.samples.empty() && !o.page_faults.visible) {
    out->push_back("no sample records its page faults (minflt, captured from 2026-12-04 on): page-fault churn is "
                   "not visible");
  }
  if (o.cpu.mean_worker_busy_fraction < 0) {
    out->push_back(r.workers.empty()
                       ? "no worker records: worker busy fractions and worker memory are not visible"
                       : "no loader worker process has two or more worker records (short-lived workers sampled once "
                         "or never): worker busy fractions are not visible");
  }
  if (o.cpu.host_visible && o.cpu.host_cpus == 0) {
    out->push_back("the manifest records no hardware.threads or hardware.cores: host CPU busy is given in busy "
                   "CPUs, not as a fraction");
  }
  if (!o.worker_memory.processes.empty() && o.worker_memory.horizon.epoch_s < 0) {
    out->push_back("the epoch's length is not known (fewer than two epoch_start events, no dataset size): worker "
                   "memory is not projected to an epoch's end");
  }
  if (!o.worker_memory.processes.empty() && o.worker_memory.horizon.run_s < 0) {
    out->push_back("the run's length is not known (no scenario with train.steps or train.epochs): worker memory is "
                   "not projected to the run's end");
  }
  if (!r.hosts.empty() && !o.headroom.visible) {
    out->push_back("no host.mem_total_bytes and no manifest.hardware.ram_bytes: host-memory headroom is not visible");
  }
  if (!o.epoch_stalls.visible && o.batches > 0) {
    out->push_back("rank 0's batches cover fewer than two epochs: epoch-boundary stalls are not visible");
  }
  if (o.ranks > 1 && r.collectives.empty()) {
    out->push_back("no collective records: which rank arrives last at collectives is not visible");
  }
  if (o.ranks > 1 && !r.hosts.empty()) {
    out->push_back("host records carry no node: on a trace of several ranks, host CPU and memory figures mix the "
                   "nodes whose host records the trace kept");
  }
  if (o.samples_per_worker.visible && o.samples_per_worker.num_workers < 0) {
    out->push_back("no manifest.loader.num_workers: a worker that produced nothing cannot be told apart");
  }
}

}  // namespace

Result<Observations> ObserveTrace(const std::string& trace_path, const ObserveOptions& options) {
  return ObserveTraces({trace_path}, options);
}

Result<Observations> ObserveTraces(const std::vector<std::string>& trace_paths, const ObserveOptions& options) {
  Observations o;
  o.trace_path = trace_paths.front();
  o.trace_paths = trace_paths;
  Collected c;
  std::vector<std::string> unfinished;
  for (size_t i = 0; i < trace_paths.size(); ++i) {
    bool footer = false;
    SIMREPLAY_RETURN_IF_ERROR(ReadTrace(trace_paths[i], i == 0, &o, &c, &footer));
    if (!footer) unfinished.push_back(trace_paths[i]);
  }
  o.ranks = c.max_rank + 1;
  o.wall_s = c.window.wall_s();
  if (o.wall_s > 0) o.train_samples_per_s = static_cast<double>(o.samples) * o.ranks / o.wall_s;
  o.other_s = std::max(0.0, o.wall_s - o.data_wait_s - o.copy_s - o.compute_s - o.comm_s);
  o.first_batch_wait_s = c.first_next_ns == INT64_MAX ? 0 : c.first_wait_s;
  if (!c.read_s.empty()) {
    o.stages.push_back(Distribute("read", c.read_s));
    o.stages.push_back(Distribute("decode", c.decode_s));
    o.stages.push_back(Distribute("augment", c.augment_s));
  }
  if (!c.unsplit_s.empty()) o.stages.push_back(Distribute("getitem (unsplit)", c.unsplit_s));
  if (!c.collate_s.empty()) o.stages.push_back(Distribute("collate", c.collate_s, "batch"));
  if (!c.pin_s.empty()) o.stages.push_back(Distribute("pin", c.pin_s, "batch"));
  if (!c.h2d_s.empty()) o.stages.push_back(Distribute("h2d", c.h2d_s, "batch"));
  const int64_t t0 = c.window.start_ns();
  for (const auto& [t_ns, bytes] : c.host_memory) {
    o.memory.push_back({std::max<int64_t>(0, t_ns - t0) * kNsToS, bytes});
    o.peak_host_memory_bytes = std::max(o.peak_host_memory_bytes, bytes);
  }
  c.records.window_start_ns = t0;
  c.records.wall_s = o.wall_s;
  ObserveFindings(options, &o, c.records);
  if (!o.has_sample_records) {
    o.cannot_see.push_back(
        "no sample records (a Kineto import or a capture without per-sample hooks): per-sample read, decode and "
        "augment costs, their distributions and the storage share are not visible; the breakdown below is the "
        "training loop's only");
  } else if (!c.unsplit_s.empty()) {
    o.cannot_see.push_back(fmt::format(
        "{} samples were recorded unsplit (the whole __getitem__ in one figure): read and decode are not "
        "separated for them",
        c.unsplit_s.size()));
  }
  if (c.host_memory.empty()) o.cannot_see.push_back("no host records: host memory over time is not visible");
  if (!unfinished.empty()) {
    o.cannot_see.push_back(fmt::format(
        "no footer record{}: the capture did not finish (killed or truncated); every figure comes from the complete "
        "records before its end",
        trace_paths.size() > 1 ? " in " + fmt::format("{}", fmt::join(unfinished, ", ")) : ""));
  }
  if (o.ranks > 1) {
    o.cannot_see.push_back(fmt::format("the loop breakdown is rank 0's of {} ranks", o.ranks));
  }
  SayWhatFindingsCannotSee(o, c.records, &o.cannot_see);
  return o;
}

std::string ObservedSummary(const Observations& o) {
  if (o.wall_s <= 0) return "the trace holds no timed batches or steps: nothing observed";
  auto pct = [&](double s) { return 100 * s / o.wall_s; };
  const double shares[] = {o.data_wait_s, o.copy_s, o.compute_s, o.comm_s, o.other_s};
  const char* names[] = {"waiting for data in next()", "copying batches (pin + H2D)", "in the training step's compute",
                         "in communication", "outside the loader and the step"};
  const size_t top = static_cast<size_t>(std::max_element(std::begin(shares), std::end(shares)) - std::begin(shares));
  return fmt::format("observed: the training loop spent {:.0f}% of its {:.2f} s wall time {} (data wait {:.0f}%, "
                     "copies {:.0f}%, compute {:.0f}%, communication {:.0f}%, other {:.0f}%); {:.1f} samples/s",
                     pct(shares[top]), o.wall_s, names[top], pct(o.data_wait_s), pct(o.copy_s), pct(o.compute_s),
                     pct(o.comm_s), pct(o.other_s), o.train_samples_per_s);
}

}  // namespace simreplay::advise
