#include "replay/sample_costs.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "replay/lifetime_warmup.h"
#include "replay/manifest.h"
#include "replay/run_window.h"
#include "replay/trace_reader.h"

namespace simreplay::replay {

namespace {

constexpr double kNs = 1e-9;

struct Keyed {
  std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t> key;  // rank, epoch, batch, t_start, index
  SampleCost cost;
  size_t record = 0;  // index into the kept sample records (warm-up removal)
};

// Cap on the factor a lifetime's window costs are multiplied by: a window cheaper than the steady cost
// (negative excess) is raised to it, never beyond twice its recorded cost.
constexpr double kMaxWindowFactor = 2.0;

// Each lifetime's excess out of its window samples, as a factor on their decode and augment costs
// (the excess is thread CPU; those stages hold it).
void RemoveWarmupExcess(const LifetimeWarmup& warmup, const std::vector<size_t>& position_of_record,
                        const std::vector<SampleRecord>& records, std::vector<SampleCost>* samples) {
  for (const auto& l : warmup.lifetimes) {
    if (!l.priced || l.window_cpu_s <= 0) continue;
    const double factor = std::clamp(1 - l.excess_cpu_s / l.window_cpu_s, 0.0, kMaxWindowFactor);
    const size_t n = std::min<size_t>(l.samples.size(), static_cast<size_t>(warmup.window));
    for (size_t o = 0; o < n; ++o) {
      SampleCost& c = (*samples)[position_of_record[static_cast<size_t>(l.samples[o] - records.data())]];
      c.decode_s *= factor;
      c.augment_s *= factor;
    }
  }
}

int32_t FormatId(SampleCostTable* table, const std::string& format) {
  auto it = std::find(table->formats.begin(), table->formats.end(), format);
  if (it != table->formats.end()) return static_cast<int32_t>(it - table->formats.begin());
  table->formats.push_back(format);
  return static_cast<int32_t>(table->formats.size() - 1);
}

}  // namespace

Result<SampleCostTable> LoadSampleCosts(const std::vector<std::string>& trace_paths, const RecordedWarmup& warmup) {
  SampleCostTable table;
  std::vector<Keyed> keyed;
  // Kept only for the warm-up removal: every trace's sample records, and where each trace's records begin.
  std::vector<SampleRecord> records;
  std::vector<std::pair<size_t, bool>> trace_starts;  // (first record, persistent workers)
  std::vector<BatchRecord> batches;
  std::set<std::pair<int64_t, int64_t>> indices;  // (rank, index)
  double step_compute_sum = 0, comm_sum = 0;
  int64_t micro_batches = 0, steps = 0;
  RunWindow window;
  for (const auto& path : trace_paths) {
    auto reader = TraceReader::Open(path);
    if (!reader.ok()) return reader.status();
    if (table.manifest.empty()) table.manifest = (*reader)->header().manifest;
    const bool persistent = ManifestBool((*reader)->header().manifest, "loader", "persistent_workers");
    trace_starts.push_back({records.size(), persistent});
    TraceRecord record;
    while (true) {
      auto more = (*reader)->Next(&record);
      if (!more.ok()) return more.status();
      if (!*more) break;
      if (auto* s = std::get_if<SampleRecord>(&record)) {
        SampleCost c{s->read_ns * kNs, s->decode_ns * kNs,          s->augment_ns * kNs, s->read_bytes,
                     s->out_bytes,     FormatId(&table, s->format), s->unsplit,
                     s->width,         s->height,           s->frames};
        keyed.push_back({{s->rank, s->epoch, s->batch, s->t_start_ns, s->index}, c, records.size()});
        if (warmup.window > 0) records.push_back(*s);
        window.AddSample(*s);
        indices.insert({0, s->index});
      } else if (auto* b = std::get_if<BatchRecord>(&record)) {
        batches.push_back(*b);
        window.AddBatch(*b);
      } else if (auto* st = std::get_if<StepRecord>(&record)) {
        step_compute_sum += st->compute_ns * kNs;
        comm_sum += st->comm_ns * kNs;
        micro_batches += st->micro_batches;
        ++steps;
        window.AddStep(*st);
      } else if (auto* w = std::get_if<WorkerRecord>(&record)) {
        if (w->worker >= 0)
          table.measured.max_worker_pss_bytes = std::max(table.measured.max_worker_pss_bytes, w->pss_bytes);
        else
          table.measured.max_main_rss_bytes = std::max(table.measured.max_main_rss_bytes, w->rss_bytes);
      } else if (auto* o = std::get_if<OtherRecord>(&record)) {
        // The run starts at the first iter() (capture's epoch_start event), before workers spawn.
        if (o->type == "event" && o->json.value("kind", "") == "epoch_start" && o->json.contains("t_ns") &&
            o->json["t_ns"].is_number_integer()) {
          window.AddEpochStart(o->json["t_ns"].get<int64_t>());
        }
      } else if (auto* h = std::get_if<HostRecord>(&record)) {
        table.measured.peak_host_mem_bytes = std::max(table.measured.peak_host_mem_bytes, h->mem_used_bytes);
      }
    }
    for (const auto& w : (*reader)->warnings()) table.warnings.push_back(w);
  }
  std::sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) { return a.key < b.key; });
  table.samples.reserve(keyed.size());
  for (const auto& k : keyed) table.samples.push_back(k.cost);
  table.distinct_indices = static_cast<int64_t>(indices.size());
  if (warmup.window > 0 && !records.empty()) {
    std::vector<size_t> position_of_record(records.size());
    for (size_t i = 0; i < keyed.size(); ++i) position_of_record[keyed[i].record] = i;
    std::vector<TraceSamples> traces;
    for (size_t t = 0; t < trace_starts.size(); ++t) {
      const size_t end = t + 1 < trace_starts.size() ? trace_starts[t + 1].first : records.size();
      TraceSamples ts;
      ts.persistent_workers = trace_starts[t].second;
      for (size_t i = trace_starts[t].first; i < end; ++i) ts.samples.push_back(&records[i]);
      traces.push_back(std::move(ts));
    }
    const auto* steady = warmup.steady_cpu_s_per_unit.empty() ? nullptr : &warmup.steady_cpu_s_per_unit;
    RemoveWarmupExcess(MeasureLifetimeWarmup(traces, warmup.window, steady), position_of_record, records,
                       &table.samples);
  }

  MeasuredRun& m = table.measured;
  // Samples the loop consumed (batch records); sample records also cover prefetched, unconsumed work.
  m.samples = 0;
  for (const auto& b : batches) m.samples += b.size;
  m.batches = static_cast<int64_t>(batches.size());
  if (!batches.empty()) {
    double wait = 0, collate = 0, pin_bytes = 0, pin_s = 0, h2d_bytes = 0, h2d_s = 0;
    int64_t size_sum = 0;
    for (const auto& b : batches) {
      wait += b.wait_ns * kNs;
      collate += b.collate_ns * kNs;
      size_sum += b.size;
      if (b.pin_ns > 0 && b.bytes > 0) {
        pin_s += b.pin_ns * kNs;
        pin_bytes += static_cast<double>(b.bytes);
      }
      if (b.h2d_ns > 0) {
        h2d_s += b.h2d_ns * kNs;
        h2d_bytes += static_cast<double>(b.h2d_bytes);
      }
    }
    m.mean_wait_s = wait / static_cast<double>(batches.size());
    m.mean_batch_size = size_sum / static_cast<int64_t>(batches.size());
    if (size_sum > 0 && !keyed.empty()) m.mean_collate_per_sample_s = collate / static_cast<double>(size_sum);
    if (pin_s > 0) m.mean_pin_bytes_per_s = pin_bytes / pin_s;
    if (h2d_s > 0) m.mean_h2d_bytes_per_s = h2d_bytes / h2d_s;
  }
  m.wall_s = window.wall_s();
  if (micro_batches > 0) m.mean_step_compute_s = step_compute_sum / static_cast<double>(micro_batches);
  if (steps > 0) m.mean_comm_s = comm_sum / static_cast<double>(steps);

  if (table.samples.empty()) {
    // Kineto import or a capture without per-sample records: spread each batch's load evenly.
    int32_t unknown = FormatId(&table, "unknown");
    for (const auto& b : batches) {
      if (b.size <= 0) continue;
      double per_sample = (b.wait_ns + b.collate_ns) * kNs / static_cast<double>(b.size);
      for (int64_t i = 0; i < b.size; ++i) {
        table.samples.push_back(SampleCost{0, per_sample, 0, 0, b.h2d_bytes / b.size, unknown, true});
      }
    }
    table.distinct_indices = static_cast<int64_t>(table.samples.size());
    if (!table.samples.empty()) {
      table.warnings.push_back(
          "no per-sample records: replaying each batch's load time spread evenly over its samples");
    }
  }
  if (table.samples.empty()) {
    std::string names;
    for (const auto& p : trace_paths) names += (names.empty() ? "" : ", ") + p;
    return Status::InvalidArgument(names + ": no sample records and no batch records with a size: nothing to replay");
  }
  return table;
}

}  // namespace simreplay::replay
