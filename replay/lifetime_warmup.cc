#include "replay/lifetime_warmup.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "common/quantile.h"

namespace simreplay::replay {

namespace {

constexpr double kSecondsPerNs = 1e-9;  // not kNs: the unity build puts this file beside ones that define it
constexpr size_t kMinSteadySamples = 20;

double Units(const SampleRecord& s) { return static_cast<double>(s.width * s.height * std::max<int64_t>(1, s.frames)); }

}  // namespace

LifetimeWarmup MeasureLifetimeWarmup(const std::vector<TraceSamples>& traces, int window,
                                     const std::map<std::string, double>* given_steady) {
  LifetimeWarmup out;
  out.window = std::max(0, window);
  for (size_t ti = 0; ti < traces.size(); ++ti) {
    std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<const SampleRecord*>> by_process;
    for (const SampleRecord* s : traces[ti].samples) {
      if (s->worker >= 0 && s->cpu_ns >= 0)
        by_process[{s->rank, traces[ti].persistent_workers ? 0 : s->epoch, s->worker}].push_back(s);
    }
    for (auto& [key, list] : by_process) {
      std::sort(list.begin(), list.end(), [](const auto* a, const auto* b) { return a->t_start_ns < b->t_start_ns; });
      out.lifetimes.push_back({ti, std::move(list)});
    }
  }
  std::map<std::string, double>& steady = out.steady_cpu_s_per_unit;
  if (given_steady) {
    steady = *given_steady;
  } else {
    std::map<std::string, std::vector<double>> per_unit;  // format -> cpu / unit past the window
    for (const auto& l : out.lifetimes) {
      for (size_t o = out.window; o < l.samples.size(); ++o) {
        const SampleRecord& s = *l.samples[o];
        if (Units(s) > 0) per_unit[s.format].push_back(s.cpu_ns * kSecondsPerNs / Units(s));
      }
    }
    for (const auto& [format, v] : per_unit) {
      if (v.size() >= kMinSteadySamples) steady[format] = QuantileNearestRank(v, 0.5);
    }
  }
  out.measured = !steady.empty();
  for (auto& l : out.lifetimes) {
    const size_t n = std::min<size_t>(l.samples.size(), out.window);
    for (size_t o = 0; o < n; ++o) {
      const SampleRecord& s = *l.samples[o];
      l.window_cpu_s += s.cpu_ns * kSecondsPerNs;
      auto it = steady.find(s.format);
      if (it == steady.end()) continue;
      const double e = s.cpu_ns * kSecondsPerNs - it->second * Units(s);
      l.excess_cpu_s += e;
      if (o == 0) l.first_excess_cpu_s = e;
      l.priced = true;
    }
    out.window_samples += static_cast<double>(n);
  }
  return out;
}

}  // namespace simreplay::replay
