#include "advise/observed_ranks.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace simreplay::advise {

namespace {

// Length of the union of [start, end) intervals, in ns.
int64_t UnionNs(std::vector<std::pair<int64_t, int64_t>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  int64_t total = 0, cur_start = 0, cur_end = INT64_MIN;
  for (const auto& [s, e] : intervals) {
    if (s > cur_end) {
      if (cur_end > INT64_MIN) total += cur_end - cur_start;
      cur_start = s;
      cur_end = e;
    } else {
      cur_end = std::max(cur_end, e);
    }
  }
  if (cur_end > INT64_MIN) total += cur_end - cur_start;
  return total;
}

std::string ManifestString(const nlohmann::json& m, const char* section, const char* key) {
  if (!m.is_object() || !m.contains(section) || !m[section].is_object()) return "";
  const auto& s = m[section];
  return s.contains(key) && s[key].is_string() ? s[key].get<std::string>() : "";
}

}  // namespace

CollectiveStragglers ObserveCollectives(const TraceRecords& r) {
  CollectiveStragglers out;
  // Per rank, its in-step collectives in issue order; a group is the n-th `op` of a step on each rank.
  std::map<int64_t, std::vector<const CollectiveObservation*>> by_rank;
  for (const auto& c : r.collectives) {
    if (c.step >= 0) by_rank[c.rank].push_back(&c);
  }
  out.from.records["collective"] = static_cast<int64_t>(r.collectives.size());
  std::map<std::tuple<int64_t, std::string, int64_t>, std::vector<std::pair<int64_t, int64_t>>> groups;  // -> (t, rank)
  std::map<int64_t, RankCollectives> ranks;
  for (auto& [rank, list] : by_rank) {
    std::stable_sort(list.begin(), list.end(), [](const auto* a, const auto* b) {
      return std::tie(a->step, a->t_start_ns) < std::tie(b->step, b->t_start_ns);
    });
    std::map<std::pair<int64_t, std::string>, int64_t> nth;
    std::vector<std::pair<int64_t, int64_t>> intervals;
    for (const auto* c : list) {
      const int64_t n = nth[{c->step, c->op}]++;
      groups[{c->step, c->op, n}].emplace_back(c->t_start_ns, rank);
      intervals.emplace_back(c->t_start_ns, c->t_start_ns + c->duration_ns);
    }
    RankCollectives& rc = ranks[rank];
    rc.rank = rank;
    rc.collectives = static_cast<int64_t>(list.size());
    rc.collective_s = UnionNs(std::move(intervals)) * kNsToS;
  }
  int64_t steps_used = 0;
  for (const auto& s : r.steps) {
    auto it = ranks.find(s.rank);
    if (it == ranks.end()) continue;
    it->second.step_s += s.step_ns * kNsToS;
    it->second.exposed_comm_share += s.comm_ns * kNsToS;  // divided by step_s below
    ++steps_used;
  }
  out.from.records["step"] = steps_used;
  std::map<int64_t, double> lateness_sum;
  for (auto& [key, arrivals] : groups) {
    if (arrivals.size() < 2) continue;
    ++out.groups;
    // Equal latest issue times: the lowest of those ranks counts as last, whatever the record order.
    std::stable_sort(arrivals.begin(), arrivals.end());
    const int64_t first = arrivals.front().first, latest = arrivals.back().first;
    int64_t last_rank = arrivals.back().second;
    for (const auto& [t, rank] : arrivals) {
      if (t == latest) {
        last_rank = rank;
        break;
      }
    }
    for (const auto& [t, rank] : arrivals) {
      ++ranks[rank].matched;
      lateness_sum[rank] += (t - first) * kNsToS;
    }
    ++ranks[last_rank].last_arrivals;
  }
  out.ranks = static_cast<int64_t>(ranks.size());
  out.straggler_share = out.ranks > 0 ? std::min(kStragglerMaxShare, 2.0 / static_cast<double>(out.ranks)) : 0;
  for (auto& [rank, rc] : ranks) {
    if (rc.matched > 0) {
      rc.last_share = static_cast<double>(rc.last_arrivals) / static_cast<double>(rc.matched);
      rc.mean_lateness_s = lateness_sum[rank] / static_cast<double>(rc.matched);
    }
    if (rc.step_s > 0) {
      rc.collective_share = rc.collective_s / rc.step_s;
      rc.exposed_comm_share /= rc.step_s;
    } else {
      rc.exposed_comm_share = 0;
    }
    rc.straggler = out.ranks >= 2 && out.groups >= kStragglerMinGroups && rc.last_share >= out.straggler_share;
    out.by_rank.push_back(rc);
  }
  out.visible = out.groups > 0;
  return out;
}

SamplesPerWorker ObserveSamplesPerWorker(const TraceRecords& r) {
  SamplesPerWorker out;
  const std::string sampler = ManifestString(r.manifest, "loader", "sampler");
  // torch gives an IterableDataset's DataLoader the _InfiniteConstantSampler; a map-style dataset
  // gets a real sampler (RandomSampler, SequentialSampler, a DistributedSampler, ...).
  if (sampler.empty()) {
    out.dataset = "unknown";
    out.dataset_from = "no manifest.loader.sampler";
  } else {
    out.dataset = sampler == "_InfiniteConstantSampler" ? "iterable" : "map-style";
    out.dataset_from = "manifest.loader.sampler = " + sampler;
    out.from.inputs.push_back("manifest.loader.sampler");
  }
  out.num_workers = ManifestInt(r.manifest, "loader", "num_workers", -1);
  if (out.num_workers >= 0) out.from.inputs.push_back("manifest.loader.num_workers");
  out.from.records["sample"] = static_cast<int64_t>(r.samples.size());
  if (r.samples.empty()) return out;
  out.visible = true;
  std::map<std::pair<int64_t, int64_t>, int64_t> counts;
  std::set<int64_t> ranks;
  for (const auto& s : r.samples) {
    ++counts[{s.rank, s.worker}];
    ranks.insert(s.rank);
  }
  for (int64_t rank : ranks) {
    for (int64_t w = 0; w < out.num_workers; ++w) counts.emplace(std::make_pair(rank, w), 0);
  }
  int64_t lo = INT64_MAX, hi = 0, with_samples = 0;
  for (const auto& [key, n] : counts) {
    const WorkerSamples ws{key.first, key.second, n};
    out.workers.push_back(ws);
    if (n == 0 && key.second >= 0) out.idle.push_back(ws);
    if (n > 0 && key.second >= 0) {
      lo = std::min(lo, n);
      hi = std::max(hi, n);
      ++with_samples;
    }
  }
  if (with_samples >= 2) out.max_over_min = static_cast<double>(hi) / static_cast<double>(lo);
  return out;
}

}  // namespace simreplay::advise
