#include "advise/tune_outputs.h"

#include <algorithm>

#include <fmt/format.h>

#include "advise/percent.h"
#include "sim/metrics.h"

namespace simreplay::advise {

namespace {

using sim::Round9;

nlohmann::json KnobsJson(const Knobs& k) {
  return {{"num_workers", k.num_workers},
          {"prefetch_factor", k.prefetch_factor},
          {"pin_memory", k.pin_memory},
          {"persistent_workers", k.persistent_workers},
          {"format", k.format},
          {"cpu_cores", k.cpu_cores},
          {"access", k.sequential ? "sequential" : "random"},
          {"cache", k.cache.empty() ? "none" : k.cache},
          {"bucket_bytes", Round9(k.bucket_bytes)},
          {"overlap", Round9(k.overlap)},
          {"decode_device", k.gpu_decode ? "gpu" : "cpu"}};
}

// The factors `simreplay validate` can set in the user's own command (docs/validation-format.md).
bool ValidateFactor(const std::string& factor) {
  return factor == "num_workers" || factor == "prefetch_factor" || factor == "pin_memory" ||
         factor == "persistent_workers" || factor == "format";
}

nlohmann::json ToolsJson(const TuneResult& r) {
  nlohmann::json tools = nlohmann::json::array();
  for (const auto& t : r.tools) {
    const bool searched = t.compatible && !t.simulated_as.empty();
    const bool suggested = searched && t.simulated_as == "decode.device=gpu" && r.best.knobs.gpu_decode &&
                           !r.current.knobs.gpu_decode;
    tools.push_back({{"name", t.name},
                     {"tool", t.tool},
                     {"compatible", t.compatible},
                     {"incompatible_because", t.incompatible},
                     {"unverified", t.unverified},
                     {"simulated_as", t.simulated_as},
                     {"searched", searched},
                     {"suggested", suggested},
                     {"sources", t.sources}});
  }
  return {{"table", "advise/tool_compatibility.json"}, {"checked", r.tools_checked}, {"tools", tools}};
}

nlohmann::json HalvingJson(const Halving& h, double contender_share) {
  nlohmann::json rungs = nlohmann::json::array();
  for (const auto& g : h.rungs) rungs.push_back({{"steps", g.steps}, {"candidates", g.candidates}, {"kept", g.kept}});
  return {{"contender_share", contender_share},
          {"neighbourhood", h.neighbourhood},
          {"candidates", h.candidates},
          {"dropped", h.dropped},
          {"over_budget", h.over_budget},
          {"rungs", rungs},
          {"short_simulations", h.short_simulations},
          {"skipped_because", h.skipped_because}};
}

nlohmann::json EvaluatedJson(const Evaluated& e) {
  return {{"knobs", KnobsJson(e.knobs)},
          {"objective", Round9(e.objective)},
          {"feasible", e.feasible},
          {"infeasible_because", e.infeasible_because},
          {"train_throughput_samples_per_s", Round9(e.metrics.train_samples_per_s)},
          {"pipeline_throughput_samples_per_s", Round9(e.metrics.pipeline_samples_per_s)},
          {"gpu_idle_fraction", Round9(e.metrics.gpu_idle_fraction)},
          {"step_time_p95_s", Round9(e.metrics.step_p95_s)},
          {"peak_host_memory_bytes", Round9(e.metrics.peak_host_memory_bytes)}};
}


std::string Criteria(const TuneResult& r) {
  return fmt::format(
      "adopt when the recommended configuration's median measured throughput is at least {} over the current one's "
      "(the interval's low end), its correctness checks pass and its peak host memory stays within the limit; roll "
      "back when GPU idle rises by more than 5 percentage points, throughput falls below the current configuration's, "
      "or memory exceeds the limit",
      SignedPct(std::max(0.0, r.gain_low)));
}

}  // namespace

nlohmann::json ChangedFactors(const TuneResult& r) {
  const Knobs& a = r.current.knobs;
  const Knobs& b = r.best.knobs;
  nlohmann::json f = nlohmann::json::object();
  if (a.num_workers != b.num_workers) f["num_workers"] = b.num_workers;
  if (a.prefetch_factor != b.prefetch_factor) f["prefetch_factor"] = b.prefetch_factor;
  if (a.pin_memory != b.pin_memory) f["pin_memory"] = b.pin_memory;
  if (a.persistent_workers != b.persistent_workers) f["persistent_workers"] = b.persistent_workers;
  if (a.format != b.format) f["format"] = b.format;
  if (a.cpu_cores != b.cpu_cores) f["cpu_cores"] = b.cpu_cores;
  if (a.sequential != b.sequential) f["access"] = b.sequential ? "sequential" : "random";
  if (a.cache != b.cache) f["cache"] = b.cache.empty() ? "none" : b.cache;
  if (a.bucket_bytes != b.bucket_bytes) f["bucket_bytes"] = Round9(b.bucket_bytes);
  if (a.overlap != b.overlap) f["overlap"] = Round9(b.overlap);
  if (a.gpu_decode != b.gpu_decode) f["decode_device"] = b.gpu_decode ? "gpu" : "cpu";
  return f;
}

nlohmann::json TuneJson(const std::string& scenario_path, const TuneResult& r, const TuneOptions& o) {
  nlohmann::json runners = nlohmann::json::array();
  for (const auto& e : r.runners_up) runners.push_back(EvaluatedJson(e));
  nlohmann::json rejections = nlohmann::json::array();
  for (const auto& x : r.rejections) rejections.push_back({{"axis", x.axis}, {"value", x.value}, {"reason", x.reason}});
  nlohmann::json reverted = nlohmann::json::array();
  for (const auto& x : r.reverted) {
    reverted.push_back({{"setting", x.setting}, {"value", x.value}, {"kept", x.kept}, {"gain", Round9(x.gain)}});
  }
  return {{"schema", kTuneSchema},
          {"scenario", scenario_path},
          {"objective", o.objective == TuneObjective::kThroughput ? "throughput" : "cost"},
          {"label", "predicted by the calibrated model (simulated), not measured"},
          {"search",
           {{"method", "coordinate descent over the knobs, axes ordered by the causal profile's gains, memoised"},
            {"axis_order", r.axis_order},
            {"move_threshold", kMoveThreshold},
            {"min_setting_gain", kMinSettingGain},
            {"budget_configurations", o.budget},
            {"configurations", r.configurations},
            {"revert_configurations", r.revert_configurations},
            {"simulations", r.simulations},
            {"passes", r.passes},
            {"budget_exhausted", r.budget_exhausted},
            {"halving", HalvingJson(r.halving, o.contender_share)}}},
          {"constraints", r.constraints},
          {"current", EvaluatedJson(r.current)},
          {"best", EvaluatedJson(r.best)},
          {"changed", ChangedFactors(r)},
          {"reverted", reverted},
          {"gain", Round9(r.gain)},
          {"gain_low", Round9(r.gain_low)},
          {"gain_high", Round9(r.gain_high)},
          {"error_band", {{"low", Round9(o.band.error_low)}, {"high", Round9(o.band.error_high)}, {"source", o.band.source}}},
          {"runners_up", runners},
          {"rejected", rejections},
          {"criteria", Criteria(r)},
          {"tools_considered", ToolsJson(r)}};
}

std::string TuneText(const TuneResult& r) {
  std::string out = "SEARCH (predicted by the calibrated model, not measured)\n";
  out += fmt::format("  {} configurations, {} simulations, {} pass(es){}\n", r.configurations, r.simulations, r.passes,
                     r.budget_exhausted ? "; BUDGET EXHAUSTED: the search stopped early" : "");
  const auto& h = r.halving;
  if (h.skipped_because.empty()) {
    out += fmt::format("  successive halving: {} of {} neighbouring configurations ranked on", h.candidates, h.neighbourhood);
    for (size_t i = 0; i < h.rungs.size(); ++i) {
      out += fmt::format("{} {} steps ({} -> {})", i ? "," : "", h.rungs[i].steps, h.rungs[i].candidates, h.rungs[i].kept);
    }
    out += fmt::format("; {} short simulations{}\n", h.short_simulations,
                       h.over_budget > 0 ? fmt::format("; {} survivor(s) beyond the budget not simulated", h.over_budget)
                                         : std::string());
  } else {
    out += "  successive halving: " + h.skipped_because + "\n";
  }
  out += "  axis order: ";
  for (size_t i = 0; i < r.axis_order.size(); ++i) out += (i ? ", " : "") + r.axis_order[i];
  out += "\n";
  for (const auto& c : r.constraints) out += "  constraint: " + c + "\n";
  out += fmt::format("\nCURRENT  {}  {:.2f} samples/s, GPU idle {:.1f}%{}\n", DescribeKnobs(r.current.knobs),
                     r.current.metrics.train_samples_per_s, 100 * r.current.metrics.gpu_idle_fraction,
                     r.current.feasible ? "" : " (breaks a constraint: " + r.current.infeasible_because + ")");
  out += fmt::format("BEST     {}  {:.2f} samples/s, GPU idle {:.1f}%, peak memory {:.2f} GiB\n",
                     DescribeKnobs(r.best.knobs), r.best.metrics.train_samples_per_s,
                     100 * r.best.metrics.gpu_idle_fraction, r.best.metrics.peak_host_memory_bytes / (1 << 30));
  if (r.best.knobs == r.current.knobs) {
    out += fmt::format("  keep the current configuration: no searched change buys {:.0f}% or more\n",
                       100 * kMinRecommendedGain);
  } else {
    out += fmt::format("  predicted gain {} [{} .. {}]\n", SignedPct(r.gain), SignedPct(r.gain_low), SignedPct(r.gain_high));
  }
  for (const auto& x : r.reverted) {
    out += fmt::format("  kept {} = {}: changing it to {} buys only {} by itself (< the {:.0f}% a changed "
                       "setting must buy)\n",
                       x.setting, x.kept, x.value, SignedPct(x.gain), 100 * kMinSettingGain);
  }
  for (const auto& e : r.runners_up) {
    out += fmt::format("  runner-up {}  {:.2f} samples/s\n", DescribeKnobs(e.knobs), e.metrics.train_samples_per_s);
  }
  out += "\nREJECTED (last pass, per axis)\n";
  for (const auto& x : r.rejections) out += fmt::format("  {} = {}: {}\n", x.axis, x.value, x.reason);
  out += fmt::format("\nTOOLS (compatibility table checked {})\n", r.tools_checked);
  for (const auto& t : r.tools) {
    std::string why;
    for (const auto& x : t.incompatible) why += (why.empty() ? "" : "; ") + x;
    out += fmt::format("  {}: {}{}\n", t.name, t.compatible ? "compatible" : "NOT compatible, never suggested: " + why,
                       t.compatible && t.simulated_as.empty() ? " (not simulated: no model of it, not suggested)" : "");
    for (const auto& u : t.unverified) out += "    unverified: " + u + "\n";
  }
  out += "\nCRITERIA\n  " + Criteria(r) + "\n";
  return out;
}

nlohmann::json ExperimentSpec(const std::string& scenario_path, const TuneResult& r, const ExperimentRequest& q) {
  const Knobs& a = r.current.knobs;
  nlohmann::json changed = ChangedFactors(r);
  // Only factors validate can set in the user's command are tested; the rest (hardware, access, cache,
  // collective, decode device) are applied by hand and named in the description.
  std::string by_hand;
  const nlohmann::json all_changes = ChangedFactors(r);
  for (const auto& [factor, value] : all_changes.items()) {
    if (ValidateFactor(factor)) continue;
    by_hand += (by_hand.empty() ? "" : ", ") + factor + " = " + (value.is_string() ? value.get<std::string>() : value.dump());
    changed.erase(factor);
  }
  nlohmann::json base = {{"num_workers", a.num_workers},         {"batch_size", q.batch_size},
                         {"prefetch_factor", a.prefetch_factor}, {"pin_memory", a.pin_memory},
                         {"persistent_workers", a.persistent_workers}, {"format", a.format}};
  nlohmann::json cases = nlohmann::json::array({{{"name", "current"}}});
  for (const auto& [factor, value] : changed.items()) {
    // Persistent workers need workers: without them in the base that factor cannot be tested alone.
    if (factor == "persistent_workers" && a.num_workers == 0) continue;
    cases.push_back({{"name", factor + "_" + (value.is_string() ? value.get<std::string>() : value.dump())},
                     {"set", {{factor, value}}}});
  }
  const bool pipeline_runs = std::any_of(q.command.begin(), q.command.end(),
                                         [](const std::string& s) { return s.find("{pipeline_only}") != std::string::npos; });
  const int64_t steps = std::max<int64_t>(q.steps, 20);
  nlohmann::json spec = {
      {"schema", "simreplay.experiment/1"},
      {"name", "tune: current vs the recommended setting(s)"},
      {"description", fmt::format("generated by simreplay tune from {}: single-factor A/B tests of each change the "
                                  "search recommends, on the user's own command. {}{}",
                                  scenario_path, Criteria(r),
                                  by_hand.empty() ? "" : ". Not testable by validate's runner (apply by hand and compare "
                                                         "with the same command): " + by_hand)},
      {"mode", cases.size() == 2 ? "ab" : "suite"},
      {"run",
       {{"steps", steps}, {"warmup_steps", std::min<int64_t>(10, steps / 4)}, {"seed", q.seed}, {"timeout_s", 900},
        {"command", q.command}}},
      {"repetitions", 5},
      {"warmup_runs", 1},
      {"pipeline_only_runs", pipeline_runs},
      {"base", base},
      {"cases", cases},
      {"criteria",
       {{"memory_headroom_bytes", q.memory_limit_bytes > 0 ? Round9(q.memory_limit_bytes) : 2e9},
        {"rollback_gpu_idle_margin_pp", 5}}}};
  if (cases.size() >= 2) spec["calibration"] = {{"from", "current"}, {"alternate", cases[1]["name"]}};
  return spec;
}

Result<std::vector<std::string>> SplitCommand(const std::string& text) {
  std::vector<std::string> out;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (char c : text) {
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t') {
      if (in_word) out.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote) return Status::InvalidArgument("--command: unclosed quote in \"" + text + "\"");
  if (in_word) out.push_back(word);
  if (out.empty()) return Status::InvalidArgument("--command: empty");
  return out;
}

}  // namespace simreplay::advise
