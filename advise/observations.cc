#include "advise/observations.h"

#include <algorithm>
#include <numeric>
#include <variant>

#include <fmt/format.h>

#include "common/quantile.h"
#include "replay/run_window.h"
#include "replay/trace_reader.h"

namespace simreplay::advise {

namespace {

constexpr double kNsToS = 1e-9;

StageDistribution Distribute(const std::string& stage, const std::vector<double>& values_s) {
  StageDistribution d;
  d.stage = stage;
  d.count = static_cast<int64_t>(values_s.size());
  if (values_s.empty()) return d;
  d.mean_s = std::accumulate(values_s.begin(), values_s.end(), 0.0) / static_cast<double>(values_s.size());
  d.p50_s = QuantileLinear(values_s, 0.5);
  d.p95_s = QuantileLinear(values_s, 0.95);
  d.max_s = *std::max_element(values_s.begin(), values_s.end());
  return d;
}

// Everything gathered in the one pass over the records.
struct Collected {
  replay::RunWindow window;
  std::vector<double> read_s, decode_s, augment_s, unsplit_s, collate_s, pin_s, h2d_s;
  std::vector<std::pair<int64_t, double>> host_memory;  // (t_ns, bytes)
  int64_t first_next_ns = INT64_MAX;
  double first_wait_s = 0;
  bool footer = false;
  int max_rank = 0;
};

void Collect(const replay::TraceRecord& record, Observations* o, Collected* c) {
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
  } else if (const auto* b = std::get_if<replay::BatchRecord>(&record)) {
    c->window.AddBatch(*b);
    c->max_rank = std::max(c->max_rank, static_cast<int>(b->rank));
    if (b->rank != 0) return;
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
    if (st->rank != 0) return;
    ++o->steps;
    o->compute_s += st->compute_ns * kNsToS;
    o->comm_s += st->comm_ns * kNsToS;
  } else if (const auto* w = std::get_if<replay::WorkerRecord>(&record)) {
    if (w->worker >= 0) o->max_worker_pss_bytes = std::max(o->max_worker_pss_bytes, static_cast<double>(w->pss_bytes));
  } else if (const auto* h = std::get_if<replay::HostRecord>(&record)) {
    c->host_memory.emplace_back(h->t_ns, static_cast<double>(h->mem_used_bytes));
  } else if (const auto* other = std::get_if<replay::OtherRecord>(&record)) {
    if (other->type == "footer") c->footer = true;
    if (other->type == "event" && other->json.value("kind", "") == "epoch_start") {
      c->window.AddEpochStart(other->json.value("t_ns", int64_t{0}));
    }
  }
}

}  // namespace

Result<Observations> ObserveTrace(const std::string& trace_path) {
  auto reader = replay::TraceReader::Open(trace_path);
  if (!reader.ok()) return reader.status();
  Observations o;
  o.trace_path = trace_path;
  const auto& manifest = (*reader)->header().manifest;
  o.accelerator = manifest.value("accelerator", "emulated") == "cuda" ? "cuda" : "emulated";
  Collected c;
  replay::TraceRecord record;
  while (true) {
    auto more = (*reader)->Next(&record);
    if (!more.ok()) return more.status();
    if (!*more) break;
    Collect(record, &o, &c);
  }
  o.warnings = (*reader)->warnings();
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
  if (!c.collate_s.empty()) o.stages.push_back(Distribute("collate", c.collate_s));
  if (!c.pin_s.empty()) o.stages.push_back(Distribute("pin", c.pin_s));
  if (!c.h2d_s.empty()) o.stages.push_back(Distribute("h2d", c.h2d_s));
  const int64_t t0 = c.window.start_ns();
  for (const auto& [t_ns, bytes] : c.host_memory) {
    o.memory.push_back({std::max<int64_t>(0, t_ns - t0) * kNsToS, bytes});
    o.peak_host_memory_bytes = std::max(o.peak_host_memory_bytes, bytes);
  }
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
  if (!c.footer) {
    o.cannot_see.push_back(
        "no footer record: the capture did not finish (killed or truncated); every figure comes from the complete "
        "records before its end");
  }
  if (o.ranks > 1) {
    o.cannot_see.push_back(fmt::format("the loop breakdown is rank 0's of {} ranks", o.ranks));
  }
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
