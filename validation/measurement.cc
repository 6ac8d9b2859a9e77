#include "validation/measurement.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "common/json_fields.h"
#include "replay/trace_reader.h"

namespace simreplay::validation {

const std::vector<std::string>& MetricNames() {
  static const std::vector<std::string> kNames = {kTrainThroughput, kPipelineThroughput, kGpuIdle,   kWaitMean,
                                                  kWaitP95,         kFirstBatch,         kPeakMemory};
  return kNames;
}

bool MetricIsFraction(const std::string& metric) { return metric == kGpuIdle; }

Result<TraceFacts> ReadTraceFacts(const std::string& trace_path) {
  auto reader = replay::TraceReader::Open(trace_path);
  if (!reader.ok()) return reader.status();
  TraceFacts facts;
  facts.manifest = (*reader)->header().manifest;
  std::set<std::pair<int64_t, int64_t>> delivered;  // (epoch, batch)
  std::vector<replay::SampleRecord> samples;
  // Resource samples of one 2 Hz tick share t_ns: (t_ns) -> memory of that tick.
  std::map<int64_t, double> tick_memory;
  int64_t host_first_t = -1, host_last_t = -1, host_first_busy = 0, host_last_busy = 0;
  replay::TraceRecord record;
  while (true) {
    auto more = (*reader)->Next(&record);
    if (!more.ok()) return more.status();
    if (!*more) break;
    if (auto* s = std::get_if<replay::SampleRecord>(&record)) {
      samples.push_back(std::move(*s));
    } else if (auto* b = std::get_if<replay::BatchRecord>(&record)) {
      delivered.insert({b->epoch, b->batch});
    } else if (auto* w = std::get_if<replay::WorkerRecord>(&record)) {
      // Main process: RSS (the model's memory.main_base_bytes); workers: PSS (shared pages split).
      double bytes = w->worker < 0 ? static_cast<double>(w->rss_bytes)
                                   : static_cast<double>(w->pss_bytes > 0 ? w->pss_bytes : w->rss_bytes);
      tick_memory[w->t_ns] += bytes;
    } else if (auto* h = std::get_if<replay::HostRecord>(&record)) {
      if (host_first_t < 0 || h->t_ns < host_first_t) {
        host_first_t = h->t_ns;
        host_first_busy = h->cpu_busy_ns;
      }
      if (h->t_ns > host_last_t) {
        host_last_t = h->t_ns;
        host_last_busy = h->cpu_busy_ns;
      }
    }
  }
  for (const auto& [t, bytes] : tick_memory)
    facts.peak_process_memory_bytes = std::max(facts.peak_process_memory_bytes, bytes);
  // Delivery order: batches in (epoch, batch) order, and within a batch the order its loader process
  // fetched the indices (one process per batch, so start times order them).
  std::sort(samples.begin(), samples.end(), [](const replay::SampleRecord& x, const replay::SampleRecord& y) {
    return std::tie(x.epoch, x.batch, x.t_start_ns, x.index) < std::tie(y.epoch, y.batch, y.t_start_ns, y.index);
  });
  int cores = 0;
  if (facts.manifest.contains("hardware") && facts.manifest["hardware"].is_object() &&
      facts.manifest["hardware"].contains("cores") && facts.manifest["hardware"]["cores"].is_number_integer()) {
    cores = facts.manifest["hardware"]["cores"].get<int>();
  }
  if (cores > 0 && host_last_t > host_first_t) {
    facts.host_cpu_busy_fraction = static_cast<double>(host_last_busy - host_first_busy) /
                                   (static_cast<double>(host_last_t - host_first_t) * cores);
  }
  double cpu_sum = 0, wall_sum = 0, minflt_sum = 0;
  int64_t cpu_n = 0, wall_n = 0, minflt_n = 0;
  for (const auto& s : samples) {
    if (!delivered.count({s.epoch, s.batch})) continue;
    if (s.epoch < 0) continue;
    if (s.cpu_ns >= 0) {
      cpu_sum += static_cast<double>(s.cpu_ns) * 1e-9;
      ++cpu_n;
    }
    if (s.minflt >= 0) {
      minflt_sum += static_cast<double>(s.minflt);
      ++minflt_n;
    }
    wall_sum += static_cast<double>(s.read_ns + s.decode_ns + s.augment_ns) * 1e-9;
    ++wall_n;
    if (facts.order_by_epoch.size() <= static_cast<size_t>(s.epoch))
      facts.order_by_epoch.resize(static_cast<size_t>(s.epoch) + 1);
    facts.order_by_epoch[static_cast<size_t>(s.epoch)].push_back(s.index);
    if (s.hash.empty()) {
      ++facts.samples_without_hash;
    } else {
      facts.hash_by_epoch_index[{s.epoch, s.index}] = s.hash;
    }
  }
  if (cpu_n > 0) facts.sample_cpu_s = cpu_sum / static_cast<double>(cpu_n);
  if (wall_n > 0) facts.sample_wall_s = wall_sum / static_cast<double>(wall_n);
  if (minflt_n > 0) facts.sample_minflt = minflt_sum / static_cast<double>(minflt_n);
  return facts;
}

Result<RunMetrics> ReadRunMetrics(const std::string& summary_path, const std::string& kind, const TraceFacts* facts) {
  auto json = ReadJsonFile(summary_path);
  if (!json.ok()) return json.status();
  const nlohmann::json& j = *json;
  RunMetrics m;
  auto number = [&](const nlohmann::json& object, const char* key, double* out) -> Status {
    if (!object.is_object() || !object.contains(key) || !object[key].is_number()) {
      return Status::InvalidArgument(fmt::format("{}: summary field '{}' must be a number", summary_path, key));
    }
    *out = object[key].get<double>();
    return Status::Ok();
  };
  double v = 0;
  SIMREPLAY_RETURN_IF_ERROR(number(j, "throughput_samples_per_s", &v));
  m.values[kind == "pipeline" ? kPipelineThroughput : kTrainThroughput] = v;
  if (!j.contains("data_wait_s")) return Status::InvalidArgument(summary_path + ": summary has no 'data_wait_s'");
  SIMREPLAY_RETURN_IF_ERROR(number(j["data_wait_s"], "mean", &v));
  if (kind == "train") m.values[kWaitMean] = v;
  SIMREPLAY_RETURN_IF_ERROR(number(j["data_wait_s"], "p95", &v));
  if (kind == "train") m.values[kWaitP95] = v;
  if (kind == "train") {
    SIMREPLAY_RETURN_IF_ERROR(number(j, "gpu_idle_fraction", &v));
    m.values[kGpuIdle] = v;
    SIMREPLAY_RETURN_IF_ERROR(number(j, "time_to_first_batch_s", &v));
    m.values[kFirstBatch] = v;
    if (facts != nullptr && facts->peak_process_memory_bytes > 0)
      m.values[kPeakMemory] = facts->peak_process_memory_bytes;
  }
  if (j.contains("peak_host_memory_bytes") && j["peak_host_memory_bytes"].is_number()) {
    m.host_mem_used_peak_bytes = j["peak_host_memory_bytes"].get<double>();
  }
  if (j.contains("cpu_s_per_sample") && j["cpu_s_per_sample"].is_number())
    m.cpu_s_per_sample = j["cpu_s_per_sample"].get<double>();
  return m;
}

nlohmann::json SampleCheck::ToJson() const {
  return {{"kind", kind}, {"a", a},          {"b", b}, {"compared", compared}, {"mismatched", mismatched},
          {"pass", pass}, {"detail", detail}};
}

SampleCheck CompareContent(const TraceFacts& a, const TraceFacts& b) {
  SampleCheck c;
  c.kind = "content";
  std::string first;
  for (const auto& [key, hash] : a.hash_by_epoch_index) {
    auto it = b.hash_by_epoch_index.find(key);
    if (it == b.hash_by_epoch_index.end()) continue;
    ++c.compared;
    if (it->second != hash) {
      if (c.mismatched == 0)
        first = fmt::format("first difference: epoch {} index {}: {} vs {}", key.first, key.second, hash, it->second);
      ++c.mismatched;
    }
  }
  c.pass = c.compared > 0 && c.mismatched == 0;
  c.detail = c.compared == 0     ? "no sample delivered by both runs carries a content hash"
             : c.mismatched == 0 ? fmt::format("{} samples identical (content hash per epoch and index)", c.compared)
                                 : fmt::format("{} of {} samples differ; {}", c.mismatched, c.compared, first);
  return c;
}

SampleCheck CompareOrder(const TraceFacts& a, const TraceFacts& b, int max_epochs) {
  SampleCheck c;
  c.kind = "order";
  std::string first;
  size_t epochs = std::min(a.order_by_epoch.size(), b.order_by_epoch.size());
  if (max_epochs >= 0) epochs = std::min(epochs, static_cast<size_t>(max_epochs));
  for (size_t e = 0; e < epochs; ++e) {
    const auto& x = a.order_by_epoch[e];
    const auto& y = b.order_by_epoch[e];
    size_t n = std::min(x.size(), y.size());
    for (size_t i = 0; i < n; ++i) {
      ++c.compared;
      if (x[i] != y[i]) {
        if (c.mismatched == 0)
          first = fmt::format("first difference: epoch {} position {}: index {} vs {}", e, i, x[i], y[i]);
        ++c.mismatched;
      }
    }
  }
  c.pass = c.compared > 0 && c.mismatched == 0;
  c.detail = c.compared == 0 ? "no delivered samples to compare"
             : c.mismatched == 0
                 ? fmt::format("{} delivered samples in the same order over {} epoch(s)", c.compared, epochs)
                 : fmt::format("{} of {} positions differ; {}", c.mismatched, c.compared, first);
  return c;
}

}  // namespace simreplay::validation
