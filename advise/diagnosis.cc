#include "advise/diagnosis.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "common/text_escape.h"
#include "advise/observed_report.h"
#include "advise/percent.h"
#include "sim/metrics.h"

namespace simreplay::advise {

namespace {

using sim::Round9;


std::string GainText(const ReliefOutcome& o) {
  return fmt::format("{} [{} .. {}]", SignedPct(o.gain), SignedPct(o.gain_low), SignedPct(o.gain_high));
}

nlohmann::json MetricsJson(const PointMetrics& m) {
  return {{"train_throughput_samples_per_s", Round9(m.train_samples_per_s)},
          {"pipeline_throughput_samples_per_s", Round9(m.pipeline_samples_per_s)},
          {"gpu_idle_fraction", Round9(m.gpu_idle_fraction)},
          {"step_time_mean_s", Round9(m.step_mean_s)},
          {"step_time_p95_s", Round9(m.step_p95_s)},
          {"data_wait_mean_s", Round9(m.data_wait_mean_s)},
          {"time_to_first_batch_s", Round9(m.time_to_first_batch_s)},
          {"peak_host_memory_bytes", Round9(m.peak_host_memory_bytes)}};
}

nlohmann::json ObservedJson(const Observations& o) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : o.stages) stages.push_back(StageJson(s));
  nlohmann::json memory = nlohmann::json::array();
  for (const auto& m : o.memory) memory.push_back({Round9(m.t_s), Round9(m.host_used_bytes)});
  nlohmann::json j = {{"label", "observed: read from the trace, no model involved"},
          {"trace", o.trace_path},
          {"accelerator", o.accelerator},
          {"ranks", o.ranks},
          {"wall_s", Round9(o.wall_s)},
          {"samples", o.samples * o.ranks},
          {"steps", o.steps},
          {"train_throughput_samples_per_s", Round9(o.train_samples_per_s)},
          {"loop_breakdown_s",
           {{"data_wait", Round9(o.data_wait_s)},
            {"copies", Round9(o.copy_s)},
            {"compute", Round9(o.compute_s)},
            {"communication", Round9(o.comm_s)},
            {"other", Round9(o.other_s)}}},
          {"first_batch_wait_s", Round9(o.first_batch_wait_s)},
          {"stages", stages},
          {"host_memory_over_time", memory},
          {"peak_host_memory_bytes", Round9(o.peak_host_memory_bytes)},
          {"max_worker_pss_bytes", Round9(o.max_worker_pss_bytes)},
          {"summary", ObservedSummary(o)},
          {"cannot_see", o.cannot_see},
          {"warnings", o.warnings}};
  AddObservedFindingsJson(o, &j);
  return j;
}

}  // namespace

std::string Verdict(const CausalProfile& p) {
  if (p.critical < 0) {
    return fmt::format("balanced: no single relief (each resource {:g}x faster) buys {:.0f}% or more of end-to-end "
                       "throughput; nothing to change",
                       p.factor, 100 * kMinRecommendedGain);
  }
  const ReliefOutcome& c = p.reliefs[static_cast<size_t>(p.critical)];
  std::string line = fmt::format("{}-bound: {} buys {} end to end (predicted; GPU idle {:.0f}% -> {:.0f}%)",
                                 c.relief.resource, c.relief.change, GainText(c), 100 * p.base.gpu_idle_fraction,
                                 100 * c.metrics.gpu_idle_fraction);
  if (c.relief.action == ReliefAction::kKnob) return line + "; a setting of the job: try it";
  line += fmt::format("; that is a {} change", c.relief.action == ReliefAction::kHardware ? "hardware" : "code/model");
  if (p.best_knob >= 0) {
    const ReliefOutcome& k = p.reliefs[static_cast<size_t>(p.best_knob)];
    line += fmt::format("; the best setting of the job is {} ({})", k.relief.change, GainText(k));
  } else {
    line += fmt::format("; no setting of the job buys {:.0f}% or more", 100 * kMinRecommendedGain);
  }
  return line;
}

Diagnosis MakeDiagnosis(std::string scenario_path, Observations observed, CausalProfile profile) {
  Diagnosis d;
  d.scenario_path = std::move(scenario_path);
  d.observed = std::move(observed);
  d.profile = std::move(profile);
  d.verdict = Verdict(d.profile);
  for (const auto& o : d.profile.reliefs) {
    if (o.relief.action != ReliefAction::kKnob || o.gain < kMinRecommendedGain) continue;
    d.recommendations.push_back({o.relief.name, o.relief.change, o.gain, o.gain_low, o.gain_high});
  }
  std::stable_sort(d.recommendations.begin(), d.recommendations.end(),
                   [](const Recommendation& a, const Recommendation& b) { return a.gain > b.gain; });
  return d;
}

Diagnosis MakeObservedDiagnosis(std::string source, Observations observed) {
  Diagnosis d;
  d.scenario_path = std::move(source);
  d.observed = std::move(observed);
  d.has_hypotheses = false;
  d.profile.accelerator = d.observed.accelerator;
  d.profile.accelerator_note = "the trace manifest's accelerator (no model given)";
  d.verdict = std::string("observed only; hypotheses ") + kHypothesesNeedAModel;
  return d;
}

nlohmann::json DiagnosisJson(const Diagnosis& d) {
  const CausalProfile& p = d.profile;
  if (!d.has_hypotheses) {
    return {{"schema", kDiagnosisSchema},
            {"scenario", d.scenario_path},
            {"accelerator", p.accelerator},
            {"accelerator_note", p.accelerator_note},
            {"observed", ObservedJson(d.observed)},
            {"hypotheses", {{"label", kHypothesesNeedAModel}, {"produced", false}}},
            {"verdict",
             {{"critical_resource", nullptr},
              {"critical_relief", ""},
              {"min_recommended_gain", kMinRecommendedGain},
              {"text", d.verdict},
              {"recommendations", nlohmann::json::array()}}},
            {"warnings", nlohmann::json::array()}};
  }
  nlohmann::json reliefs = nlohmann::json::array();
  for (const auto& o : p.reliefs) {
    reliefs.push_back({{"name", o.relief.name},
                       {"resource", o.relief.resource},
                       {"action", ReliefActionName(o.relief.action)},
                       {"change", o.relief.change},
                       {"gain", Round9(o.gain)},
                       {"gain_low", Round9(o.gain_low)},
                       {"gain_high", Round9(o.gain_high)},
                       {"gpu_idle_change", Round9(o.gpu_idle_change)},
                       {"metrics", MetricsJson(o.metrics)},
                       {"warnings", o.warnings}});
  }
  nlohmann::json recs = nlohmann::json::array();
  for (const auto& r : d.recommendations) {
    recs.push_back({{"name", r.name},
                    {"change", r.change},
                    {"gain", Round9(r.gain)},
                    {"gain_low", Round9(r.gain_low)},
                    {"gain_high", Round9(r.gain_high)}});
  }
  return {{"schema", kDiagnosisSchema},
          {"scenario", d.scenario_path},
          {"accelerator", p.accelerator},
          {"accelerator_note", p.accelerator_note},
          {"observed", ObservedJson(d.observed)},
          {"hypotheses",
           {{"label", "predicted by the calibrated model (simulated reliefs), not observed"},
            {"produced", true},
            {"relief_factor", Round9(p.factor)},
            {"error_band", {{"low", Round9(p.band.error_low)}, {"high", Round9(p.band.error_high)}, {"source", p.band.source}}},
            {"base", MetricsJson(p.base)},
            {"reliefs", reliefs},
            {"simulations", p.simulations}}},
          {"verdict",
           {{"critical_resource", CriticalResource(p)},
            {"critical_relief", p.critical < 0 ? "" : p.reliefs[static_cast<size_t>(p.critical)].relief.name},
            {"min_recommended_gain", kMinRecommendedGain},
            {"text", d.verdict},
            {"recommendations", recs}}},
          {"warnings", p.base_warnings}};
}

std::string DiagnosisText(const Diagnosis& d) {
  const CausalProfile& p = d.profile;
  std::string out = fmt::format("accelerator: {} ({})\n\n", p.accelerator, p.accelerator_note);
  out += "OBSERVED (" + d.observed.trace_path + ")\n  " + ObservedSummary(d.observed) + "\n";
  for (const auto& s : d.observed.stages) {
    out += fmt::format("  {:<18} mean {:9.3f} ms  p50 {:9.3f}  p95 {:9.3f}  p99 {:9.3f}  max {:9.3f}  (n={})\n",
                       s.stage, 1e3 * s.mean_s, 1e3 * s.p50_s, 1e3 * s.p95_s, 1e3 * s.p99_s, 1e3 * s.max_s, s.count);
  }
  for (const auto& line : ObservedFindingLines(d.observed)) out += "  " + line + "\n";
  for (const auto& c : d.observed.cannot_see) out += "  cannot see: " + c + "\n";
  if (!d.has_hypotheses) return out + "\nHYPOTHESES\n  " + kHypothesesNeedAModel + "\n";
  out += fmt::format(
      "\nHYPOTHESES (simulated, each resource {:g}x faster alone; interval from the validated error band {:+.1f}% .. "
      "{:+.1f}%)\n",
      p.factor, 100 * p.band.error_low, 100 * p.band.error_high);
  out += fmt::format("  as given: {:.2f} samples/s end to end, {:.2f} pipeline alone, GPU idle {:.1f}%\n",
                     p.base.train_samples_per_s, p.base.pipeline_samples_per_s, 100 * p.base.gpu_idle_fraction);
  std::vector<size_t> order(p.reliefs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p.reliefs[a].gain > p.reliefs[b].gain; });
  out += fmt::format("  {:<20} {:<11} {:>9} {:>22} {:>9}  {}\n", "relief", "kind", "gain", "interval", "GPU idle",
                     "change");
  for (size_t i : order) {
    const auto& o = p.reliefs[i];
    out += fmt::format("  {:<20} {:<11} {:>9} {:>22} {:>8.1f}%  {}\n", o.relief.name, ReliefActionName(o.relief.action),
                       SignedPct(o.gain), "[" + SignedPct(o.gain_low) + " .. " + SignedPct(o.gain_high) + "]",
                       100 * o.metrics.gpu_idle_fraction, o.relief.change);
  }
  out += "\nVERDICT\n  " + d.verdict + "\n";
  for (const auto& r : d.recommendations) {
    out += fmt::format("  recommend: {} ({} [{} .. {}])\n", r.change, SignedPct(r.gain), SignedPct(r.gain_low), SignedPct(r.gain_high));
  }
  if (d.recommendations.empty()) out += "  recommend: no change to the job's settings (none buys 5% or more)\n";
  out += fmt::format("  ({} simulations)\n", p.simulations);
  return out;
}

namespace {

// A horizontal bar chart: one row per entry, value bars from `origin`, optional interval whiskers.
struct Bar {
  std::string label;
  double start = 0, value = 0;
  double low = NAN, high = NAN;
  std::string color = "#4878a8";
  std::string note;
};

std::string BarChart(const std::string& id, const std::string& title, const std::string& unit,
                     const std::vector<Bar>& bars) {
  const double w = 900, left = 230, right = 190, row = 22, top = 34;
  const double h = top + row * static_cast<double>(bars.size()) + 30;
  double lo = 0, hi = 0;
  for (const auto& b : bars) {
    lo = std::min({lo, b.start, b.start + b.value, std::isnan(b.low) ? 0 : b.low});
    hi = std::max({hi, b.start, b.start + b.value, std::isnan(b.high) ? 0 : b.high});
  }
  if (hi - lo <= 0) hi = lo + 1;
  auto X = [&](double v) { return left + (v - lo) / (hi - lo) * (w - left - right); };
  std::string svg = fmt::format(
      R"(<svg class="plot" id="{}" xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="11">)",
      id, w, h);
  svg += fmt::format(R"(<text x="10" y="18" font-size="13" font-weight="bold">{}</text>)", HtmlEscape(title));
  svg += fmt::format(R"(<line x1="{:.1f}" y1="{}" x2="{:.1f}" y2="{}" stroke="#333"/>)", X(0), top - 4, X(0), h - 26);
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double y = top + row * static_cast<double>(i);
    const double x0 = X(std::min(b.start, b.start + b.value)), x1 = X(std::max(b.start, b.start + b.value));
    svg += fmt::format(R"(<text x="{}" y="{:.1f}" text-anchor="end">{}</text>)", left - 6, y + 14, HtmlEscape(b.label));
    svg += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{}" fill="{}"/>)", x0, y + 3,
                       std::max(1.0, x1 - x0), row - 6, b.color);
    if (!std::isnan(b.low) && !std::isnan(b.high)) {
      svg += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#111" stroke-width="1.5"/>)",
                         X(b.low), y + row / 2, X(b.high), y + row / 2);
      for (double v : {b.low, b.high}) {
        svg += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#111"/>)", X(v), y + 5, X(v),
                           y + row - 5);
      }
    }
    svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}">{}</text>)", w - right + 8, y + 14, HtmlEscape(b.note));
  }
  svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{:.4g}</text>)", X(lo), h - 10, lo);
  svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{:.4g} {}</text>)", X(hi), h - 10, hi,
                     HtmlEscape(unit));
  return svg + "</svg>\n";
}

std::string MemoryChart(const Observations& o) {
  const double w = 900, h = 240, left = 70, right = 20, top = 30, bottom = 30;
  std::string svg = fmt::format(
      R"(<svg class="plot" id="plot-memory" xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="11">)",
      w, h);
  svg += R"(<text x="10" y="18" font-size="13" font-weight="bold">Observed: host memory in use over the run (GiB)</text>)";
  if (o.memory.empty()) return svg + R"(<text x="80" y="120">no host records in the trace</text></svg>)" "\n";
  double t_max = 1e-9, m_max = 1e-9;
  for (const auto& m : o.memory) {
    t_max = std::max(t_max, m.t_s);
    m_max = std::max(m_max, m.host_used_bytes);
  }
  std::string path;
  for (const auto& m : o.memory) {
    path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "M" : " L", left + m.t_s / t_max * (w - left - right),
                        h - bottom - m.host_used_bytes / m_max * (h - top - bottom));
  }
  svg += fmt::format(R"(<path d="{}" fill="none" stroke="#c44e52" stroke-width="2"/>)", path);
  svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="end">{:.2f}</text>)", left - 4, top + 4, m_max / (1 << 30));
  svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="end">0</text>)", left - 4, h - bottom);
  svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="end">{:.2f} s</text>)", w - right, h - 10, t_max);
  return svg + "</svg>\n";
}

}  // namespace

std::string DiagnosisHtml(const Diagnosis& d) {
  const CausalProfile& p = d.profile;
  const Observations& o = d.observed;
  const double steps = std::max<double>(1, static_cast<double>(o.steps));
  std::vector<Bar> waterfall;
  double at = 0;
  const std::pair<const char*, double> parts[] = {{"data wait", o.data_wait_s}, {"pin + H2D copies", o.copy_s},
                                                  {"step compute", o.compute_s}, {"communication", o.comm_s},
                                                  {"other", o.other_s}};
  for (const auto& [name, total_s] : parts) {
    const double ms = 1e3 * total_s / steps;
    waterfall.push_back({name, at, ms, NAN, NAN, "#55a868", fmt::format("{:.2f} ms", ms)});
    at += ms;
  }
  std::vector<Bar> stages;
  for (const auto& s : o.stages) {
    stages.push_back({s.stage, 0, 1e3 * s.mean_s, 1e3 * s.p50_s, 1e3 * s.p99_s, "#8172b2",
                      fmt::format("mean {:.2f}, p95 {:.2f}, p99 {:.2f}", 1e3 * s.mean_s, 1e3 * s.p95_s, 1e3 * s.p99_s)});
  }
  if (o.media.size() > 1) {  // one format adds nothing to the rows above
    for (const auto& m : o.media) {
      for (const auto& s : m.stages) {
        stages.push_back({m.format + " " + s.stage, 0, 1e3 * s.mean_s, 1e3 * s.p50_s, 1e3 * s.p99_s, "#b07aa1",
                          fmt::format("mean {:.2f}, p99 {:.2f} (n={})", 1e3 * s.mean_s, 1e3 * s.p99_s, s.count)});
      }
    }
  }
  std::vector<Bar> gains;
  for (const auto& r : p.reliefs) {
    const std::string color = r.relief.action == ReliefAction::kKnob       ? "#dd8452"
                              : r.relief.action == ReliefAction::kHardware ? "#4878a8"
                                                                           : "#999999";
    gains.push_back({r.relief.name + " (" + ReliefActionName(r.relief.action) + ")", 0, 100 * r.gain,
                     100 * r.gain_low, 100 * r.gain_high, color, SignedPct(r.gain)});
  }
  std::string html = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>simreplay diagnosis</title>\n"
                     "<style>body{font-family:sans-serif;margin:24px;max-width:960px} .obs{border-left:4px solid "
                     "#55a868;padding-left:10px} .hyp{border-left:4px solid #dd8452;padding-left:10px} "
                     "td,th{padding:2px 8px;text-align:left}</style></head><body>\n";
  html += "<h1>Diagnosis: " + HtmlEscape(d.scenario_path) + "</h1>\n";
  html += "<p><b>Accelerator: " + HtmlEscape(p.accelerator) + "</b> (" + HtmlEscape(p.accelerator_note) + ")</p>\n";
  html += "<p id=\"verdict\"><b>Verdict:</b> " + HtmlEscape(d.verdict) + "</p>\n";
  html += "<div class=\"obs\"><h2>Observed (from the trace, no model)</h2>\n<p>" + HtmlEscape(ObservedSummary(o)) + "</p>\n";
  for (const auto& c : o.cannot_see) html += "<p><i>Cannot see: " + HtmlEscape(c) + "</i></p>\n";
  html += BarChart("plot-waterfall", "Observed: where one step's wall time goes (ms per step, rank 0)", "ms", waterfall);
  if (!stages.empty()) {
    html += BarChart("plot-stages", "Observed: per-sample stage cost (bar = mean, whisker = p50 .. p99, ms)", "ms",
                     stages);
  }
  html += MemoryChart(o);
  html += "<ul id=\"findings\">\n";
  for (const auto& line : ObservedFindingLines(o)) html += "<li>" + HtmlEscape(line) + "</li>\n";
  html += "</ul></div>\n";
  if (!d.has_hypotheses) {
    html += std::string("<div class=\"hyp\"><h2>Hypotheses</h2>\n<p>") + HtmlEscape(kHypothesesNeedAModel) +
            "</p></div>\n";
  } else {
    html += fmt::format(
        "<div class=\"hyp\"><h2>Hypotheses (simulated: each resource {:g}x faster alone)</h2>\n<p>As given: {:.2f} "
        "samples/s end to end, {:.2f} pipeline alone, GPU idle {:.1f}%. Whiskers: the validated error band "
        "({:+.1f}% .. {:+.1f}%, {}). Orange = a setting of the job, blue = hardware, grey = faster code or "
        "accelerator (explains, not a change to make).</p>\n",
        p.factor, p.base.train_samples_per_s, p.base.pipeline_samples_per_s, 100 * p.base.gpu_idle_fraction,
        100 * p.band.error_low, 100 * p.band.error_high, HtmlEscape(p.band.source));
    html += BarChart("plot-gains", "Predicted end-to-end throughput gain per relief (%)", "%", gains);
    html += "<table><tr><th>relief</th><th>kind</th><th>change</th><th>gain</th><th>GPU idle</th></tr>\n";
    for (const auto& r : p.reliefs) {
      html += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1f}%</td></tr>\n",
                          HtmlEscape(r.relief.name), ReliefActionName(r.relief.action), HtmlEscape(r.relief.change),
                          HtmlEscape(GainText(r)), 100 * r.metrics.gpu_idle_fraction);
    }
    html += "</table></div>\n";
  }
  const int plots = 1 + (d.has_hypotheses ? 1 : 0) + (stages.empty() ? 0 : 1) + (o.memory.empty() ? 0 : 1);
  html += fmt::format(
      "<p id=\"render-check\"></p>\n<script>\n(function(){{try{{var n=0;document.querySelectorAll('svg.plot')."
      "forEach(function(s){{if(s.getBBox().width>0&&s.querySelectorAll('rect,path').length>0)n++;}});"
      "document.getElementById('render-check').textContent='render-check: '+n+' of {} plots drawn';}}catch(e){{"
      "var p=document.createElement('pre');p.id='script-error';p.textContent=String(e);document.body.appendChild(p);}}"
      "}})();\n</script>\n</body></html>\n",
      plots);
  return html;
}

}  // namespace simreplay::advise
