#include "plan/plan_outputs.h"

#include "plan/units.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "common/text_escape.h"
#include "plan/recommendation.h"
#include "sim/metrics.h"

namespace simreplay::plan {

namespace {

using nlohmann::json;
using sim::Round9;


// JSON cannot hold infinity: an infeasible figure is null.
json Num(double v) { return std::isfinite(v) ? json(Round9(v)) : json(nullptr); }

std::string Join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string SlotKey(double days) { return fmt::format("fits_{:g}d", days); }

json BudgetJson(const Budget& b) {
  return {{"download_s", Num(b.download_s)}, {"preprocess_s", Num(b.preprocess_s)}, {"training_s", Num(b.training_s)},
          {"eval_s", Num(b.eval_s)},         {"checkpoint_s", Num(b.checkpoint_s)}, {"failures_s", Num(b.failures_s)},
          {"export_s", Num(b.export_s)},     {"copy_out_s", Num(b.copy_out_s)},     {"buffer_s", Num(b.buffer_s)},
          {"total_s", Num(b.total_s())}};
}

// One Monte Carlo reservation: its total days (buffer included) and P(finish within each slot).
json DistributionJson(const PlanOutcome& o, const ReservationDistribution& d) {
  json within = json::object();
  for (size_t s = 0; s < o.spec.reservation.days.size() && s < d.p_within.size(); ++s) {
    within[fmt::format("{:g}", o.spec.reservation.days[s])] = Num(d.p_within[s]);
  }
  return {{"trials", d.trials},       {"seed", d.seed},
          {"mean_days", Num(d.mean_days)}, {"stddev_days", Num(d.stddev_days)},
          {"p2_5_days", Num(d.p2_5_days)}, {"p50_days", Num(d.p50_days)},
          {"p90_days", Num(d.p90_days)},   {"p97_5_days", Num(d.p97_5_days)},
          {"p99_days", Num(d.p99_days)},   {"mean_failures", Num(d.mean_failures)},
          {"p_within", within},        {"note", d.note}};
}

json RowJson(const PlanOutcome& o, const CandidateRow& r) {
  json j = {{"gpu", r.gpu},
            {"nodes", r.nodes},
            {"gpus_per_node", r.gpus_per_node},
            {"gpus", r.gpus},
            {"sharding", r.sharding},
            {"fits_memory", r.memory.fits},
            {"memory_per_gpu_bytes", Num(r.memory.total_bytes)},
            {"memory_capacity_bytes", Num(r.memory.capacity_bytes)},
            {"memory_usable_bytes", Num(r.memory.usable_bytes)},
            {"memory_breakdown", r.memory.breakdown},
            {"step_time_s", Num(r.step_time_s)},
            {"step_time_source", r.step_time_source},
            {"total_steps", r.total_steps},
            {"samples_per_step", Num(r.samples_per_step)}};
  if (r.simulated) {
    j["collective"] = {{"total_s", Num(r.collective.total_s)},
                       {"exposed_s", Num(r.collective.exposed_s)},
                       {"intra_node_s", Num(r.collective.intra_s)},
                       {"inter_node_s", Num(r.collective.inter_s)}};
    j["simulation"] = {{"simulated_steps", r.simulated_steps},
                       {"steady", r.steady.steady},
                       {"periodic", r.steady.periodic},
                       {"warmup_steps", r.steady.warmup_steps},
                       {"steady_step_s", Num(r.steady.step_s)},
                       {"drift", Num(r.steady.drift)},
                       {"epoch_boundary_extra_s", Num(r.steady.boundary_extra_s)},
                       {"detail", r.steady.detail}};
    j["throughput_samples_per_s"] = Num(r.throughput_samples_per_s);
    j["scaling_efficiency"] = Num(r.scaling_efficiency);
    json parts = json::array();
    for (const auto& part : r.restart.parts) {
      parts.push_back({{"part", part.name},
                       {"seconds", Num(part.seconds.value)},
                       {"status", part.seconds.status},
                       {"source", part.seconds.source}});
    }
    const JobFailureRate& f = r.failure_rate;
    j["goodput"] = {{"model", "exact expected wall time under exponential failures (Daly 2006)"},
                    {"job_mtbf_s", Num(r.goodput.job_mtbf_s)},
                    {"failure_rate_per_h",
                     {{"gpu", Num(f.gpu_per_h)},
                      {"node", Num(f.node_per_h)},
                      {"network", Num(f.network_per_h)},
                      {"components", Num(f.components_per_h)},
                      {"small_job_floor", Num(f.floor_per_h)},
                      {"governs", f.floor_governs ? "small_job_floor" : "components"}}},
                    {"restart_s", Num(r.goodput.restart_s)},
                    {"restart_parts", parts},
                    {"checkpoint_write_s", Num(r.goodput.checkpoint_write_s)},
                    {"checkpoint_interval_s", Num(r.goodput.checkpoint_interval_s)},
                    {"young_interval_s", Num(r.goodput.young_interval_s)},
                    {"optimal_interval_s", Num(r.goodput.optimal_interval_s)},
                    {"first_order_wall_s", Num(r.goodput.first_order_wall_s)},
                    {"wall_s", Num(r.goodput.wall_s)},
                    {"expected_checkpoints", Num(r.goodput.checkpoints)},
                    {"expected_failures", Num(r.goodput.failures)},
                    {"lost_work_s", Num(r.goodput.lost_work_s)},
                    {"restart_total_s", Num(r.goodput.restart_total_s)},
                    {"feasible", r.goodput.feasible},
                    {"note", r.goodput.note}};
    // The stall per save goodput took and where it came from (docs/planning.md, "Checkpoint stall").
    const CheckpointLayout& cl = r.checkpoint_layout;
    j["checkpoint"] = {{"mode", cl.sim.mode},
                       {"writers", cl.sim.writers},
                       {"writer_count", cl.writers},
                       {"target", cl.sim.target},
                       {"bytes_per_writer", Num(cl.bytes_per_writer)},
                       {"stall_per_save_s", Num(r.checkpoint.per_save.value)},
                       {"status", r.checkpoint.per_save.status},
                       {"source", r.checkpoint.per_save.source},
                       {"closed_form_stall_s", Num(r.checkpoint.closed_form_s)},
                       {"write_s_per_save", Num(r.checkpoint.write_s)},
                       {"window_interval_steps", cl.sim.simulate ? json(cl.sim.every_steps) : json(nullptr)},
                       {"min_interval_s", Num(r.checkpoint.min_interval_s)},
                       {"interval_bounded", r.goodput.interval_bounded},
                       {"interval_rule", r.checkpoint.rule}};
    j["checkpoint_stall_s"] = Num(r.checkpoint.per_save.value);
    j["checkpoint_stall_status"] = r.checkpoint.per_save.status;
    j["checkpoint_closed_form_s"] = Num(r.checkpoint.closed_form_s);
    j["goodput_fraction"] = Num(r.goodput.goodput_fraction);
    j["checkpoint_interval_s"] = Num(r.goodput.checkpoint_interval_s);
    j["training_days"] = Num(r.budget.training_s / kSecondsPerDay);
    j["total_days"] = Num(r.budget.total_s() / kSecondsPerDay);
    j["total_days_low"] = Num(r.budget_low.total_s() / kSecondsPerDay);
    j["total_days_high"] = Num(r.budget_high.total_s() / kSecondsPerDay);
    j["interval_multipliers"] = {Num(r.interval_low), Num(r.interval_high)};
    j["budget"] = BudgetJson(r.budget);
    j["budget_low"] = BudgetJson(r.budget_low);
    j["budget_high"] = BudgetJson(r.budget_high);
    j["gpu_hours"] = Num(r.gpu_hours);
    j["cost"] = Num(r.cost);
    j["reservation_monte_carlo"] = {{"expected", DistributionJson(o, r.reservation)},
                                    {"pessimistic", DistributionJson(o, r.reservation_high)},
                                    {"optimistic", DistributionJson(o, r.reservation_low)},
                                    {"probability_required", Num(o.spec.reservation.probability)}};
    j["total_days_p50"] = Num(r.reservation.p50_days);
    j["total_days_p90"] = Num(r.reservation.p90_days);
    j["total_days_p99"] = Num(r.reservation.p99_days);
  }
  for (size_t s = 0; s < o.spec.reservation.days.size(); ++s) {
    j[SlotKey(o.spec.reservation.days[s])] = r.fits_slot[s];
    if (r.simulated && s < r.reservation_high.p_within.size()) {
      j["p_" + SlotKey(o.spec.reservation.days[s])] = Num(r.reservation_high.p_within[s]);
    }
  }
  j["bottleneck"] = r.bottleneck;
  j["bottleneck_evidence"] = r.bottleneck_evidence;
  j["assumed"] = r.assumed;
  j["warnings"] = r.warnings;
  j["extrapolations"] = json::array();
  for (const auto& e : r.extrapolations) {
    j["extrapolations"].push_back({{"kind", ExtrapolationKindName(e.kind)}, {"what", e.what}});
  }
  j["global_batch_samples"] = Num(r.samples_per_step);
  j["samples_to_target_multiplier"] = Num(r.samples_to_target_multiplier);
  j["activation_checkpointing"] = r.activation_checkpointing;  // plan/pilot_planning.h
  j["needs"] = r.needs;
  return j;
}

std::string Cell(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return fmt::format("{:.9g}", v.get<double>());
  if (v.is_array()) {
    std::vector<std::string> parts;
    for (const auto& e : v) parts.push_back(e.get<std::string>());
    return Join(parts, ";");
  }
  return v.dump();
}

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

// Axes frame of an SVG plot: returns the opening, with a title, and the scale functions' ranges.
struct Frame {
  double w = 620, h = 320, left = 80, right = 180, top = 30, bottom = 45;
  double xmin = 0, xmax = 1, ymin = 0, ymax = 1;
  bool logx = false;
  double X(double x) const {
    double fx = logx ? (std::log(x) - std::log(xmin)) / (std::log(xmax) - std::log(xmin)) : (x - xmin) / (xmax - xmin);
    return left + fx * (w - left - right);
  }
  double Y(double y) const { return h - bottom - (y - ymin) / (ymax - ymin) * (h - top - bottom); }
};

std::string OpenPlot(const Frame& f, const std::string& id, const std::string& title, const std::string& xlabel,
                     const std::string& ylabel, const std::vector<double>& xticks, bool y_axis = true) {
  std::string svg = fmt::format(
      R"(<svg class="plot" id="{}" xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="11">)",
      id, f.w, f.h);
  svg += fmt::format(R"(<text x="{}" y="18" font-size="13" font-weight="bold">{}</text>)", f.left, HtmlEscape(title));
  svg += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#333"/>)", f.left, f.h - f.bottom, f.w - f.right,
                     f.h - f.bottom);
  svg += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#333"/>)", f.left, f.top, f.left, f.h - f.bottom);
  for (int i = 0; i <= 4 && y_axis; ++i) {  // bar charts label their bars instead
    const double y = f.ymin + (f.ymax - f.ymin) * i / 4;
    svg += fmt::format(R"(<text x="{}" y="{:.1f}" text-anchor="end">{:.3g}</text>)", f.left - 5, f.Y(y) + 4, y);
    svg += fmt::format(R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#eee"/>)", f.left, f.Y(y),
                       f.w - f.right, f.Y(y));
  }
  for (double x : xticks) {
    svg += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle">{:.4g}</text>)", f.X(x), f.h - f.bottom + 14, x);
  }
  svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">{}</text>)", (f.left + f.w - f.right) / 2, f.h - 8,
                     HtmlEscape(xlabel));
  svg += fmt::format(R"svg(<text x="14" y="{}" transform="rotate(-90 14 {})" text-anchor="middle">{}</text>)svg",
                     (f.top + f.h - f.bottom) / 2, (f.top + f.h - f.bottom) / 2, HtmlEscape(ylabel));
  return svg;
}

// Throughput against GPU count, one line per GPU type and sharding (log x).
std::string ScalingPlot(const PlanOutcome& o) {
  std::map<std::string, std::vector<const CandidateRow*>> series;
  std::vector<std::string> order;
  Frame f;
  f.logx = true;
  f.xmin = 1e300;
  f.xmax = 0;
  f.ymax = 0;
  std::vector<double> ticks;
  for (const auto& r : o.rows) {
    if (!r.simulated) continue;
    const std::string key = r.gpu + " " + r.sharding;
    if (!series.count(key)) order.push_back(key);
    series[key].push_back(&r);
    f.xmin = std::min(f.xmin, static_cast<double>(r.gpus));
    f.xmax = std::max(f.xmax, static_cast<double>(r.gpus));
    f.ymax = std::max(f.ymax, r.throughput_samples_per_s);
    if (std::find(ticks.begin(), ticks.end(), r.gpus) == ticks.end()) ticks.push_back(r.gpus);
  }
  if (order.empty()) {
    f.xmin = 1;
    f.xmax = 2;
  }
  if (f.xmax <= f.xmin) f.xmax = f.xmin * 2;
  f.ymax = f.ymax > 0 ? f.ymax * 1.1 : 1;
  std::string svg = OpenPlot(f, "plot-scaling", "Scaling: training throughput vs GPUs (simulated, steady state)",
                             "GPUs (log scale)", "samples/s", ticks);
  int c = 0;
  double legend_y = f.top;
  for (const auto& key : order) {
    const char* color = kColors[c++ % 8];
    std::string path;
    for (const auto* r : series[key]) {
      path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "M" : " L", f.X(r->gpus), f.Y(r->throughput_samples_per_s));
      svg += fmt::format(
          R"(<circle cx="{:.1f}" cy="{:.1f}" r="3.5" fill="{}"><title>{} x {} nodes: {:.4g} samples/s, efficiency {:.0f}%</title></circle>)",
          f.X(r->gpus), f.Y(r->throughput_samples_per_s), color, HtmlEscape(key), r->nodes, r->throughput_samples_per_s,
          100 * r->scaling_efficiency);
    }
    svg += fmt::format(R"(<path d="{}" fill="none" stroke="{}" stroke-width="2"/>)", path, color);
    svg += fmt::format(R"(<text x="{}" y="{:.1f}" fill="{}">{}</text>)", f.w - f.right + 10, legend_y += 14, color,
                       HtmlEscape(key));
  }
  return svg + "</svg>\n";
}

// Cost against expected days, every simulated candidate, the Pareto front (no other candidate both
// cheaper and faster) joined by a line; the reservation slots as vertical lines.
std::string ParetoPlot(const PlanOutcome& o) {
  std::vector<const CandidateRow*> pts;
  Frame f;
  f.xmin = 0;
  f.xmax = 0;
  f.ymax = 0;
  for (const auto& r : o.rows) {
    if (!r.simulated || !std::isfinite(r.budget.total_s())) continue;
    pts.push_back(&r);
    f.xmax = std::max(f.xmax, r.budget_high.total_s() / kSecondsPerDay);
    f.ymax = std::max(f.ymax, r.cost);
  }
  for (double d : o.spec.reservation.days) f.xmax = std::max(f.xmax, d);
  f.xmax = std::max(f.xmax * 1.05, 1.0);
  f.ymax = f.ymax > 0 ? f.ymax * 1.1 : 1;
  std::vector<double> ticks;
  for (int i = 0; i <= 5; ++i) ticks.push_back(f.xmax * i / 5);
  std::string svg = OpenPlot(f, "plot-pareto", "Cost vs days (expected, bar = interval); Pareto front joined",
                             "total days (buffer included)", "cost", ticks);
  for (double d : o.spec.reservation.days) {
    svg += fmt::format(
        R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" stroke="#999" stroke-dasharray="4 3"/><text x="{0:.1f}" y="{3}" fill="#666">{4:g}-day slot</text>)",
        f.X(d), f.top, f.h - f.bottom, f.top - 2, d);
  }
  std::map<std::string, const char*> colors;
  int c = 0;
  for (const auto& r : o.rows) {
    if (!colors.count(r.gpu)) colors[r.gpu] = kColors[c++ % 8];
  }
  std::vector<const CandidateRow*> front;
  for (const auto* a : pts) {
    bool dominated = false;
    for (const auto* b : pts) {
      if (b != a && b->cost <= a->cost && b->budget.total_s() <= a->budget.total_s() &&
          (b->cost < a->cost || b->budget.total_s() < a->budget.total_s()))
        dominated = true;
    }
    if (!dominated) front.push_back(a);
  }
  std::sort(front.begin(), front.end(),
            [](const CandidateRow* a, const CandidateRow* b) { return a->budget.total_s() < b->budget.total_s(); });
  std::string path;
  for (const auto* r : front)
    path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "M" : " L", f.X(r->budget.total_s() / kSecondsPerDay), f.Y(r->cost));
  if (!path.empty()) svg += fmt::format(R"(<path d="{}" fill="none" stroke="#333" stroke-width="1.5"/>)", path);
  for (const auto* r : pts) {
    const double x = f.X(r->budget.total_s() / kSecondsPerDay), y = f.Y(r->cost);
    const bool on_front = std::find(front.begin(), front.end(), r) != front.end();
    svg += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}" opacity="0.5"/>)",
                       f.X(r->budget_low.total_s() / kSecondsPerDay), y, f.X(r->budget_high.total_s() / kSecondsPerDay), y, colors[r->gpu]);
    svg += fmt::format(
        R"(<circle cx="{:.1f}" cy="{:.1f}" r="{}" fill="{}"><title>{} x {} nodes {}: {:.2f} days ({:.2f}-{:.2f}), cost {:.0f}</title></circle>)",
        x, y, on_front ? 5 : 3, colors[r->gpu], r->gpu, r->nodes, r->sharding, r->budget.total_s() / kSecondsPerDay,
        r->budget_low.total_s() / kSecondsPerDay, r->budget_high.total_s() / kSecondsPerDay, r->cost);
    if (on_front) {
      svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="9">{}x{} {}</text>)", x + 6, y - 4, r->gpu, r->nodes,
                         r->sharding);
    }
  }
  double legend_y = f.top;
  for (const auto& [gpu, color] : colors) {
    svg += fmt::format(R"(<text x="{}" y="{:.1f}" fill="{}">{}</text>)", f.w - f.right + 10, legend_y += 14, color,
                       HtmlEscape(gpu));
  }
  return svg + "</svg>\n";
}

// Horizontal waterfall of the budget phases of one candidate: each bar starts where the previous ended.
std::string WaterfallPlot(const CandidateRow* r, const std::string& label) {
  Frame f;
  f.h = 330;
  f.left = 110;
  f.right = 40;
  std::vector<std::pair<std::string, double>> phases;
  if (r != nullptr) {
    const Budget& b = r->budget;
    phases = {{"download", b.download_s}, {"preprocess", b.preprocess_s},  {"training", b.training_s},
              {"eval", b.eval_s},         {"checkpoints", b.checkpoint_s}, {"failures", b.failures_s},
              {"export", b.export_s},     {"copy-out", b.copy_out_s},      {"buffer", b.buffer_s}};
  }
  double total = 0;
  for (const auto& [n, s] : phases) total += std::isfinite(s) ? s : 0;
  f.xmax = total > 0 ? total / kSecondsPerDay * 1.02 : 1;
  std::vector<double> ticks;
  for (int i = 0; i <= 5; ++i) ticks.push_back(f.xmax * i / 5);
  std::string svg = OpenPlot(f, "plot-waterfall", "Budget waterfall: " + label, "days", "", ticks, false);
  const double bar_h = (f.h - f.top - f.bottom) / std::max<size_t>(phases.size(), 1);
  double start = 0;
  int c = 0;
  for (size_t i = 0; i < phases.size(); ++i) {
    const double days = std::isfinite(phases[i].second) ? phases[i].second / kSecondsPerDay : 0;
    const double y = f.top + i * bar_h;
    svg += fmt::format(R"(<text x="{}" y="{:.1f}" text-anchor="end">{}</text>)", f.left - 5, y + bar_h * 0.65,
                       phases[i].first);
    svg += fmt::format(
        R"(<rect x="{:.1f}" y="{:.1f}" width="{:.2f}" height="{:.1f}" fill="{}"><title>{}: {:.3f} days</title></rect>)",
        f.X(start), y + 2, std::max(1.0, f.X(start + days) - f.X(start)), bar_h - 4, kColors[c++ % 8], phases[i].first,
        days);
    svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="9">{:.2f} d</text>)", f.X(start + days) + 4,
                       y + bar_h * 0.65, days);
    start += days;
  }
  return svg + "</svg>\n";
}

// Memory per GPU of every candidate against its GPU's capacity (line) and usable part (dashed).
std::string MemoryPlot(const PlanOutcome& o) {
  Frame f;
  f.left = 190;
  f.right = 40;
  const double bar_h = 14;
  f.h = f.top + f.bottom + bar_h * std::max<size_t>(o.rows.size(), 1);
  for (const auto& r : o.rows) f.xmax = std::max({f.xmax, r.memory.total_bytes / 1e9, r.memory.capacity_bytes / 1e9});
  f.xmax *= 1.05;
  std::vector<double> ticks;
  for (int i = 0; i <= 5; ++i) ticks.push_back(f.xmax * i / 5);
  std::string svg =
      OpenPlot(f, "plot-memory", "Memory per GPU vs capacity (GB; red = does not fit)", "GB", "", ticks, false);
  for (size_t i = 0; i < o.rows.size(); ++i) {
    const auto& r = o.rows[i];
    const double y = f.top + i * bar_h;
    svg += fmt::format(R"(<text x="{}" y="{:.1f}" text-anchor="end" font-size="10">{} x{} {}</text>)", f.left - 5,
                       y + bar_h * 0.75, r.gpu, r.nodes, r.sharding);
    svg += fmt::format(R"(<rect x="{}" y="{:.1f}" width="{:.2f}" height="{:.1f}" fill="{}"><title>{}</title></rect>)",
                       f.left, y + 1, std::max(1.0, f.X(r.memory.total_bytes / 1e9) - f.left), bar_h - 2,
                       r.memory.fits ? "#2ca02c" : "#d62728", HtmlEscape(r.memory.breakdown));
    svg += fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="#000" stroke-width="2"/>)",
                       f.X(r.memory.capacity_bytes / 1e9), y, y + bar_h);
    svg += fmt::format(
        R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="#000" stroke-dasharray="2 2"/>)",
        f.X(r.memory.usable_bytes / 1e9), y, y + bar_h);
  }
  return svg + "</svg>\n";
}

// The decision table first, then each knee in one sentence and the notes (plan/recommendation.h).
std::string RecommendationHtml(const PlanOutcome& o) {
  const auto rows = DecisionRows(o.recommendation);
  std::string html = fmt::format(
      "<p>Per slot, the cheapest candidate that finishes within it with P &gt;= {:g} (Monte Carlo failures, "
      "throughput at the pessimistic end, buffer included).</p>\n<table id=\"decision\">",
      o.spec.reservation.probability);
  for (size_t i = 0; i < rows.size(); ++i) {
    html += "<tr>";
    for (const auto& cell : rows[i]) html += (i == 0 ? "<th>" : "<td class=\"l\">") + HtmlEscape(cell) + (i == 0 ? "</th>" : "</td>");
    html += "</tr>";
  }
  html += "</table>\n<ul>";
  for (const auto& knee : o.recommendation["knees"]) html += "<li>" + HtmlEscape(knee["text"].get<std::string>()) + "</li>";
  for (const auto& note : o.recommendation["notes"]) html += "<li>" + HtmlEscape(note.get<std::string>()) + "</li>";
  return html + "</ul>\n";
}

const CandidateRow* Recommended(const PlanOutcome& o, std::string* label) {
  // The cheapest candidate of the longest slot that has one, else the fastest.
  const auto& slots = o.recommendation["slots"];
  for (size_t s = slots.size(); s-- > 0;) {
    const auto& c = slots[s]["candidate"];
    if (c.is_null()) continue;
    for (const auto& r : o.rows) {
      if (r.gpu == c["gpu"] && r.nodes == c["nodes"].get<int>() && r.sharding == c["sharding"]) {
        *label = fmt::format("{} x {} nodes ({}), cheapest for the {:g}-day slot", r.gpu, r.nodes, r.sharding,
                             slots[s]["days"].get<double>());
        return &r;
      }
    }
  }
  const auto& fastest = o.recommendation["fastest"];
  if (fastest.is_null()) return nullptr;
  for (const auto& r : o.rows) {
    if (r.gpu == fastest["gpu"] && r.nodes == fastest["nodes"].get<int>() && r.sharding == fastest["sharding"]) {
      *label = fmt::format("{} x {} nodes ({}), the fastest (no candidate fits a slot)", r.gpu, r.nodes, r.sharding);
      return &r;
    }
  }
  return nullptr;
}

// The page checks itself once loaded: every plot drawn with marks in it, no script error; the verdict
// lands in #render-check (read by the headless-browser test).
const char* kRenderCheckScript = R"(<script>
window.addEventListener('error', function (e) {
  var p = document.createElement('p'); p.id = 'script-error'; p.textContent = 'script error: ' + e.message;
  document.body.appendChild(p);
});
window.addEventListener('load', function () {
  var plots = document.querySelectorAll('svg.plot'), drawn = 0;
  for (var i = 0; i < plots.length; ++i) {
    var box = plots[i].getBoundingClientRect();
    if (box.width > 0 && box.height > 0 && plots[i].querySelectorAll('circle,rect,path').length > 0) ++drawn;
  }
  var p = document.getElementById('render-check');
  p.textContent = 'render-check: ' + drawn + ' of ' + plots.length + ' plots drawn';
  p.className = drawn === plots.length && plots.length >= 4 ? 'ok' : 'warn';
});
</script>
)";

}  // namespace

json PlanJson(const PlanOutcome& o) {
  json rows = json::array();
  for (const auto& r : o.rows) rows.push_back(RowJson(o, r));
  return {{"schema", kPlanOutputSchema},
          {"plan_file", o.spec.path},
          {"scenario", o.spec.scenario_path},
          {"preflight", o.spec.preflight_path},
          {"measured_on", o.spec.measured_on},
          {"accelerator", o.accelerator},
          {"accelerator_note", o.accelerator_note},
          {"provisional", o.provisional},
          {"reservation",
           {{"days", o.spec.reservation.days},
            {"buffer", o.spec.reservation.buffer},
            {"probability", o.spec.reservation.probability},
            {"monte_carlo_trials", o.spec.monte_carlo.trials},
            {"monte_carlo_seed", o.spec.monte_carlo.seed}}},
          {"multinode_mode", o.multinode_mode},
          {"parallel_mode", o.parallel_mode},
          {"candidates", rows},
          {"recommendation", o.recommendation},
          {"assumptions", o.assumptions}};
}

std::string PlanCsv(const PlanOutcome& o) {
  std::vector<std::string> cols = {"gpu",
                                   "nodes",
                                   "gpus",
                                   "sharding",
                                   "fits_memory",
                                   "memory_per_gpu_bytes",
                                   "memory_capacity_bytes",
                                   "step_time_s",
                                   "throughput_samples_per_s",
                                   "scaling_efficiency",
                                   "goodput_fraction",
                                   "checkpoint_interval_s",
                                   "checkpoint_stall_s",
                                   "checkpoint_stall_status",
                                   "checkpoint_closed_form_s",
                                   "training_days",
                                   "total_days",
                                   "total_days_low",
                                   "total_days_high",
                                   "total_days_p50",
                                   "total_days_p90",
                                   "total_days_p99",
                                   "gpu_hours",
                                   "cost"};
  for (double d : o.spec.reservation.days) cols.push_back(SlotKey(d));
  for (double d : o.spec.reservation.days) cols.push_back("p_" + SlotKey(d));
  for (const char* c : {"bottleneck", "assumed", "warnings"}) cols.push_back(c);
  std::string out;
  for (size_t i = 0; i < cols.size(); ++i) out += (i ? "," : "") + cols[i];
  out += "\n";
  for (const auto& r : o.rows) {
    json j = RowJson(o, r);
    std::string line;
    for (size_t i = 0; i < cols.size(); ++i) {
      line += (i ? "," : "") + CsvEscape(j.contains(cols[i]) ? Cell(j[cols[i]]) : "");
    }
    out += line + "\n";
  }
  return out;
}

std::string PlanTable(const PlanOutcome& o) {
  std::string out = fmt::format("{:>10} {:>5} {:>5} {:>5} {:>7} {:>11} {:>6} {:>7} {:>20} {:>10}", "gpu", "nodes",
                                "gpus", "shard", "mem GB", "samples/s", "eff", "goodput", "days (low-high)", "cost");
  for (double d : o.spec.reservation.days) out += fmt::format(" {:>5}", fmt::format("{:g}d", d));
  out += "  bottleneck\n";
  for (const auto& r : o.rows) {
    out += fmt::format("{:>10} {:>5} {:>5} {:>5} {:>7.1f}", r.gpu, r.nodes, r.gpus, r.sharding,
                       r.memory.total_bytes / 1e9);
    if (r.simulated) {
      out += fmt::format(" {:>11.1f} {:>5.0f}% {:>6.0f}% {:>20} {:>10.0f}", r.throughput_samples_per_s,
                         100 * r.scaling_efficiency, 100 * r.goodput.goodput_fraction,
                         fmt::format("{:.1f} ({:.1f}-{:.1f})", r.budget.total_s() / kSecondsPerDay, r.budget_low.total_s() / kSecondsPerDay,
                                     r.budget_high.total_s() / kSecondsPerDay),
                         r.cost);
    } else {
      out += fmt::format(" {:>11} {:>6} {:>7} {:>20} {:>10}", "-", "-", "-", "does not fit", "-");
    }
    for (bool fits : r.fits_slot) out += fmt::format(" {:>5}", fits ? "yes" : "no");
    out += "  " + r.bottleneck + "\n";
  }
  return out;
}

std::string PlanHtml(const PlanOutcome& o) {
  std::string html =
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>simreplay plan</title>"
      "<style>body{font-family:sans-serif;margin:2em;max-width:1300px}table{border-collapse:collapse;font-size:12px}"
      "td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}th{background:#f4f4f4}td.l{text-align:left}"
      ".warn{color:#a40}.ok{color:#080}.no{color:#b00}svg{margin:0.5em 1em 0.5em 0}</style></head><body>\n";
  html += "<h1>simreplay plan</h1>\n<p>Plan: <code>" + HtmlEscape(o.spec.path) + "</code>; scenario <code>" +
          HtmlEscape(o.spec.scenario_path) + "</code>. Accelerator of the measured step: <b>" +
          HtmlEscape(o.accelerator) + "</b> (" + HtmlEscape(o.accelerator_note) +
          "). Simulated predictions and stated assumptions, not measurements.</p>\n";
  html += "<h2>Recommendation</h2>\n" + RecommendationHtml(o);
  if (o.provisional) {
    html +=
        "<p class=\"warn\"><b>Provisional:</b> a step time is assumed; profile on the target GPU in a 7-day "
        "slot before committing to 30 days.</p>\n";
  }
  std::string label;
  const CandidateRow* rec = Recommended(o, &label);
  html += "<div>" + ScalingPlot(o) + ParetoPlot(o) + "</div>\n<div>" +
          WaterfallPlot(rec, rec ? label : "no candidate") + MemoryPlot(o) + "</div>\n";
  html += "<p id=\"render-check\">render-check: not run (scripts disabled?)</p>\n";
  html +=
      "<h2>Candidates</h2>\n<table><tr><th>gpu</th><th>nodes</th><th>GPUs</th><th>sharding</th><th>memory GB</th>"
      "<th>samples/s</th><th>efficiency</th><th>goodput</th><th>checkpoint every</th>"
      "<th>save stall (closed form)</th><th>training days</th>"
      "<th>total days (interval)</th><th>GPU-hours</th><th>cost</th>";
  for (double d : o.spec.reservation.days) {
    html += fmt::format("<th>fits {:g} d (P >= {:g})</th>", d, o.spec.reservation.probability);
  }
  html += "<th>bottleneck</th><th>assumed</th></tr>\n";
  for (const auto& r : o.rows) {
    html += fmt::format("<tr><td class=l>{}</td><td>{}</td><td>{}</td><td>{}</td><td class={}>{:.1f} / {:.0f}</td>",
                        r.gpu, r.nodes, r.gpus, r.sharding, r.memory.fits ? "ok" : "no", r.memory.total_bytes / 1e9,
                        r.memory.usable_bytes / 1e9);
    if (r.simulated) {
      html += fmt::format(
          "<td>{:.1f}</td><td>{:.0f}%</td><td>{:.1f}%</td><td>{:.0f} s</td><td>{:.3g} s {} ({:.3g} s)</td>"
          "<td>{:.2f}</td><td>{:.2f} ({:.2f}-{:.2f})</td>"
          "<td>{:.0f}</td><td>{:.0f}</td>",
          r.throughput_samples_per_s, 100 * r.scaling_efficiency, 100 * r.goodput.goodput_fraction,
          r.goodput.checkpoint_interval_s, r.checkpoint.per_save.value, HtmlEscape(r.checkpoint.per_save.status),
          r.checkpoint.closed_form_s, r.budget.training_s / kSecondsPerDay, r.budget.total_s() / kSecondsPerDay,
          r.budget_low.total_s() / kSecondsPerDay, r.budget_high.total_s() / kSecondsPerDay, r.gpu_hours, r.cost);
    } else {
      html += "<td colspan=9 class=l>does not fit in GPU memory: " + HtmlEscape(r.memory.breakdown) + "</td>";
    }
    for (size_t s = 0; s < r.fits_slot.size(); ++s) {
      const std::string p = r.simulated && s < r.reservation_high.p_within.size()
                                ? fmt::format(" (P {:.2f})", r.reservation_high.p_within[s])
                                : "";
      html += r.fits_slot[s] ? "<td class=ok>yes" + p + "</td>" : "<td class=no>no" + p + "</td>";
    }
    html += "<td class=l>" + HtmlEscape(r.bottleneck) + "</td><td class=l>" + HtmlEscape(Join(r.assumed, ", ")) +
            "</td></tr>\n";
  }
  html +=
      "</table>\n<h2>Assumptions</h2>\n<table><tr><th>input</th><th>value</th><th>status</th><th>source</th></tr>\n";
  for (const auto& a : o.assumptions) {
    const std::string status = a["status"].get<std::string>();
    html += "<tr><td class=l>" + HtmlEscape(a["input"].get<std::string>()) + "</td><td class=l>" +
            HtmlEscape(a["value"].get<std::string>()) + "</td><td class=\"l " +
            (status == "measured" ? "ok"
             : status == "input"  ? ""
                                  : "warn") +
            "\">" + HtmlEscape(status) + "</td><td class=l>" + HtmlEscape(a["source"].get<std::string>()) +
            "</td></tr>\n";
  }
  html += "</table>\n<p>How candidates were run: " + HtmlEscape(o.multinode_mode) + "; " + HtmlEscape(o.parallel_mode) +
          ".</p>\n";
  std::vector<std::string> warnings;
  for (const auto& r : o.rows) {
    for (const auto& w : r.warnings) {
      if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
    }
  }
  if (!warnings.empty()) {
    html += "<h2>Warnings</h2><ul class=\"warn\">";
    for (const auto& w : warnings) html += "<li>" + HtmlEscape(w) + "</li>";
    html += "</ul>\n";
  }
  html += "<h2>Steady state per candidate</h2>\n<ul>";
  for (const auto& r : o.rows) {
    if (r.simulated)
      html += fmt::format("<li>{} x {} {}: {}</li>", r.gpu, r.nodes, r.sharding, HtmlEscape(r.steady.detail));
  }
  html += "</ul>\n";
  html += kRenderCheckScript;
  return html + "</body></html>\n";
}

}  // namespace simreplay::plan
