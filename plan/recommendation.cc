#include "plan/recommendation.h"

#include <algorithm>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "models/error_band.h"
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

StepAttribution AttributeStep(const CandidateRow& r) {
  StepAttribution a;
  if (!r.simulated || r.throughput_samples_per_s <= 0) return a;
  a.step_s = r.samples_per_step / r.throughput_samples_per_s;
  a.compute_s = std::min(r.compute_s_per_step, a.step_s);
  a.exposed_comm_s = std::min(std::max(0.0, r.collective.exposed_s), a.step_s - a.compute_s);
  a.data_host_s = std::max(0.0, a.step_s - a.compute_s - a.exposed_comm_s);
  const double part = std::max(a.exposed_comm_s, a.data_host_s);
  a.at_most_gain = part < a.step_s ? a.step_s / (a.step_s - part) - 1 : 0;
  if (a.at_most_gain < models::kMinActionableGain) {
    a.limiting = "none";
  } else {
    a.limiting = a.exposed_comm_s >= a.data_host_s ? "network" : "data_pipeline";
  }
  return a;
}

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
    const StepAttribution sa = AttributeStep(a), sb = AttributeStep(b);
    rec["knees"].push_back({{"gpu", gpu},
                            {"sharding", sharding},
                            {"nodes", a.nodes},
                            {"next_nodes", b.nodes},
                            {"marginal_fraction_of_linear", fraction},
                            {"step_growth_s",
                             {{"exposed_communication", sb.exposed_comm_s - sa.exposed_comm_s},
                              {"data_and_host", sb.data_host_s - sa.data_host_s}}},
                            {"limiting_at_next_nodes", sb.limiting},
                            {"at_most_gain", sb.at_most_gain}});
    std::string why = fmt::format(
        "in the simulation the optimizer step grows from {:.3g} s to {:.3g} s ({:+.3g} s exposed communication, "
        "{:+.3g} s data loading and host)",
        sa.step_s, sb.step_s, sb.exposed_comm_s - sa.exposed_comm_s, sb.data_host_s - sa.data_host_s);
    if (sb.limiting == "none") {
      why += fmt::format("; at {} nodes no part of the step other than compute could buy {:.0f}% if removed", b.nodes,
                         100 * models::kMinActionableGain);
    } else {
      why += fmt::format("; at {} nodes the limiting part is {} (removing it entirely would buy at most {:+.0f}%)",
                         b.nodes, sb.limiting == "network" ? "the network (exposed communication)" : "the data pipeline",
                         100 * sb.at_most_gain);
    }
    text += fmt::format("Knee {} {}: beyond {} node{}, going to {} buys {:.0f}% of linear (under {:.0f}%); {}. ", gpu,
                        sharding, a.nodes, a.nodes == 1 ? "" : "s", b.nodes, 100 * fraction,
                        100 * spec.reservation.knee_fraction, why);
  }
  // What limits each simulated candidate, from its own simulated step (see the header).
  rec["candidates"] = json::array();
  for (const auto& r : rows) {
    if (!r.simulated) continue;
    const StepAttribution a = AttributeStep(r);
    rec["candidates"].push_back({{"gpu", r.gpu},
                                 {"nodes", r.nodes},
                                 {"sharding", r.sharding},
                                 {"step_s", a.step_s},
                                 {"compute_s", a.compute_s},
                                 {"exposed_communication_s", a.exposed_comm_s},
                                 {"data_and_host_s", a.data_host_s},
                                 {"limiting", a.limiting},
                                 {"at_most_gain", a.at_most_gain}});
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
