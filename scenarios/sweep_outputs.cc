#include "scenarios/sweep_outputs.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "common/atomic_file.h"
#include "common/text_escape.h"
#include "models/error_band.h"

namespace simreplay::scenarios {

namespace {

const nlohmann::json* Lookup(const nlohmann::json& root, const std::string& dotted) {
  const nlohmann::json* node = &root;
  size_t start = 0;
  while (true) {
    size_t dot = dotted.find('.', start);
    std::string key = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &(*node)[key];
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
}

std::string Cell(const nlohmann::json* v) {
  if (v == nullptr) return "";
  if (v->is_string()) return v->get<std::string>();
  if (v->is_number_float()) return fmt::format("{:.9g}", v->get<double>());
  return v->dump();
}

// An SVG line chart of `metric` against the first axis, one line per combination of the other axes;
// with `low`/`high` metrics, each point gets an error bar between them.
struct ChartPoint {
  double x = 0, y = 0, low = -1, high = -1;
  bool operator<(const ChartPoint& o) const { return x < o.x; }
};
// y_unit_value: the metric's value of one axis unit (1 << 30 plots bytes in GiB); the y values, their
// intervals and the tick labels are all in that unit.
std::string Chart(const std::vector<SweepResult>& points, const std::string& metric, const std::string& title,
                  const std::string& low = "", const std::string& high = "", double y_unit_value = 1.0) {
  if (points.empty() || points[0].axes.empty()) return "";
  std::map<std::string, std::vector<ChartPoint>> series;
  double xmax = 0, ymax = 0, xmin = 1e300;
  for (const auto& p : points) {
    const auto& xv = p.axes[0].second;
    if (!xv.is_number()) return "";  // categorical first axis: the table says it all
    std::string label;
    for (size_t a = 1; a < p.axes.size(); ++a)
      label += (label.empty() ? "" : ", ") + p.axes[a].first + "=" + Cell(&p.axes[a].second);
    const auto* y = Lookup(p.result["metrics"], metric);
    if (y == nullptr || !y->is_number()) continue;
    ChartPoint cp{xv.get<double>(), y->get<double>() / y_unit_value};
    const auto* lo = low.empty() ? nullptr : Lookup(p.result["metrics"], low);
    const auto* hi = high.empty() ? nullptr : Lookup(p.result["metrics"], high);
    if (lo != nullptr && hi != nullptr && lo->is_number() && hi->is_number()) {
      cp.low = lo->get<double>() / y_unit_value;
      cp.high = hi->get<double>() / y_unit_value;
    }
    series[label.empty() ? metric : label].push_back(cp);
    xmax = std::max(xmax, cp.x);
    xmin = std::min(xmin, cp.x);
    ymax = std::max({ymax, cp.y, cp.high});
  }
  if (ymax <= 0) ymax = 1;
  if (xmax <= xmin) xmax = xmin + 1;
  const double W = 560, H = 300, L = 70, B = 40, T = 30, R = 20;
  auto sx = [&](double x) { return L + (x - xmin) / (xmax - xmin) * (W - L - R); };
  auto sy = [&](double y) { return H - B - y / (ymax * 1.1) * (H - B - T); };
  static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                  "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  std::string svg = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="11">)", W,
      H);
  svg += fmt::format(R"(<text x="{}" y="18" font-size="13" font-weight="bold">{}</text>)", L, HtmlEscape(title));
  svg += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#333"/>)", L, H - B, W - R, H - B);
  svg += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#333"/>)", L, T, L, H - B);
  for (int i = 0; i <= 4; ++i) {
    double y = ymax * 1.1 * i / 4;
    svg += fmt::format(R"(<text x="{}" y="{:.1f}" text-anchor="end">{:.3g}</text>)", L - 5, sy(y) + 4, y);
    svg += fmt::format(R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#eee"/>)", L, sy(y), W - R, sy(y));
  }
  svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">{}</text>)", (L + W - R) / 2, H - 8,
                     HtmlEscape(points[0].axes[0].first));
  int color = 0;
  double legend_y = T + 5;
  for (auto& [label, pts] : series) {
    std::sort(pts.begin(), pts.end());
    const char* c = kColors[color++ % 8];
    std::string path;
    for (const auto& [x, y, lo, hi] : pts) {
      path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "M" : " L", sx(x), sy(y));
      svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="{}"/>)", sx(x), sy(y), c);
      if (hi >= 0) {
        svg += fmt::format(R"(<line class="error-bar" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}" opacity="0.6"/>)",
                           sx(x), sy(lo), sx(x), sy(hi), c);
      }
      if (pts.size() <= 12)
        svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="9">{:.3g}</text>)", sx(x) + 4, sy(y) - 4, x);
    }
    svg += fmt::format(R"(<path d="{}" fill="none" stroke="{}" stroke-width="2"/>)", path, c);
    svg += fmt::format(R"(<text x="{}" y="{:.1f}" fill="{}">{}</text>)", W - R - 200, legend_y += 13, c,
                       HtmlEscape(label));
  }
  return svg + "</svg>\n";
}

}  // namespace

std::vector<ScalingPoint> ScalingCurve(const std::vector<SweepResult>& points, int* knee) {
  *knee = -1;
  if (points.empty()) return {};
  size_t axis = points[0].axes.size();
  for (size_t a = 0; a < points[0].axes.size(); ++a) {
    if (points[0].axes[a].first == "cluster.nodes") axis = a;
  }
  if (axis == points[0].axes.size()) return {};
  std::vector<models::ScalingSample> samples;
  for (const auto& p : points) {
    bool same_rest = p.axes.size() == points[0].axes.size();
    for (size_t a = 0; same_rest && a < p.axes.size(); ++a) {
      if (a != axis && p.axes[a].second != points[0].axes[a].second) same_rest = false;
    }
    const auto* tp = Lookup(p.result["metrics"], "train_throughput_samples_per_s");
    if (!same_rest || tp == nullptr || !tp->is_number()) continue;
    const auto* ranks = Lookup(p.result["metrics"], "cluster.ranks");
    samples.push_back({ranks != nullptr && ranks->is_number_integer() ? ranks->get<int64_t>() : 1, tp->get<double>()});
  }
  auto curve = models::ComputeScaling(samples);
  *knee = models::FindKnee(curve, kScalingKneeFraction);
  return curve;
}

// Peak host memory in GiB when any point reaches 1 GiB, else in MiB: a person reads 0.95 GiB, not 9.55e+08.
std::string MemoryChart(const std::vector<SweepResult>& points) {
  double most_bytes = 0;
  for (const auto& p : points) {
    const auto* y = Lookup(p.result["metrics"], "peak_host_memory_bytes");
    if (y != nullptr && y->is_number()) most_bytes = std::max(most_bytes, y->get<double>());
  }
  const bool gib = most_bytes >= double(1 << 30);
  return Chart(points, "peak_host_memory_bytes", gib ? "Peak host memory (GiB)" : "Peak host memory (MiB)", "", "",
               gib ? double(1 << 30) : double(1 << 20));
}

std::string ScalingChart(const std::vector<SweepResult>& points) {
  int knee = -1;
  const auto curve = ScalingCurve(points, &knee);
  if (curve.size() < 2) return "";
  double xmax = 0, ymax = 0;
  for (const auto& c : curve) {
    xmax = std::max(xmax, static_cast<double>(c.gpus));
    ymax = std::max(ymax, c.throughput_samples_per_s);
  }
  const double xmin = static_cast<double>(curve[0].gpus);
  if (xmax <= xmin) return "";
  const double W = 560, H = 300, L = 70, B = 40, T = 30, R = 60;
  auto sx = [&](double x) { return L + (x - xmin) / (xmax - xmin) * (W - L - R); };
  auto sy = [&](double y) { return H - B - y / (ymax * 1.1) * (H - B - T); };  // throughput
  auto se = [&](double e) { return H - B - e / 1.1 * (H - B - T); };           // efficiency, 0..1.1
  std::string svg = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="11">)", W,
      H);
  svg += fmt::format(R"(<text x="{}" y="18" font-size="13" font-weight="bold">Scaling: throughput (blue) and )"
                     R"(efficiency per GPU (green) vs GPUs</text>)",
                     L);
  svg += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#333"/>)", L, H - B, W - R, H - B);
  svg += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#333"/>)", L, T, L, H - B);
  for (int i = 0; i <= 4; ++i) {
    const double y = ymax * 1.1 * i / 4;
    svg += fmt::format(R"(<text x="{}" y="{:.1f}" text-anchor="end">{:.3g}</text>)", L - 5, sy(y) + 4, y);
    svg += fmt::format(R"(<text x="{}" y="{:.1f}">{:.0f}%</text>)", W - R + 5, se(1.1 * i / 4) + 4, 110.0 * i / 4);
  }
  std::string tp_path, eff_path, linear_path;
  for (const auto& c : curve) {
    const double x = sx(static_cast<double>(c.gpus));
    tp_path += fmt::format("{}{:.1f},{:.1f}", tp_path.empty() ? "M" : " L", x, sy(c.throughput_samples_per_s));
    eff_path += fmt::format("{}{:.1f},{:.1f}", eff_path.empty() ? "M" : " L", x, se(c.efficiency));
    const double linear = curve[0].throughput_samples_per_s * static_cast<double>(c.gpus) / curve[0].gpus;
    linear_path +=
        fmt::format("{}{:.1f},{:.1f}", linear_path.empty() ? "M" : " L", x, sy(std::min(linear, ymax * 1.1)));
    svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="#1f77b4"/>)", x, sy(c.throughput_samples_per_s));
    svg += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle">{}</text>)", x, H - B + 14, c.gpus);
  }
  svg += fmt::format(R"(<path d="{}" fill="none" stroke="#bbb" stroke-dasharray="4 3"/>)", linear_path);
  svg += fmt::format(R"(<path d="{}" fill="none" stroke="#1f77b4" stroke-width="2"/>)", tp_path);
  svg += fmt::format(R"(<path d="{}" fill="none" stroke="#2ca02c" stroke-width="2"/>)", eff_path);
  svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">GPUs (dashed: linear scaling)</text>)",
                     (L + W - R) / 2, H - 8);
  if (knee >= 0) {
    const double x = sx(static_cast<double>(curve[static_cast<size_t>(knee)].gpus));
    svg += fmt::format(R"(<line x1="{:.1f}" y1="{}" x2="{:.1f}" y2="{}" stroke="#d62728" stroke-dasharray="3 2"/>)", x,
                       T, x, H - B);
    svg += fmt::format(R"(<text x="{:.1f}" y="{}" fill="#d62728">knee: added GPUs buy {:.0f}% of linear</text>)", x + 4,
                       T + 12, 100 * curve[static_cast<size_t>(knee)].marginal_fraction);
  }
  svg += "</svg>\n";
  std::string note = "<p>Scaling over <code>cluster.nodes</code>: ";
  note += knee >= 0
              ? fmt::format("from {} GPUs on, an added node buys less than {:.0f}% of linear scaling.",
                            curve[static_cast<size_t>(knee)].gpus, 100 * kScalingKneeFraction)
              : fmt::format("every added node buys at least {:.0f}% of linear scaling.", 100 * kScalingKneeFraction);
  return svg + note + "</p>\n";
}

const std::vector<std::string>& CsvMetricColumns() {
  static const std::vector<std::string> columns = {"train_throughput_samples_per_s",
                                                   "train_throughput_low_samples_per_s",
                                                   "train_throughput_high_samples_per_s",
                                                   "pipeline_throughput_samples_per_s",
                                                   "gpu_idle_fraction",
                                                   "step_time_s.mean",
                                                   "step_time_s.p95",
                                                   "step_time_s.p99",
                                                   "data_wait_s.mean",
                                                   "data_wait_s.p95",
                                                   "data_wait_s.p99",
                                                   "time_to_first_batch_s",
                                                   "epoch_boundary_stall_s",
                                                   "peak_host_memory_bytes",
                                                   "cpu_utilization",
                                                   "queue_wait_s.mean",
                                                   "bottleneck.stage"};
  return columns;
}

std::string SweepCsv(const std::vector<SweepResult>& points) {
  std::string out;
  if (points.empty()) return out;
  std::vector<std::string> header;
  for (const auto& [axis, v] : points[0].axes) header.push_back(axis);
  for (const auto& c : CsvMetricColumns()) header.push_back(c);
  header.push_back("accelerator");
  header.push_back("network");  // where the NICs' rate came from (resolved.network.label; empty: one node)
  for (size_t i = 0; i < header.size(); ++i) out += (i ? "," : "") + CsvEscape(header[i]);
  out += "\n";
  for (const auto& p : points) {
    std::string row;
    for (const auto& [axis, v] : p.axes) row += (row.empty() ? "" : ",") + CsvEscape(Cell(&v));
    for (const auto& c : CsvMetricColumns()) {
      row += (row.empty() ? "" : ",") + CsvEscape(Cell(Lookup(p.result["metrics"], c)));
    }
    row += "," + CsvEscape(Cell(Lookup(p.result, "accelerator")));
    row += "," + CsvEscape(Cell(Lookup(p.result, "resolved.network.label")));
    out += row + "\n";
  }
  return out;
}

nlohmann::json SweepJson(const std::string& scenario_path, const std::vector<SweepResult>& points) {
  nlohmann::json out = {{"schema", kSweepSchema}, {"scenario_file", scenario_path}};
  nlohmann::json list = nlohmann::json::array();
  for (const auto& p : points) {
    nlohmann::json axes = nlohmann::json::object();
    for (const auto& [axis, v] : p.axes) axes[axis] = v;
    list.push_back({{"axes", axes}, {"result", p.result}});
  }
  out["points"] = list;
  return out;
}

std::string SweepTable(const std::vector<SweepResult>& points) {
  if (points.empty()) return "";
  std::string out;
  for (const auto& [axis, v] : points[0].axes) out += fmt::format("{:>22} ", axis);
  out += fmt::format("{:>12} {:>12} {:>8} {:>10} {:>10} {:>10}  {}\n", "train/s", "pipeline/s", "GPU idle",
                     "wait p95 s", "1st batch s", "peak MiB", "signal");
  for (const auto& p : points) {
    for (const auto& [axis, v] : p.axes) out += fmt::format("{:>22} ", Cell(&v));
    const auto& m = p.result["metrics"];
    out +=
        fmt::format("{:>12.2f} {:>12.2f} {:>7.1f}% {:>10.4f} {:>10.4f} {:>10.0f}  {}\n",
                    m["train_throughput_samples_per_s"].get<double>(),
                    m["pipeline_throughput_samples_per_s"].get<double>(), 100 * m["gpu_idle_fraction"].get<double>(),
                    m["data_wait_s"]["p95"].get<double>(), m["time_to_first_batch_s"].get<double>(),
                    m["peak_host_memory_bytes"].get<double>() / (1 << 20), m["bottleneck"]["stage"].get<std::string>());
  }
  return out + BestPointLine(points);
}

std::string PointLabel(const SweepResult& p) {
  std::string l;
  for (const auto& [axis, v] : p.axes) l += (l.empty() ? "" : ", ") + axis + "=" + Cell(&v);
  return l;
}

namespace {

// A warning's kind: its text with every number replaced by '#' ("num_workers = 3 outside ..." and
// "num_workers = 4 outside ..." are one kind, said with each point's own figures).
std::string WarningKind(const std::string& text) {
  std::string kind;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool digit = std::isdigit(static_cast<unsigned char>(text[i])) != 0;
    if (!digit) {
      kind += text[i];
      continue;
    }
    auto number_goes_on = [&](size_t j) {
      return j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) != 0 || text[j] == '.');
    };
    while (number_goes_on(i + 1)) ++i;
    kind += '#';
  }
  return kind;
}

// "loader.num_workers=3, 4, 6" for points that differ in one axis; their labels joined by "; " otherwise.
std::string PointList(const std::vector<const SweepResult*>& points) {
  std::string out;
  const bool one_axis = !points.empty() && points.front()->axes.size() == 1;
  for (const SweepResult* p : points) {
    if (one_axis) {
      out += out.empty() ? PointLabel(*p) : ", " + Cell(&p->axes.front().second);
    } else {
      out += (out.empty() ? "" : "; ") + PointLabel(*p);
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> GroupedWarnings(const std::vector<SweepResult>& points) {
  struct Group {
    std::string first_text;
    bool same_text = true;
    std::vector<const SweepResult*> points;
  };
  std::vector<std::string> order;
  std::map<std::string, Group> groups;
  for (const auto& p : points) {
    if (!p.result.contains("warnings")) continue;
    for (const auto& w : p.result["warnings"]) {
      const std::string text = w.get<std::string>();
      const std::string kind = WarningKind(text);
      auto [it, fresh] = groups.try_emplace(kind);
      if (fresh) {
        order.push_back(kind);
        it->second.first_text = text;
      }
      it->second.same_text = it->second.same_text && text == it->second.first_text;
      if (it->second.points.empty() || it->second.points.back() != &p) it->second.points.push_back(&p);
    }
  }
  std::vector<std::string> out;
  for (const auto& kind : order) {
    const Group& g = groups[kind];
    if (points.size() < 2 || g.points.front()->axes.empty()) {
      out.push_back(g.first_text);
    } else if (g.same_text || g.points.size() == 1) {
      out.push_back(fmt::format("{} ({}{})", g.first_text, g.points.size() == points.size() ? "every point: " : "",
                                PointList(g.points)));
    } else {
      const std::vector<const SweepResult*> rest(g.points.begin() + 1, g.points.end());
      out.push_back(fmt::format("{} ({}; likewise, with its own figures, at {})", g.first_text,
                                PointList({g.points.front()}), PointList(rest)));
    }
  }
  return out;
}

std::string BestPointLine(const std::vector<SweepResult>& points) {
  if (points.size() < 2) return "";
  auto train = [](const SweepResult& p) {
    const auto* v = Lookup(p.result["metrics"], "train_throughput_samples_per_s");
    return v != nullptr && v->is_number() ? v->get<double>() : 0.0;
  };
  // First of the maxima, then first of the rest: point order breaks ties (deterministic).
  size_t best = 0;
  for (size_t i = 1; i < points.size(); ++i) {
    if (train(points[i]) > train(points[best])) best = i;
  }
  size_t next = best == 0 ? 1 : 0;
  for (size_t i = 0; i < points.size(); ++i) {
    if (i != best && train(points[i]) > train(points[next])) next = i;
  }
  const auto& m = points[best].result["metrics"];
  const auto* low = Lookup(m, "train_throughput_low_samples_per_s");
  const auto* high = Lookup(m, "train_throughput_high_samples_per_s");
  const double margin = train(points[next]) > 0 ? train(points[best]) / train(points[next]) - 1 : 0;
  std::string line = fmt::format("best (predicted): {} at {:.2f} samples/s", PointLabel(points[best]), train(points[best]));
  if (low != nullptr && high != nullptr && low->is_number() && high->is_number()) {
    line += fmt::format(" [{:.2f} .. {:.2f} with the validated error band]", low->get<double>(), high->get<double>());
  }
  line += fmt::format("; {:+.1f}% over the next best ({})", 100 * margin, PointLabel(points[next]));
  if (margin < models::kMinActionableGain) {
    line += fmt::format(": under {:.0f}%, not a difference to act on", 100 * models::kMinActionableGain);
  }
  return line + "\n";
}

std::string SweepHtml(const std::string& scenario_path, const std::vector<SweepResult>& points) {
  std::string html =
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>simreplay what-if</title>"
      "<style>body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f4f4f4}"
      ".warn{color:#a40}</style></head><body>\n";
  html += std::string(points.size() == 1 && points[0].axes.empty() ? "<h1>simreplay simulate</h1>"
                                                                   : "<h1>simreplay what-if</h1>") +
          "\n<p>Scenario: <code>" + HtmlEscape(scenario_path) + "</code>. ";
  if (!points.empty()) {
    html += "Accelerator: <b>" + HtmlEscape(points[0].result.value("accelerator", "")) + "</b> (" +
            HtmlEscape(points[0].result.value("accelerator_note", "")) + ").";
  }
  if (!points.empty() && Lookup(points[0].result, "resolved.network.label") != nullptr) {
    html += " NICs: <b>" + HtmlEscape(Cell(Lookup(points[0].result, "resolved.network.label"))) + "</b>.";
  }
  html += " Simulated predictions, not measurements.</p>\n";
  const std::string best = BestPointLine(points);
  if (!best.empty()) html += "<p id=\"best\"><b>" + HtmlEscape(best) + "</b></p>\n";
  html += ScalingChart(points);
  html += Chart(points, "train_throughput_samples_per_s",
                "End-to-end training throughput (samples/s; bars: the validated error band)",
                "train_throughput_low_samples_per_s", "train_throughput_high_samples_per_s");
  html += Chart(points, "pipeline_throughput_samples_per_s", "Data pipeline alone (samples/s)");
  html += Chart(points, "gpu_idle_fraction", "GPU idle fraction");
  html += Chart(points, "data_wait_s.p95", "Data wait p95 (s)");
  html += MemoryChart(points);
  if (points.size() == 1 && points[0].axes.empty()) {
    html += "<h2>Metrics</h2>\n<pre>" + HtmlEscape(points[0].result["metrics"].dump(2)) + "</pre>\n";
  }
  html += "<h2>All points</h2>\n<pre>" + HtmlEscape(SweepTable(points)) + "</pre>\n<h2>Bottlenecks</h2><table><tr>";
  if (!points.empty()) {
    for (const auto& [axis, v] : points[0].axes) html += "<th>" + HtmlEscape(axis) + "</th>";
  }
  html += "<th>bottleneck</th><th style=\"text-align:left\">evidence</th></tr>\n";
  for (const auto& p : points) {
    html += "<tr>";
    for (const auto& [axis, v] : p.axes) html += "<td>" + HtmlEscape(Cell(&v)) + "</td>";
    html += "<td>" + HtmlEscape(p.result["metrics"]["bottleneck"]["stage"].get<std::string>()) +
            "</td><td style=\"text-align:left\">" +
            HtmlEscape(p.result["metrics"]["bottleneck"]["evidence"].get<std::string>()) + "</td></tr>\n";
  }
  html += "</table>\n";
  // Warnings of every point, one line per kind with the points it concerns, in first-seen order.
  const std::vector<std::string> warnings = GroupedWarnings(points);
  if (!warnings.empty()) {
    html += "<h2>Warnings</h2><ul class=\"warn\">";
    for (const auto& w : warnings) html += "<li>" + HtmlEscape(w) + "</li>";
    html += "</ul>\n";
  }
  return html + "</body></html>\n";
}

Status WriteSweepFiles(const std::string& dir, const std::string& scenario_path,
                       const std::vector<SweepResult>& points) {
  const std::vector<std::pair<std::string, std::string>> files = {
      {dir + "/results.csv", SweepCsv(points)},
      {dir + "/results.json", SweepJson(scenario_path, points).dump(2) + "\n"},
      {dir + "/report.html", SweepHtml(scenario_path, points)}};
  // All three temporaries are written before any is renamed, so a full disk leaves the previous
  // outputs (or none) rather than a new CSV beside an old report.
  std::vector<std::unique_ptr<AtomicFile>> pending;
  for (const auto& [path, content] : files) {
    pending.push_back(std::make_unique<AtomicFile>(path));
    std::ofstream out(pending.back()->temp_path(), std::ios::binary | std::ios::trunc);
    if (!out) return Status::IoError(path + ": cannot open for writing: " + std::strerror(errno));
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.close();
    if (!out) return Status::IoError(path + ": write failed: " + std::strerror(errno));
  }
  for (auto& file : pending) SIMREPLAY_RETURN_IF_ERROR(file->Commit());
  return Status::Ok();
}

}  // namespace simreplay::scenarios
