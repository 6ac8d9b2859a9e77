#include "validation/report_writer.h"

#include <fmt/format.h>

#include <cmath>

#include "validation/measurement.h"

namespace simreplay::validation {

namespace {

double Num(const nlohmann::json& j, double fallback = NAN) { return j.is_number() ? j.get<double>() : fallback; }

// A metric value in its natural unit for tables.
std::string Fmt(const std::string& metric, double v) {
  if (std::isnan(v)) return "–";
  if (metric == kGpuIdle) return fmt::format("{:.1f}%", 100 * v);
  if (metric == kPeakMemory) return fmt::format("{:.0f} MiB", v / (1 << 20));
  if (metric == kWaitMean || metric == kWaitP95 || metric == kFirstBatch) return fmt::format("{:.1f} ms", 1000 * v);
  return fmt::format("{:.1f}", v);
}

std::string MetricLabel(const std::string& metric) {
  if (metric == kTrainThroughput) return "train throughput (samples/s, end to end)";
  if (metric == kPipelineThroughput) return "pipeline throughput (samples/s, no step)";
  if (metric == kGpuIdle) return "GPU idle (emulated step)";
  if (metric == kWaitMean) return "data wait mean";
  if (metric == kWaitP95) return "data wait p95";
  if (metric == kFirstBatch) return "time to first batch";
  if (metric == kPeakMemory) return "peak host memory (main RSS + workers PSS)";
  return metric;
}

std::string ErrorText(const nlohmann::json& m) {
  if (!m.contains("error")) return "–";
  double e = m["error"].get<double>();
  return m.value("unit_of_error", "%") == "pp" ? fmt::format("{:+.1f} pp", e) : fmt::format("{:+.1f}%", e);
}

std::string Inline(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  return j.dump();
}

}  // namespace

std::string RenderSuiteTable(const nlohmann::json& v) {
  std::string out;
  out +=
      "| case | factor | predicted from | train pred | train meas (95% CI) | err | pipeline pred | pipeline meas (95% "
      "CI) | err | "
      "GPU idle pred | GPU idle meas (95% CI) | err | cv train |\n";
  out += "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < v["results"].size(); ++i) {
    const auto& r = v["results"][i];
    const auto& mx = v["matrix"][i];
    std::string factor;
    for (const auto& f : mx["factors_vs_base"]) {
      factor += (factor.empty() ? "" : ", ") + f.get<std::string>() + "=" + Inline(mx["config"][f.get<std::string>()]);
    }
    if (factor.empty()) factor = "(base)";
    out += fmt::format("| {} | {} | {} ", r["case"].get<std::string>(), factor, Inline(mx["predicted_from"]));
    for (const char* metric : {kTrainThroughput, kPipelineThroughput, kGpuIdle}) {
      const auto& m = r["metrics"][metric];
      std::string meas = "–";
      if (m.contains("measured")) {
        meas = fmt::format("{} ({}–{})", Fmt(metric, Num(m["measured"]["median"])),
                           Fmt(metric, Num(m["measured"]["ci"][0])), Fmt(metric, Num(m["measured"]["ci"][1])));
      }
      out += fmt::format("| {} | {} | {}{} ", m.contains("predicted") ? Fmt(metric, Num(m["predicted"])) : "–", meas,
                         ErrorText(m), m.value("inside_ci", false) ? " ✓" : "");
    }
    const auto& t = r["metrics"][kTrainThroughput];
    out +=
        fmt::format("| {} |\n", t.contains("measured") ? fmt::format("{:.1f}%", 100 * Num(t["measured"]["cv"])) : "–");
  }
  const auto& th = v["thresholds"];
  out += "\n";
  if (th.contains("median_abs_train_throughput_error_pct")) {
    const auto& a = th["median_abs_train_throughput_error_pct"];
    out += fmt::format("median |train throughput error| = {} (limit {}%): {}\n",
                       a["value"].is_number() ? fmt::format("{:.1f}%", a["value"].get<double>()) : "–",
                       Inline(a.value("limit", nlohmann::json(nullptr))), a.value("pass", false) ? "PASS" : "FAIL");
  }
  if (th.contains("max_abs_gpu_idle_error_pp")) {
    const auto& a = th["max_abs_gpu_idle_error_pp"];
    out += fmt::format("max |GPU idle error| = {} (limit {} pp{}): {}\n",
                       a["value"].is_number() ? fmt::format("{:.1f} pp", a["value"].get<double>()) : "–",
                       Inline(a.value("limit", nlohmann::json(nullptr))),
                       a.contains("case") ? ", worst " + a["case"].get<std::string>() : "",
                       a.value("pass", false) ? "PASS" : "FAIL");
  }
  if (th.contains("beats_persistence")) {
    const auto& b = th["beats_persistence"];
    out += fmt::format(
        "persistence baseline on the {} case(s) the factor changes: model {} vs baseline {} (must beat by {} pp): {}\n",
        Inline(b["cases"]),
        b["model_median_abs_error_pct"].is_number() ? fmt::format("{:.1f}%", Num(b["model_median_abs_error_pct"]))
                                                    : "–",
        b["baseline_median_abs_error_pct"].is_number() ? fmt::format("{:.1f}%", Num(b["baseline_median_abs_error_pct"]))
                                                       : "–",
        Inline(b["margin_pp"]), b.value("pass", false) ? "PASS" : "FAIL");
  }
  if (v.contains("completeness")) {
    out += fmt::format("completeness ({} of {} planned runs recorded): {}\n",
                       Inline(v["completeness"]["runs_recorded"]), Inline(v["completeness"]["runs_planned"]),
                       v["completeness"].value("pass", false) ? "PASS" : "FAIL");
    // Each problem on its own line: a CI log that keeps only this summary still says what was missing.
    for (const auto& problem : v["completeness"].value("problems", nlohmann::json::array())) {
      out += fmt::format("  completeness problem: {}\n", problem.get<std::string>());
    }
  }
  if (v.contains("thresholds") && v["thresholds"].contains("per_case")) {
    for (const auto& c : v["thresholds"]["per_case"]) {
      if (!c.value("pass", true)) out += fmt::format("  case over its limit: {}\n", Inline(c));
    }
  }
  return out;
}

std::string RenderMarkdownReport(const nlohmann::json& v) {
  std::string o;
  o += fmt::format("# Validation: {}\n\n", v.value("name", ""));
  if (!v.value("description", "").empty()) o += v["description"].get<std::string>() + "\n\n";
  o += fmt::format("**Accelerator: {}.** {}\n\n", v.value("accelerator", "emulated"), v.value("accelerator_note", ""));
  o += fmt::format("Overall: **{}** (completeness {}, thresholds {}, correctness {}, rankings agree: {})\n\n",
                   v.value("pass", false) ? "PASS" : "FAIL", v["completeness"].value("pass", false) ? "pass" : "FAIL",
                   v["thresholds"].value("enabled", false) ? (v["thresholds"].value("pass", false) ? "pass" : "FAIL")
                                                           : "not enforced",
                   v["correctness"].value("pass", false) ? "pass" : "FAIL",
                   v.value("rankings_agree", false) ? "yes" : "no");

  o += "## Experiment matrix\n\n| case | num_workers | batch_size | prefetch_factor | pin_memory | persistent_workers "
       "| format | "
       "varies | predicted from | CPU probe | train reps | pipeline reps |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& m : v["matrix"]) {
    const auto& c = m["config"];
    std::string factors;
    for (const auto& f : m["factors_vs_base"]) factors += (factors.empty() ? "" : ", ") + f.get<std::string>();
    o += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", Inline(m["case"]),
                     Inline(c["num_workers"]), Inline(c["batch_size"]), Inline(c["prefetch_factor"]),
                     Inline(c["pin_memory"]), Inline(c["persistent_workers"]), Inline(c["format"]),
                     factors.empty() ? "(base)" : factors, Inline(m["predicted_from"]),
                     m.contains("cpu_probe") ? m["cpu_probe"].get<std::string>() : "–", Inline(m["train_reps"]),
                     Inline(m["pipeline_reps"]));
  }

  o += "\n## Manifest\n\n";
  const auto& mf = v["manifest"];
  for (const char* key :
       {"commit", "dirty", "versions", "hardware", "storage", "data", "accelerator", "runs_started_utc"}) {
    if (mf.contains(key)) o += fmt::format("- **{}**: `{}`\n", key, Inline(mf[key]));
  }
  for (const auto& [key, value] : v["environment"].items()) o += fmt::format("- **{}**: `{}`\n", key, Inline(value));
  o += "\nCommands (first measured run of each case and kind):\n\n```\n";
  for (const auto& [key, argv] : mf["commands"].items()) {
    std::string line;
    for (const auto& a : argv) line += (line.empty() ? "" : " ") + a.get<std::string>();
    o += fmt::format("{}: {}\n", key, line);
  }
  o += "```\n";

  o += "\n## Method\n\n";
  for (const auto& [key, value] : v["method"].items()) o += fmt::format("- **{}**: {}\n", key, Inline(value));
  o += "\nNoise: ";
  const auto& n = v["noise"];
  o += fmt::format("1-minute load average between {} and {} during the runs; {} measured runs, {} failed. {}\n",
                   Inline(n["loadavg_1min_min"]), Inline(n["loadavg_1min_max"]), Inline(n["runs_measured"]),
                   Inline(n["runs_failed"]), Inline(n["note"]));

  o += "\n## Predicted vs measured (summary)\n\n";
  o += RenderSuiteTable(v);
  o += "\nError = (predicted − measured median) / measured median; fractions in percentage points. ✓: the prediction "
       "lies "
       "inside the measured 95% interval.\n";

  o += "\n## Results per case (all metrics)\n\n";
  for (const auto& r : v["results"]) {
    o += fmt::format("### {}\n\n", r["case"].get<std::string>());
    if (r.contains("prediction_error"))
      o += fmt::format("Not predicted: {}\n\n", r["prediction_error"].get<std::string>());
    o += "| metric | predicted | measured median | 95% CI | cv | n | error | inside CI "
         "|\n|---|---|---|---|---|---|---|---|\n";
    for (const auto& metric : MetricNames()) {
      const auto& m = r["metrics"][metric];
      std::string meas = "–", ci = "–", cv = "–", count = "0";
      if (m.contains("measured")) {
        meas = Fmt(metric, Num(m["measured"]["median"]));
        ci = Fmt(metric, Num(m["measured"]["ci"][0])) + " – " + Fmt(metric, Num(m["measured"]["ci"][1]));
        cv = fmt::format("{:.1f}%", 100 * Num(m["measured"]["cv"]));
        count = Inline(m["measured"]["n"]);
      }
      o += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", MetricLabel(metric),
                       m.contains("predicted") ? Fmt(metric, Num(m["predicted"])) : "–", meas, ci, cv, count,
                       ErrorText(m), m.contains("inside_ci") ? (m["inside_ci"].get<bool>() ? "yes" : "no") : "–");
    }
    if (r.contains("host_mem_used_peak_bytes_median")) {
      o += fmt::format("\nHost-wide memory in use (peak, includes other tenants; not compared): {:.0f} MiB.",
                       Num(r["host_mem_used_peak_bytes_median"]) / (1 << 20));
    }
    if (r.contains("sample_cpu_s_median") && r.contains("sample_wall_s_median")) {
      o += fmt::format(" Per sample (trace): {:.2f} ms CPU, {:.2f} ms wall{}.", 1000 * Num(r["sample_cpu_s_median"]),
                       1000 * Num(r["sample_wall_s_median"]),
                       r.contains("sample_page_faults_median")
                           ? fmt::format(", {:.0f} page faults", Num(r["sample_page_faults_median"]))
                           : std::string());
    }
    if (r.contains("host_cpu_busy_fraction_median")) {
      o += fmt::format(" Host cores busy (all processes): {:.0f}%.", 100 * Num(r["host_cpu_busy_fraction_median"]));
    }
    o += "\n";
    if (r.contains("prediction_warnings") && !r["prediction_warnings"].empty()) {
      o += "\nPrediction notes:\n";
      for (const auto& w : r["prediction_warnings"]) o += "- " + w.get<std::string>() + "\n";
    }
    o += "\n";
  }

  o += "## Rankings\n\n| group | metric | cases | predicted best | measured best | same best | Kendall tau-b "
       "|\n|---|---|---|---|---|---|---|\n";
  for (const auto& r : v["rankings"]) {
    std::string cases;
    for (const auto& c : r["cases"]) cases += (cases.empty() ? "" : ", ") + c.get<std::string>();
    o += fmt::format("| {} | {} | {} | {} | {} | {} | {:.2f} |\n", Inline(r["group"]), Inline(r["metric"]), cases,
                     Inline(r["predicted_best"]), Inline(r["measured_best"]), r["same_best"].get<bool>() ? "yes" : "no",
                     Num(r["kendall_tau_b"]));
  }

  o += "\n## Correctness (same samples)\n\n| kind | A | B | compared | mismatched | pass | detail "
       "|\n|---|---|---|---|---|---|---|\n";
  for (const auto& c : v["correctness"]["checks"]) {
    o += fmt::format("| {} | {} | {} | {} | {} | {} | {}{} |\n", Inline(c["kind"]), Inline(c["a"]), Inline(c["b"]),
                     Inline(c["compared"]), Inline(c["mismatched"]), c["pass"].get<bool>() ? "yes" : "**NO**",
                     Inline(c["detail"]), c.contains("rule") ? " — " + c["rule"].get<std::string>() : "");
  }

  o += "\n## Observed bottlenecks (measured)\n\n";
  for (const auto& b : v["observed_bottlenecks"])
    o += fmt::format("- **{}**: {}\n", Inline(b["case"]), Inline(b["verdict"]));
  o += "\n## Hypotheses (the simulator's explanation, not measured)\n\n";
  for (const auto& h : v["hypotheses"]) {
    o += fmt::format("- **{}**: `{}` — {} ({})\n", Inline(h["case"]), Inline(h["stage"]), Inline(h["evidence"]),
                     Inline(h["source"]));
  }

  o += "\n## A/B decisions: deployment and rollback checks\n\n";
  for (const auto& c : v["comparisons"]) {
    o += fmt::format("### {} → {} ({})\n\n", Inline(c["a"]), Inline(c["b"]), Inline(c["factor"]));
    o += fmt::format("Measured train-throughput gain {:+.1f}% (95% CI {:+.1f}% to {:+.1f}%, {} interleaved pairs)",
                     Num(c["measured_train_gain_pct"]), Num(c["measured_train_gain_ci_pct"][0]),
                     Num(c["measured_train_gain_ci_pct"][1]), Inline(c["pairs"]));
    if (c.contains("predicted_train_gain_pct"))
      o += fmt::format("; predicted {:+.1f}%", Num(c["predicted_train_gain_pct"]));
    o += fmt::format(". **Decision: {}.**\n\n", Inline(c["decision"]));
    for (const auto& k : c["adopt_checks"]) {
      o += fmt::format("- adopt if: {} — {} ({})\n", Inline(k["check"]), k["pass"].get<bool>() ? "met" : "not met",
                       Inline(k["value"]));
    }
    for (const auto& k : c["rollback_checks"]) {
      o += fmt::format("- rollback if: {} — {}\n", Inline(k["check"]),
                       k["triggered"].get<bool>() ? "TRIGGERED" : "not triggered");
    }
    o += "\n";
  }

  o += "## Thresholds\n\n";
  const auto& th = v["thresholds"];
  o += fmt::format("Enforced: {}. Long-term target: {}.\n\n", th.value("enabled", false) ? "yes" : "no",
                   th.value("long_term_target", ""));
  if (!th["cases_over_limit"].empty()) {
    o += "Cases over a limit:\n";
    for (const auto& f : th["cases_over_limit"]) o += "- " + f.get<std::string>() + "\n";
  }
  o += "\n| case | train error | limit | GPU idle error | limit | pass |\n|---|---|---|---|---|---|\n";
  for (const auto& c : th["per_case"]) {
    auto num = [](const nlohmann::json& x, const char* unit) {
      return x.is_number() ? fmt::format("{:+.1f}{}", x.get<double>(), unit) : std::string("–");
    };
    o += fmt::format("| {} | {} | {} | {} | {} | {} |\n", Inline(c["case"]), num(c["train_throughput_error_pct"], "%"),
                     c["train_throughput_limit_pct"].is_number() ? Inline(c["train_throughput_limit_pct"]) + "%" : "–",
                     num(c["gpu_idle_error_pp"], " pp"), Inline(c["gpu_idle_limit_pp"]) + " pp",
                     c["pass"].get<bool>() ? "yes" : "no");
  }

  o += "\n## Persistence baseline\n\n";
  const auto& base = v["baseline"];
  o += Inline(base["definition"]) +
       ".\n\n| case | from | changed by factor | baseline error | model error |\n"
       "|---|---|---|---|---|\n";
  for (const auto& c : base["cases"]) {
    o += fmt::format("| {} | {} | {} | {:+.1f}% | {} |\n", Inline(c["case"]), Inline(c["baseline_from"]),
                     c["changed_by_factor"].get<bool>() ? "yes" : "no", Num(c["train_throughput_baseline_error_pct"]),
                     c.contains("train_throughput_model_error_pct")
                         ? fmt::format("{:+.1f}%", Num(c["train_throughput_model_error_pct"]))
                         : "–");
  }

  o += "\n## Completeness\n\n";
  const auto& comp = v["completeness"];
  o += fmt::format("{} of {} planned runs recorded: {}\n", Inline(comp["runs_recorded"]), Inline(comp["runs_planned"]),
                   comp.value("pass", false) ? "complete" : "INCOMPLETE (the validation fails)");
  for (const auto& p : comp["problems"]) o += "- " + p.get<std::string>() + "\n";
  if (!v["warnings"].empty()) {
    o += "\n## Warnings\n\n";
    for (const auto& w : v["warnings"]) o += "- " + w.get<std::string>() + "\n";
  }
  return o;
}

}  // namespace simreplay::validation
