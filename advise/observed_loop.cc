#include "advise/observed_loop.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "common/quantile.h"

namespace simreplay::advise {

EpochStalls ObserveEpochStalls(const TraceRecords& r) {
  EpochStalls out;
  const int64_t workers = ManifestInt(r.manifest, "loader", "num_workers", -1);
  out.boundary_batches = std::max<int64_t>(1, workers);
  out.boundary_from = workers >= 0 ? fmt::format("manifest.loader.num_workers = {}: each worker's first batch", workers)
                                   : "no manifest.loader.num_workers: the first batch";
  if (workers >= 0) out.from.inputs.push_back("manifest.loader.num_workers");
  // Rank 0's waits by epoch, in batch order.
  std::map<int64_t, std::vector<std::pair<int64_t, double>>> by_epoch;
  int64_t used = 0;
  for (const auto& b : r.batches) {
    if (b.rank != 0) continue;
    by_epoch[b.epoch].emplace_back(b.batch, b.wait_ns * kNsToS);
    ++used;
  }
  out.from.records["batch"] = used;
  std::vector<double> steady;
  for (auto& [epoch, batches] : by_epoch) {
    std::stable_sort(batches.begin(), batches.end());
    for (size_t i = static_cast<size_t>(out.boundary_batches); i < batches.size(); ++i) steady.push_back(batches[i].second);
  }
  out.steady_batches = static_cast<int64_t>(steady.size());
  if (by_epoch.size() < 2 || steady.empty()) return out;
  out.visible = true;
  out.steady_median_wait_s = Median(steady);
  for (auto it = std::next(by_epoch.begin()); it != by_epoch.end(); ++it) {
    EpochBoundary e;
    e.epoch = it->first;
    const auto& batches = it->second;
    e.batches = std::min<int64_t>(out.boundary_batches, static_cast<int64_t>(batches.size()));
    for (int64_t i = 0; i < e.batches; ++i) e.wait_s += batches[static_cast<size_t>(i)].second;
    e.mean_wait_s = e.wait_s / static_cast<double>(e.batches);
    e.excess_s = std::max(0.0, e.wait_s - static_cast<double>(e.batches) * out.steady_median_wait_s);
    e.stall = e.mean_wait_s > kStallFactor * out.steady_median_wait_s + kStallMinS;
    out.excess_s += e.excess_s;
    out.stalls += e.stall ? 1 : 0;
    out.epochs.push_back(e);
  }
  if (r.wall_s > 0) out.share_of_wall = out.excess_s / r.wall_s;
  return out;
}

HeadOfLine ObserveHeadOfLine(const TraceRecords& r) {
  HeadOfLine out;
  std::map<std::tuple<int64_t, int64_t>, std::vector<double>> costs;  // rank 0's (epoch, batch) -> getitem s
  for (const auto& s : r.samples) {
    if (s.rank == 0) costs[{s.epoch, s.batch}].push_back(s.getitem_ns() * kNsToS);
  }
  double ratio_sum = 0;
  int64_t samples_used = 0, batches_seen = 0;
  for (const auto& b : r.batches) {
    if (b.rank != 0) continue;
    ++batches_seen;
    if (b.wait_ns <= 0) continue;
    auto it = costs.find({b.epoch, b.batch});
    if (it == costs.end() || it->second.size() < 2) continue;
    const std::vector<double>& c = it->second;
    const double slowest = *std::max_element(c.begin(), c.end());
    const double median = Median(c);
    const double wait = b.wait_ns * kNsToS;
    ++out.batches;
    samples_used += static_cast<int64_t>(c.size());
    out.data_wait_s += wait;
    out.behind_slowest_s += std::min(wait, slowest - median);
    ratio_sum += median > 0 ? slowest / median : 1;
  }
  out.from.records["batch"] = batches_seen;
  out.from.records["sample"] = samples_used;
  if (out.batches == 0) return out;
  out.visible = true;
  out.share = out.data_wait_s > 0 ? out.behind_slowest_s / out.data_wait_s : 0;
  out.mean_slowest_over_median = ratio_sum / static_cast<double>(out.batches);
  return out;
}

}  // namespace simreplay::advise
