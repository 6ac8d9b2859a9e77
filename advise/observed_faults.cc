#include "advise/observed_faults.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <tuple>
#include <vector>

#include "replay/manifest.h"

namespace simreplay::advise {

namespace {

FaultConcentration ConcentrationOf(const TraceRecords& r) {
  FaultConcentration c;
  const bool persistent = replay::ManifestBool(r.manifest, "loader", "persistent_workers");
  // (rank, epoch of a worker's lifetime, worker): the main process (worker -1) lives for the whole run.
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<const SampleCost*>> lifetimes;
  std::vector<int64_t> faults;
  bool sized = false;
  for (const auto& s : r.samples) {
    if (s.minflt < 0) continue;
    faults.push_back(s.minflt);
    sized = sized || s.pixels > 0;
    lifetimes[{s.rank, persistent || s.worker < 0 ? 0 : s.epoch, s.worker}].push_back(&s);
  }
  const double total = static_cast<double>(std::accumulate(faults.begin(), faults.end(), int64_t{0}));
  if (total <= 0) return c;
  std::sort(faults.begin(), faults.end(), std::greater<>());
  const size_t tenth = std::max<size_t>(1, faults.size() / 10);
  c.top_tenth_share = static_cast<double>(std::accumulate(faults.begin(), faults.begin() + static_cast<long>(tenth),
                                                          int64_t{0})) / total;
  int64_t larger = 0;
  double larger_faults = 0;
  for (auto& [key, list] : lifetimes) {
    std::stable_sort(list.begin(), list.end(),
                     [](const SampleCost* a, const SampleCost* b) { return a->t_start_ns < b->t_start_ns; });
    int64_t largest = 0;
    double lifetime_faults = 0;
    for (const SampleCost* s : list) {
      if (static_cast<double>(s->pixels) > kLargerThanLargest * static_cast<double>(largest)) {
        ++larger;
        larger_faults += static_cast<double>(s->minflt);
      }
      largest = std::max(largest, s->pixels);
      lifetime_faults += static_cast<double>(s->minflt);
    }
    if (static_cast<int64_t>(list.size()) < kConcentrationMinSamples) continue;
    const double per_sample = lifetime_faults / static_cast<double>(list.size());
    c.lifetime_min_faults_per_sample =
        c.lifetimes == 0 ? per_sample : std::min(c.lifetime_min_faults_per_sample, per_sample);
    c.lifetime_max_faults_per_sample = std::max(c.lifetime_max_faults_per_sample, per_sample);
    ++c.lifetimes;
  }
  if (sized) {
    c.larger_samples_share = static_cast<double>(larger) / static_cast<double>(faults.size());
    c.larger_faults_share = larger_faults / total;
  }
  return c;
}

}  // namespace

PageFaultObservation ObservePageFaults(const TraceRecords& r) {
  PageFaultObservation out;
  std::vector<models::FaultSample> samples;
  double worker_faults = 0, inline_faults = 0;
  int64_t workers = 0, inlined = 0;
  for (const auto& s : r.samples) {
    if (s.cpu_ns < 0 || s.minflt < 0) continue;
    samples.push_back({s.cpu_ns * kNsToS, static_cast<double>(s.minflt)});
    if (s.worker >= 0) {
      worker_faults += static_cast<double>(s.minflt);
      ++workers;
    } else {
      inline_faults += static_cast<double>(s.minflt);
      ++inlined;
    }
  }
  if (samples.empty()) return out;
  out.visible = true;
  out.fit = models::FitPageFaultChurn(samples);
  if (workers > 0) out.worker_faults_per_sample = worker_faults / static_cast<double>(workers);
  if (inlined > 0) out.inline_faults_per_sample = inline_faults / static_cast<double>(inlined);
  out.worth_naming = out.fit.measured && out.fit.cpu_share >= models::kChurnShareWorthNaming;
  out.where = ConcentrationOf(r);
  out.from.records["sample"] = static_cast<int64_t>(samples.size());
  return out;
}

}  // namespace simreplay::advise
