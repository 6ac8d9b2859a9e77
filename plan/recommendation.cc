#include "plan/recommendation.h"

#include <algorithm>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "models/scaling_knee.h"
#include "plan/planner.h"

namespace simreplay::plan {

namespace {

using nlohmann::json;

std::string Label(const CandidateRow& r) {
  return fmt::format("{} x {} node{} ({} GPUs, {})", r.gpu, r.nodes, r.nodes == 1 ? "" : "s", r.gpus, r.sharding);
}

double Days(double s) { return s / 86400.0; }

json Brief(const CandidateRow& r) {
  json p_within = json::array();
  for (double p : r.reservation_high.p_within) p_within.push_back(p);
  return {{"gpu", r.gpu},
          {"nodes", r.nodes},
          {"gpus", r.gpus},
          {"sharding", r.sharding},
          {"total_days", Days(r.budget.total_s())},
          {"total_days_low", Days(r.budget_low.total_s())},
          {"total_days_high", Days(r.budget_high.total_s())},
          {"cost", r.cost},
          {"total_days_p90", r.reservation.p90_days},
          {"p_within_pessimistic", p_within}};
}

}  // namespace

json Recommend(const PlanSpec& spec, const std::vector<CandidateRow>& rows, bool provisional) {
  json rec = json::object();
  std::string text;
  rec["slots"] = json::array();
  for (size_t s = 0; s < spec.reservation.days.size(); ++s) {
    const double days = spec.reservation.days[s];
    const CandidateRow* best = nullptr;
    int fitting = 0;
    for (const auto& r : rows) {
      if (!r.simulated || !r.fits_slot[s]) continue;
      ++fitting;
      if (best == nullptr || r.cost < best->cost ||
          (r.cost == best->cost && r.budget.total_s() < best->budget.total_s()))
        best = &r;
    }
    json slot = {{"days", days},
                 {"probability_required", spec.reservation.probability},
                 {"candidate", best ? Brief(*best) : json(nullptr)},
                 {"fitting", fitting}};
    std::string line;
    if (best != nullptr) {
      line = fmt::format(
          "{:g}-day slot: {} is the cheapest of {} candidate{} that finish within it with P >= {:g} (Monte Carlo "
          "failures, throughput at the pessimistic end: P = {:.3f}): {:.1f} days expected ({:.1f}-{:.1f}, p90 "
          "{:.1f}, {:.0f}% buffer included), {:.0f} GPU-hours, cost {:.0f}.",
          days, Label(*best), fitting, fitting == 1 ? "" : "s", spec.reservation.probability,
          s < best->reservation_high.p_within.size() ? best->reservation_high.p_within[s] : 0.0,
          Days(best->budget.total_s()), Days(best->budget_low.total_s()), Days(best->budget_high.total_s()),
          best->reservation.p90_days, 100 * spec.reservation.buffer, best->gpu_hours, best->cost);
    } else {
      line = fmt::format(
          "{:g}-day slot: no candidate fits: none finishes within it with P >= {:g} (Monte Carlo failures, "
          "throughput at the pessimistic end of its interval, buffer included).",
          days, spec.reservation.probability);
    }
    slot["text"] = line;
    text += line + " ";
    rec["slots"].push_back(slot);
  }
  const CandidateRow* fastest = nullptr;
  for (const auto& r : rows) {
    if (r.simulated && r.goodput.feasible && (fastest == nullptr || r.budget.total_s() < fastest->budget.total_s()))
      fastest = &r;
  }
  rec["fastest"] = fastest ? Brief(*fastest) : json(nullptr);
  if (fastest != nullptr) {
    text += fmt::format("Fastest: {} at {:.1f} days ({:.1f}-{:.1f}), cost {:.0f}. ", Label(*fastest),
                        Days(fastest->budget.total_s()), Days(fastest->budget_low.total_s()),
                        Days(fastest->budget_high.total_s()), fastest->cost);
  }
  // Knees: per GPU type and sharding, the first step up in nodes that buys less than the fraction.
  rec["knee_fraction"] = spec.reservation.knee_fraction;
  rec["knees"] = json::array();
  std::vector<std::pair<std::string, std::string>> groups;
  for (const auto& r : rows) {
    if (std::find(groups.begin(), groups.end(), std::make_pair(r.gpu, r.sharding)) == groups.end())
      groups.emplace_back(r.gpu, r.sharding);
  }
  for (const auto& [gpu, sharding] : groups) {
    std::vector<const CandidateRow*> group;  // nodes ascending (the rows' order)
    std::vector<models::ScalingSample> samples;
    for (const auto& r : rows) {
      if (r.simulated && r.gpu == gpu && r.sharding == sharding) {
        group.push_back(&r);
        samples.push_back({r.gpus, r.throughput_samples_per_s});
      }
    }
    // The knee as what-if defines it (models/scaling_knee.h).
    const auto curve = models::ComputeScaling(samples);
    const int knee = models::FindKnee(curve, spec.reservation.knee_fraction);
    if (knee < 1) continue;
    const auto &a = *group[static_cast<size_t>(knee) - 1], &b = *group[static_cast<size_t>(knee)];
    const double fraction = curve[static_cast<size_t>(knee)].marginal_fraction;
    rec["knees"].push_back({{"gpu", gpu},
                            {"sharding", sharding},
                            {"nodes", a.nodes},
                            {"next_nodes", b.nodes},
                            {"marginal_fraction_of_linear", fraction}});
    text += fmt::format(
        "Knee {} {}: beyond {} node{}, going to {} buys {:.0f}% of linear (under {:.0f}%); utilisation signal there: {}. ",
        gpu, sharding, a.nodes, a.nodes == 1 ? "" : "s", b.nodes, 100 * fraction, 100 * spec.reservation.knee_fraction,
        b.bottleneck);
  }
  int not_fitting = 0;
  for (const auto& r : rows) not_fitting += r.memory.fits ? 0 : 1;
  if (not_fitting > 0) {
    text += fmt::format("{} candidate{} do not fit in GPU memory (see memory_per_gpu_bytes). ", not_fitting,
                        not_fitting == 1 ? "" : "s");
  }
  rec["provisional"] = provisional;
  if (provisional) {
    text +=
        "The step time of at least one GPU type is assumed (emulated or scaled from another GPU, not measured on "
        "it): spend a 7-day slot first on a bounded profiling pass (preflight and a capture on the target GPU), and "
        "treat any 30-day verdict as provisional until then.";
  }
  rec["text"] = text;
  return rec;
}

}  // namespace simreplay::plan
