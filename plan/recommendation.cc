#include "plan/recommendation.h"

#include <algorithm>
#include <cmath>
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

namespace {

// A step's growth part worth saying: at least a millisecond and 1% of the smaller step; less is the
// simulation's noise, shown as zero and not named.
double Meaningful(double growth_s, double step_s) {
  return std::abs(growth_s) >= std::max(1e-3, 0.01 * step_s) ? growth_s : 0.0;
}

// The fastest candidate that fits slot `s` other than `pick` (nullptr: none).
const CandidateRow* FastestOther(const std::vector<CandidateRow>& rows, size_t s, const CandidateRow* pick) {
  const CandidateRow* fastest = nullptr;
  for (const auto& r : rows) {
    if (!r.simulated || !r.fits_slot[s] || &r == pick) continue;
    if (fastest == nullptr || r.budget.total_s() < fastest->budget.total_s()) fastest = &r;
  }
  return fastest != nullptr && pick != nullptr && fastest->budget.total_s() >= pick->budget.total_s() ? nullptr
                                                                                                       : fastest;
}

json SlotDecision(const PlanSpec& spec, const std::vector<CandidateRow>& rows, size_t s) {
  const double days = spec.reservation.days[s];
  const CandidateRow* best = nullptr;
  int fitting = 0;
  for (const auto& r : rows) {
    if (!r.simulated || !r.fits_slot[s]) continue;
    ++fitting;
    if (best == nullptr || r.cost < best->cost || (r.cost == best->cost && r.budget.total_s() < best->budget.total_s()))
      best = &r;
  }
  const double p_finish =
      best != nullptr && s < best->reservation_high.p_within.size() ? best->reservation_high.p_within[s] : 0.0;
  json slot = {{"days", days},
               {"probability_required", spec.reservation.probability},
               {"candidate", best ? Brief(*best) : json(nullptr)},
               {"p_finish", best ? json(p_finish) : json(nullptr)},
               {"fitting", fitting}};
  const CandidateRow* faster = FastestOther(rows, s, best);
  slot["faster_alternative"] = faster ? Brief(*faster) : json(nullptr);
  if (best != nullptr) {
    slot["text"] = fmt::format(
        "{:g}-day slot: {} is the cheapest of {} candidate{} that finish within it with P >= {:g} (P = {:.3f}): "
        "{:.1f} days expected ({:.1f}-{:.1f}, p90 {:.1f}, {:.0f}% buffer included), {:.0f} GPU-hours, cost {:.0f}.",
        days, Label(*best), fitting, fitting == 1 ? "" : "s", spec.reservation.probability, p_finish,
        Days(best->budget.total_s()), Days(best->budget_low.total_s()), Days(best->budget_high.total_s()),
        best->reservation.p90_days, 100 * spec.reservation.buffer, best->gpu_hours, best->cost);
  } else {
    slot["text"] = fmt::format("{:g}-day slot: no candidate finishes within it with P >= {:g}.", days,
                               spec.reservation.probability);
  }
  return slot;
}

// The knee of one GPU type and sharding (models/scaling_knee.h), with what grows in the simulated step;
// null when its curve has none.
json KneeOf(const PlanSpec& spec, const std::vector<CandidateRow>& rows, const std::string& gpu,
            const std::string& sharding) {
  std::vector<const CandidateRow*> group;  // nodes ascending (the rows' order)
  std::vector<models::ScalingSample> samples;
  for (const auto& r : rows) {
    if (r.simulated && r.gpu == gpu && r.sharding == sharding) {
      group.push_back(&r);
      samples.push_back({r.gpus, r.throughput_samples_per_s});
    }
  }
  const auto curve = models::ComputeScaling(samples);
  const int knee = models::FindKnee(curve, spec.reservation.knee_fraction);
  if (knee < 1) return nullptr;
  const auto &a = *group[static_cast<size_t>(knee) - 1], &b = *group[static_cast<size_t>(knee)];
  const double fraction = curve[static_cast<size_t>(knee)].marginal_fraction;
  const StepAttribution sa = AttributeStep(a), sb = AttributeStep(b);
  const double comm = Meaningful(sb.exposed_comm_s - sa.exposed_comm_s, sa.step_s);
  const double data = Meaningful(sb.data_host_s - sa.data_host_s, sa.step_s);
  std::string grows;
  if (comm != 0) grows += fmt::format("{:+.3g} s exposed communication", comm);
  if (data != 0) grows += fmt::format("{}{:+.3g} s data loading and host", grows.empty() ? "" : ", ", data);
  std::string text = fmt::format("Knee ({} {}): going from {} to {} nodes buys {:.0f}% of linear (under {:.0f}%); the "
                                 "simulated step grows from {:.3g} s to {:.3g} s{}",
                                 gpu, sharding, a.nodes, b.nodes, 100 * fraction, 100 * spec.reservation.knee_fraction,
                                 sa.step_s, sb.step_s, grows.empty() ? "" : " (" + grows + ")");
  if (sb.limiting == "none") {
    text += fmt::format(", and at {} nodes no part other than compute could buy {:.0f}% if removed.", b.nodes,
                        100 * models::kMinActionableGain);
  } else {
    text += fmt::format(", and at {} nodes the limiting part is {} (removing it entirely would buy at most {:+.0f}%).",
                        b.nodes, sb.limiting == "network" ? "the network (exposed communication)" : "the data pipeline",
                        100 * sb.at_most_gain);
  }
  return {{"gpu", gpu},
          {"sharding", sharding},
          {"nodes", a.nodes},
          {"next_nodes", b.nodes},
          {"marginal_fraction_of_linear", fraction},
          {"step_growth_s", {{"exposed_communication", comm}, {"data_and_host", data}}},
          {"limiting_at_next_nodes", sb.limiting},
          {"at_most_gain", sb.at_most_gain},
          {"text", text}};
}

std::string Cells(const json& c) {
  return fmt::format("{} x {} node{} ({})", c["gpu"].get<std::string>(), c["nodes"].get<int>(),
                     c["nodes"].get<int>() == 1 ? "" : "s", c["sharding"].get<std::string>());
}

}  // namespace

std::vector<std::vector<std::string>> DecisionRows(const json& rec) {
  std::vector<std::vector<std::string>> out = {
      {"slot", "pick", "GPUs", "expected days (interval)", "P(finish)", "cost", "faster alternative"}};
  for (const auto& slot : rec["slots"]) {
    const json& c = slot["candidate"];
    const std::string days = fmt::format("{:g} days", slot["days"].get<double>());
    if (c.is_null()) {
      out.push_back({days, "none fits", "", "", "", "", ""});
      continue;
    }
    const json& f = slot["faster_alternative"];
    out.push_back({days, Cells(c), std::to_string(c["gpus"].get<int>()),
                   fmt::format("{:.1f} ({:.1f}-{:.1f})", c["total_days"].get<double>(),
                               c["total_days_low"].get<double>(), c["total_days_high"].get<double>()),
                   fmt::format("{:.3f}", slot["p_finish"].get<double>()), fmt::format("{:.0f}", c["cost"].get<double>()),
                   f.is_null() ? "none" : fmt::format("{}: {:.1f} days, cost {:.0f}", Cells(f),
                                                      f["total_days"].get<double>(), f["cost"].get<double>())});
  }
  return out;
}

json Recommend(const PlanSpec& spec, const std::vector<CandidateRow>& rows, bool provisional) {
  json rec = json::object();
  rec["slots"] = json::array();
  for (size_t s = 0; s < spec.reservation.days.size(); ++s) rec["slots"].push_back(SlotDecision(spec, rows, s));
  const CandidateRow* fastest = nullptr;
  for (const auto& r : rows) {
    if (r.simulated && r.goodput.feasible && (fastest == nullptr || r.budget.total_s() < fastest->budget.total_s()))
      fastest = &r;
  }
  rec["fastest"] = fastest ? Brief(*fastest) : json(nullptr);
  // Knees: per GPU type and sharding, the first step up in nodes that buys less than the fraction.
  rec["knee_fraction"] = spec.reservation.knee_fraction;
  rec["knees"] = json::array();
  std::vector<std::pair<std::string, std::string>> groups;
  for (const auto& r : rows) {
    if (std::find(groups.begin(), groups.end(), std::make_pair(r.gpu, r.sharding)) == groups.end())
      groups.emplace_back(r.gpu, r.sharding);
  }
  for (const auto& [gpu, sharding] : groups) {
    json knee = KneeOf(spec, rows, gpu, sharding);
    if (!knee.is_null()) rec["knees"].push_back(std::move(knee));
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
  // Notes under the decision: the fastest overall, candidates that do not fit, provisional step times.
  rec["notes"] = json::array();
  if (fastest != nullptr) {
    rec["notes"].push_back(fmt::format("Fastest overall: {} at {:.1f} days ({:.1f}-{:.1f}), cost {:.0f}.",
                                       Label(*fastest), Days(fastest->budget.total_s()),
                                       Days(fastest->budget_low.total_s()), Days(fastest->budget_high.total_s()),
                                       fastest->cost));
  }
  int not_fitting = 0;
  for (const auto& r : rows) not_fitting += r.memory.fits ? 0 : 1;
  if (not_fitting > 0) {
    rec["notes"].push_back(fmt::format("{} candidate{} do not fit in GPU memory (see memory_per_gpu_bytes).",
                                       not_fitting, not_fitting == 1 ? "" : "s"));
  }
  rec["provisional"] = provisional;
  if (provisional) {
    rec["notes"].push_back(
        "The step time of at least one GPU type is assumed (emulated or scaled from another GPU, not measured on "
        "it): spend a 7-day slot first on a bounded profiling pass (preflight and a capture on the target GPU), and "
        "treat any 30-day verdict as provisional until then.");
  }
  rec["text"] = RecommendationText(rec, spec.reservation.probability);
  return rec;
}

std::string RecommendationText(const json& rec, double probability) {
  const auto rows = DecisionRows(rec);
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::string text = fmt::format(
      "Decision: per slot the cheapest candidate that finishes within it with P >= {:g} (Monte Carlo failures, "
      "throughput at the pessimistic end, buffer included)\n",
      probability);
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) line += fmt::format("{:<{}}  ", row[c], width[c]);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    text += "  " + line + "\n";
  }
  for (const auto& knee : rec["knees"]) text += knee["text"].get<std::string>() + "\n";
  for (const auto& note : rec["notes"]) text += note.get<std::string>() + "\n";
  return text;
}

}  // namespace simreplay::plan
