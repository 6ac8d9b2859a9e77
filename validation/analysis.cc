#include "validation/analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "sim/metrics.h"
#include "validation/statistics.h"

namespace simreplay::validation {

double PredictionError(const std::string& metric, double predicted, double measured) {
  if (MetricIsFraction(metric)) return 100.0 * (predicted - measured);
  if (measured == 0) return predicted == 0 ? 0 : (predicted > 0 ? 1e9 : -1e9);
  return 100.0 * (predicted - measured) / measured;
}

namespace {

double R(double v) { return sim::Round9(v); }

// Values of `metric` over the measured runs of `case_name` and `kind`, in repetition order.
std::vector<std::pair<int, double>> RepValues(const AnalysisInput& in, const std::string& case_name,
                                              const std::string& kind, const std::string& metric) {
  std::vector<std::pair<int, double>> out;
  for (const auto& run : in.runs) {
    if (run.plan.discarded || run.plan.case_name != case_name || run.plan.kind != kind) continue;
    auto it = in.metrics.find(run.plan.id);
    if (it == in.metrics.end()) continue;
    auto v = it->second.values.find(metric);
    if (v != it->second.values.end()) out.push_back({run.plan.rep, v->second});
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<double> Values(const std::vector<std::pair<int, double>>& reps) {
  std::vector<double> v;
  for (const auto& [rep, x] : reps) v.push_back(x);
  return v;
}

const char* KindOf(const std::string& metric) { return metric == kPipelineThroughput ? "pipeline" : "train"; }

// The case the others are compared with: the spec's base configuration when it is a case, else the first.
const ExperimentCase& ReferenceCase(const ExperimentSpec& spec) {
  if (spec.mode == "ab") return spec.cases[0];
  for (const auto& c : spec.cases) {
    if (c.factors.empty()) return c;
  }
  return spec.cases[0];
}

const TraceFacts* FirstFacts(const AnalysisInput& in, const std::string& case_name) {
  const TraceFacts* best = nullptr;
  int best_rep = 1 << 30;
  for (const auto& run : in.runs) {
    if (run.plan.discarded || run.plan.case_name != case_name || run.plan.kind != "train") continue;
    auto it = in.facts.find(run.plan.id);
    if (it != in.facts.end() && run.plan.rep < best_rep) {
      best = &it->second;
      best_rep = run.plan.rep;
    }
  }
  return best;
}

nlohmann::json MeasuredJson(const std::vector<double>& values, const BootstrapOptions& options) {
  Interval ci = BootstrapInterval(values, Statistic::kMedian, options);
  double median = Median(values);
  double mean = Mean(values);
  nlohmann::json rounded = nlohmann::json::array();
  for (double v : values) rounded.push_back(R(v));
  return {{"median", R(median)},
          {"ci", {R(ci.low), R(ci.high)}},
          {"n", values.size()},
          {"cv", R(mean != 0 ? StdDev(values) / std::fabs(mean) : 0)},
          {"values", rounded}};
}

}  // namespace

nlohmann::json Analyze(const AnalysisInput& in) {
  const ExperimentSpec& spec = *in.spec;
  const BootstrapOptions& boot = spec.bootstrap;
  nlohmann::json doc = nlohmann::json::object();
  doc["schema"] = kValidationSchema;
  doc["name"] = spec.name;
  doc["description"] = spec.description;
  doc["mode"] = spec.mode;
  doc["accelerator"] = "emulated";
  doc["accelerator_note"] = fmt::format(
      "no GPU: every training step in the real runs was an emulated sleep of {} s per micro-batch (bench --emulate), "
      "and every prediction simulates that emulated step",
      spec.run.step_time_s);
  doc["spec"] = spec.raw;

  // --- Experiment matrix.
  nlohmann::json matrix = nlohmann::json::array();
  for (const auto& c : spec.cases) {
    std::string from = c.name == spec.calibrate_from ? spec.calibrate_alternate : spec.calibrate_from;
    matrix.push_back({{"case", c.name},
                      {"config", BenchConfigToJson(c.config)},
                      {"factors_vs_base", c.factors},
                      {"predicted_from", from},
                      {"train_reps", RepValues(in, c.name, "train", kTrainThroughput).size()},
                      {"pipeline_reps", RepValues(in, c.name, "pipeline", kPipelineThroughput).size()}});
  }
  doc["matrix"] = matrix;
  doc["base"] = BenchConfigToJson(spec.base);

  // --- Method: how warm-up, page cache, inputs and noise are handled.
  double load_min = 1e300, load_max = -1;
  int failed_runs = 0, measured_runs = 0;
  for (const auto& run : in.runs) {
    for (double l : {run.loadavg_before, run.loadavg_after}) {
      if (l >= 0) {
        load_min = std::min(load_min, l);
        load_max = std::max(load_max, l);
      }
    }
    if (!run.plan.discarded) ++measured_runs;
    if (run.exit_code != 0) ++failed_runs;
  }
  doc["method"] = {
      {"steps", spec.run.steps},
      {"warmup_steps_excluded", spec.run.warmup_steps},
      {"warmup_runs_discarded_per_case", spec.warmup_runs},
      {"repetitions", spec.repetitions},
      {"order",
       "interleaved: discarded warm-up runs of every case first, then repetition by repetition every case's "
       "train run in case order (A B A B ...), then every case's pipeline-only run"},
      {"fixed_inputs", fmt::format("same dataset, seed {} (same shuffle and the same augmentation draws per worker), "
                                   "same steps in every run",
                                   spec.run.seed)},
      {"page_cache",
       "the dataset is read once by the discarded warm-up runs, so every measured run reads from a warm "
       "page cache (the data volume is far below RAM); cold-storage behaviour is not measured here"},
      {"statistic", "median of the repetitions; percentile bootstrap interval of the median"},
      {"bootstrap", {{"resamples", boot.resamples}, {"seed", boot.seed}, {"confidence", boot.confidence}}},
      {"memory_definition",
       "peak over 2 Hz samples of main-process RSS + every worker's PSS (from the trace); the "
       "host-wide MemTotal-MemAvailable peak of the bench summary includes other tenants and is "
       "reported but not compared"},
      {"calibration",
       fmt::format("every case is predicted from a model calibrated on the median-throughput train run of "
                   "case '{}', except '{}' itself, predicted from case '{}': never from the case "
                   "being predicted",
                   spec.calibrate_from, spec.calibrate_from, spec.calibrate_alternate)}};
  doc["noise"] = {{"loadavg_1min_min", load_max < 0 ? -1 : R(load_min)},
                  {"loadavg_1min_max", load_max < 0 ? -1 : R(load_max)},
                  {"runs_measured", measured_runs},
                  {"runs_failed", failed_runs},
                  {"note",
                   "shared 2-core VM: other tenants' load moves wall-clock throughput from run to run; each "
                   "case's coefficient of variation (cv) is given with its results"}};

  // --- Results: predicted vs measured per case and metric.
  nlohmann::json results = nlohmann::json::array();
  std::vector<double> abs_train_errors;
  double max_idle_error = -1;
  std::string worst_idle_case;
  for (const auto& c : spec.cases) {
    nlohmann::json r = {{"case", c.name}};
    auto pred = in.predictions.find(c.name);
    if (pred == in.predictions.end()) {
      auto err = in.prediction_errors.find(c.name);
      r["prediction_error"] = err == in.prediction_errors.end() ? "not predicted" : err->second;
    } else {
      r["predicted_from"] = pred->second.calibrated_from;
      r["prediction_warnings"] = pred->second.warnings;
    }
    nlohmann::json metrics = nlohmann::json::object();
    for (const auto& metric : MetricNames()) {
      auto reps = RepValues(in, c.name, KindOf(metric), metric);
      nlohmann::json m = nlohmann::json::object();
      m["unit_of_error"] = MetricIsFraction(metric) ? "pp" : "%";
      if (!reps.empty()) m["measured"] = MeasuredJson(Values(reps), boot);
      if (pred != in.predictions.end()) {
        auto p = pred->second.values.find(metric);
        if (p != pred->second.values.end()) m["predicted"] = R(p->second);
      }
      if (m.contains("measured") && m.contains("predicted")) {
        double predicted = m["predicted"].get<double>();
        double measured = m["measured"]["median"].get<double>();
        double error = PredictionError(metric, predicted, measured);
        m["error"] = R(error);
        m["inside_ci"] =
            predicted >= m["measured"]["ci"][0].get<double>() && predicted <= m["measured"]["ci"][1].get<double>();
        if (metric == kTrainThroughput) abs_train_errors.push_back(std::fabs(error));
        if (metric == kGpuIdle && std::fabs(error) > max_idle_error) {
          max_idle_error = std::fabs(error);
          worst_idle_case = c.name;
        }
      }
      metrics[metric] = m;
    }
    r["metrics"] = metrics;
    // Context that is measured but not compared.
    std::vector<double> host_peaks, cpu_per_sample;
    for (const auto& run : in.runs) {
      if (run.plan.discarded || run.plan.case_name != c.name || run.plan.kind != "train") continue;
      auto it = in.metrics.find(run.plan.id);
      if (it == in.metrics.end()) continue;
      if (it->second.host_mem_used_peak_bytes > 0) host_peaks.push_back(it->second.host_mem_used_peak_bytes);
      if (it->second.cpu_s_per_sample > 0) cpu_per_sample.push_back(it->second.cpu_s_per_sample);
    }
    std::vector<double> sample_cpu, sample_wall, host_busy;
    for (const auto& run : in.runs) {
      if (run.plan.discarded || run.plan.case_name != c.name || run.plan.kind != "train") continue;
      auto it = in.facts.find(run.plan.id);
      if (it == in.facts.end()) continue;
      if (it->second.sample_cpu_s >= 0) sample_cpu.push_back(it->second.sample_cpu_s);
      if (it->second.sample_wall_s >= 0) sample_wall.push_back(it->second.sample_wall_s);
      if (it->second.host_cpu_busy_fraction >= 0) host_busy.push_back(it->second.host_cpu_busy_fraction);
    }
    if (!sample_cpu.empty()) r["sample_cpu_s_median"] = R(Median(sample_cpu));
    if (!sample_wall.empty()) r["sample_wall_s_median"] = R(Median(sample_wall));
    if (!host_busy.empty()) r["host_cpu_busy_fraction_median"] = R(Median(host_busy));
    if (!host_peaks.empty()) r["host_mem_used_peak_bytes_median"] = R(Median(host_peaks));
    if (!cpu_per_sample.empty()) r["loader_cpu_s_per_sample_median"] = R(Median(cpu_per_sample));
    results.push_back(r);
  }
  doc["results"] = results;

  // --- Rankings: per varied factor (the reference case plus the cases varying it), and over all cases.
  const ExperimentCase& ref = ReferenceCase(spec);
  std::vector<std::pair<std::string, std::vector<const ExperimentCase*>>> groups;
  for (const auto& factor : FactorNames()) {
    std::vector<const ExperimentCase*> members;
    for (const auto& c : spec.cases) {
      if (&c == &ref || (c.factors.size() == 1 && c.factors[0] == factor)) members.push_back(&c);
    }
    bool varies = std::any_of(members.begin(), members.end(), [&](const ExperimentCase* c) { return c != &ref; });
    if (spec.mode == "ab") varies = spec.cases[1].factors.size() == 1 && spec.cases[1].factors[0] == factor;
    if (varies && members.size() >= 2) groups.push_back({factor, members});
  }
  {
    std::vector<const ExperimentCase*> all;
    for (const auto& c : spec.cases) all.push_back(&c);
    if (all.size() >= 2) groups.push_back({"all cases", all});
  }
  nlohmann::json rankings = nlohmann::json::array();
  bool rankings_agree = true;
  for (const auto& [factor, members] : groups) {
    for (const char* metric : {kTrainThroughput, kPipelineThroughput}) {
      std::vector<double> predicted, measured;
      std::vector<std::string> names;
      for (const auto* c : members) {
        auto p = in.predictions.find(c->name);
        auto reps = RepValues(in, c->name, KindOf(metric), metric);
        if (p == in.predictions.end() || reps.empty() || !p->second.values.count(metric)) continue;
        names.push_back(c->name);
        predicted.push_back(p->second.values.at(metric));
        measured.push_back(Median(Values(reps)));
      }
      if (names.size() < 2) continue;
      bool same_best = ArgMax(predicted) == ArgMax(measured);
      if (metric == std::string(kTrainThroughput)) rankings_agree = rankings_agree && same_best;
      nlohmann::json pv = nlohmann::json::array(), mv = nlohmann::json::array();
      for (size_t i = 0; i < names.size(); ++i) {
        pv.push_back(R(predicted[i]));
        mv.push_back(R(measured[i]));
      }
      rankings.push_back({{"group", factor},
                          {"metric", metric},
                          {"cases", names},
                          {"predicted", pv},
                          {"measured_median", mv},
                          {"kendall_tau_b", R(KendallTauB(predicted, measured))},
                          {"predicted_best", names[ArgMax(predicted)]},
                          {"measured_best", names[ArgMax(measured)]},
                          {"same_best", same_best}});
    }
  }
  doc["rankings"] = rankings;

  // --- Correctness: same samples where the factor must not change them; repeatability of each case.
  nlohmann::json correctness = nlohmann::json::array();
  bool correctness_pass = true;
  for (const auto& c : spec.cases) {
    // Repeatability: every repetition of a case delivers the same content (fixed inputs).
    const TraceFacts* first = FirstFacts(in, c.name);
    if (first == nullptr) continue;
    SampleCheck repeat;
    repeat.kind = "repeat";
    repeat.a = c.name;
    repeat.b = c.name;
    int reps_compared = 0;
    std::string first_detail;
    for (const auto& run : in.runs) {
      if (run.plan.discarded || run.plan.case_name != c.name || run.plan.kind != "train") continue;
      auto it = in.facts.find(run.plan.id);
      if (it == in.facts.end() || &it->second == first) continue;
      SampleCheck one = CompareContent(*first, it->second);
      repeat.compared += one.compared;
      repeat.mismatched += one.mismatched;
      if (!one.pass && first_detail.empty()) first_detail = run.plan.id + ": " + one.detail;
      ++reps_compared;
    }
    if (reps_compared > 0) {
      repeat.pass = repeat.compared > 0 && repeat.mismatched == 0;
      repeat.detail = repeat.pass ? fmt::format("{} repetitions deliver identical samples ({} compared)",
                                                reps_compared + 1, repeat.compared)
                                  : first_detail;
      correctness_pass = correctness_pass && repeat.pass;
      correctness.push_back(repeat.ToJson());
    }
    if (&c == &ref) continue;
    const TraceFacts* ref_facts = FirstFacts(in, ref.name);
    if (ref_facts == nullptr) continue;
    auto diff = DifferingFactors(ref.config, c.config);
    if (diff.size() != 1) continue;
    SampleCheck cross;
    std::string rule;
    if (FactorPreservesContent(diff[0])) {
      cross = CompareContent(*ref_facts, *first);
      rule = fmt::format("'{}' must not change what a sample contains: content hashes compared", diff[0]);
    } else {
      // Moving samples between worker processes changes their augmentation RNG stream (torch seeds each
      // worker with base_seed + worker id), so content legitimately differs; the order must not.
      int epochs = diff[0] == "persistent_workers" ? 1 : -1;
      cross = CompareOrder(*ref_facts, *first, epochs);
      rule = fmt::format(
          "'{}' changes which worker process (and augmentation RNG stream) handles a sample, so content "
          "may differ; the delivered sample order must not{}",
          diff[0], epochs == 1 ? " (first epoch: a persistent iterator draws its seed once)" : "");
    }
    cross.a = ref.name;
    cross.b = c.name;
    nlohmann::json j = cross.ToJson();
    j["factor"] = diff[0];
    j["rule"] = rule;
    correctness_pass = correctness_pass && cross.pass;
    correctness.push_back(j);
  }
  doc["correctness"] = {{"pass", correctness_pass}, {"checks", correctness}};

  // --- Observed bottlenecks (measured) and hypotheses (the simulator's verdicts), kept apart.
  nlohmann::json observed = nlohmann::json::array(), hypotheses = nlohmann::json::array();
  int cores = 0;
  for (const auto& [id, facts] : in.facts) {
    if (facts.manifest.contains("hardware") && facts.manifest["hardware"].is_object()) {
      cores = facts.manifest["hardware"].value("cores", 0);
      break;
    }
  }
  for (const auto& r : results) {
    const std::string name = r["case"].get<std::string>();
    const auto* c = FindCase(spec, name);
    const auto& m = r["metrics"];
    if (m[kGpuIdle].contains("measured") && m[kTrainThroughput].contains("measured")) {
      double idle = m[kGpuIdle]["measured"]["median"].get<double>();
      double tp = m[kTrainThroughput]["measured"]["median"].get<double>();
      // Loader cores busy: per-sample CPU from the trace (every loader process) x throughput.
      double cpu = r.contains("sample_cpu_s_median") ? r["sample_cpu_s_median"].get<double>() : -1;
      double cores_busy = cpu > 0 ? cpu * tp : -1;
      double host_busy =
          r.contains("host_cpu_busy_fraction_median") ? r["host_cpu_busy_fraction_median"].get<double>() : -1;
      std::string verdict;
      if (idle < 0.10) {
        verdict = "accelerator-bound: the (emulated) step is busy >= 90% of the time";
      } else if (cores > 0 && cores_busy >= 0.85 * cores) {
        verdict = fmt::format("CPU-bound loading: loader processes used {:.2f} of {} cores while the GPU idled {:.0f}%",
                              cores_busy, cores, 100 * idle);
      } else if (cores > 0 && host_busy >= 0.85) {
        verdict = fmt::format(
            "CPU-bound host: all {} cores {:.0f}% busy, of which sample loading {:.2f} cores; the rest is "
            "the main process, the step loop and other tenants. GPU idle {:.0f}%",
            cores, 100 * host_busy, cores_busy, 100 * idle);
      } else if (c != nullptr && c->config.num_workers == 0) {
        verdict = fmt::format("inline loading in the main process (num_workers=0): GPU idle {:.0f}%", 100 * idle);
      } else {
        verdict = fmt::format(
            "GPU idle {:.0f}% with loader CPU {:.2f} of {} cores: waiting on start-up, latency or too "
            "few workers rather than on saturated cores",
            100 * idle, cores_busy, cores);
      }
      observed.push_back({{"case", name},
                          {"gpu_idle_fraction", R(idle)},
                          {"loader_cores_busy", R(cores_busy)},
                          {"host_cpu_busy_fraction", R(host_busy)},
                          {"cores", cores},
                          {"verdict", verdict}});
    }
    auto p = in.predictions.find(name);
    if (p != in.predictions.end() && !p->second.bottleneck.is_null() && !p->second.bottleneck.empty()) {
      hypotheses.push_back({{"case", name},
                            {"source", "simulator (model calibrated on case '" + p->second.calibrated_from + "')"},
                            {"stage", p->second.bottleneck.value("stage", "")},
                            {"evidence", p->second.bottleneck.value("evidence", "")}});
    }
  }
  doc["observed_bottlenecks"] = observed;
  doc["hypotheses"] = hypotheses;

  // --- A/B comparisons against the reference case, with deployment and rollback checks.
  nlohmann::json comparisons = nlohmann::json::array();
  for (const auto& c : spec.cases) {
    if (&c == &ref) continue;
    auto a = RepValues(in, ref.name, "train", kTrainThroughput);
    auto b = RepValues(in, c.name, "train", kTrainThroughput);
    std::map<int, double> a_by_rep(a.begin(), a.end());
    std::vector<double> pa, pb;
    for (const auto& [rep, v] : b) {
      if (a_by_rep.count(rep) && a_by_rep[rep] > 0) {
        pa.push_back(a_by_rep[rep]);
        pb.push_back(v);
      }
    }
    if (pa.empty()) continue;
    double gain = 0;
    Interval ci = PairedRatioInterval(pa, pb, boot, &gain);
    nlohmann::json cmp = {{"a", ref.name},
                          {"b", c.name},
                          {"factor", DifferingFactors(ref.config, c.config)},
                          {"pairs", pa.size()},
                          {"measured_train_gain_pct", R(100 * gain)},
                          {"measured_train_gain_ci_pct", {R(100 * ci.low), R(100 * ci.high)}}};
    auto pra = in.predictions.find(ref.name);
    auto prb = in.predictions.find(c.name);
    bool have_pred = pra != in.predictions.end() && prb != in.predictions.end();
    if (have_pred) {
      double ta = pra->second.values.at(kTrainThroughput), tb = prb->second.values.at(kTrainThroughput);
      cmp["predicted_train_gain_pct"] = R(ta > 0 ? 100 * (tb / ta - 1) : 0);
    }
    // Deployment: adopt B when the measured gain's interval excludes zero and B's predicted peak host
    // memory stays under the stated headroom.
    nlohmann::json checks = nlohmann::json::array();
    bool gain_ok = ci.low > 0;
    checks.push_back({{"check", "measured train-throughput gain of B over A: bootstrap interval excludes zero (> 0)"},
                      {"value", {R(100 * ci.low), R(100 * ci.high)}},
                      {"pass", gain_ok}});
    bool memory_ok = false;
    if (have_pred && prb->second.values.count(kPeakMemory)) {
      double mem = prb->second.values.at(kPeakMemory);
      memory_ok = mem <= spec.criteria.memory_headroom_bytes;
      checks.push_back({{"check", fmt::format("predicted peak host memory of B <= headroom {:.0f} MiB",
                                              spec.criteria.memory_headroom_bytes / (1 << 20))},
                        {"value", R(mem)},
                        {"pass", memory_ok}});
    } else {
      checks.push_back({{"check", "predicted peak host memory of B <= headroom"}, {"value", nullptr}, {"pass", false}});
    }
    // Rollback triggers, evaluated on this experiment's measurements (to be re-evaluated in production).
    auto idle_a = RepValues(in, ref.name, "train", kGpuIdle);
    auto idle_b = RepValues(in, c.name, "train", kGpuIdle);
    nlohmann::json rollback = nlohmann::json::array();
    bool rollback_now = false;
    if (!idle_a.empty() && !idle_b.empty()) {
      double rise_pp = 100 * (Median(Values(idle_b)) - Median(Values(idle_a)));
      bool trig = rise_pp > spec.criteria.rollback_gpu_idle_margin_pp;
      rollback_now = rollback_now || trig;
      rollback.push_back({{"check", fmt::format("roll back when B's GPU idle exceeds A's by more than {} pp",
                                                spec.criteria.rollback_gpu_idle_margin_pp)},
                          {"value_pp", R(rise_pp)},
                          {"triggered", trig}});
    }
    Interval a_ci = BootstrapInterval(Values(a), Statistic::kMedian, boot);
    double b_median = Median(Values(b));
    bool below = b_median < a_ci.low;
    rollback_now = rollback_now || below;
    rollback.push_back({{"check", "roll back when B's train throughput falls below the lower end of A's interval"},
                        {"value", R(b_median)},
                        {"baseline_ci", {R(a_ci.low), R(a_ci.high)}},
                        {"triggered", below}});
    cmp["adopt_checks"] = checks;
    cmp["rollback_checks"] = rollback;
    cmp["decision"] = (gain_ok && memory_ok && !rollback_now) ? "adopt B"
                      : rollback_now                          ? "keep A (B would trigger a rollback)"
                                                              : "keep A (gain not established)";
    comparisons.push_back(cmp);
  }
  doc["comparisons"] = comparisons;

  // --- CI thresholds.
  nlohmann::json thresholds = {{"enabled", spec.thresholds.enabled}};
  bool thresholds_pass = true;
  if (!abs_train_errors.empty()) {
    double median_error = Median(abs_train_errors);
    bool ok = median_error <= spec.thresholds.median_train_throughput_error_pct;
    thresholds["median_abs_train_throughput_error_pct"] = {{"value", R(median_error)},
                                                           {"limit", spec.thresholds.median_train_throughput_error_pct},
                                                           {"pass", ok},
                                                           {"cases", abs_train_errors.size()}};
    thresholds_pass = thresholds_pass && ok;
  } else {
    thresholds_pass = false;
    thresholds["median_abs_train_throughput_error_pct"] = {{"value", nullptr}, {"pass", false}, {"cases", 0}};
  }
  if (max_idle_error >= 0) {
    bool ok = max_idle_error <= spec.thresholds.max_gpu_idle_error_pp;
    thresholds["max_abs_gpu_idle_error_pp"] = {{"value", R(max_idle_error)},
                                               {"limit", spec.thresholds.max_gpu_idle_error_pp},
                                               {"pass", ok},
                                               {"case", worst_idle_case}};
    thresholds_pass = thresholds_pass && ok;
  } else {
    thresholds_pass = false;
    thresholds["max_abs_gpu_idle_error_pp"] = {{"value", nullptr}, {"pass", false}};
  }
  std::vector<std::string> failing;
  for (const auto& r : results) {
    const auto& m = r["metrics"];
    if (m[kTrainThroughput].contains("error") &&
        std::fabs(m[kTrainThroughput]["error"].get<double>()) > spec.thresholds.median_train_throughput_error_pct) {
      failing.push_back(fmt::format("{}: train throughput {:+.1f}%", r["case"].get<std::string>(),
                                    m[kTrainThroughput]["error"].get<double>()));
    }
    if (m[kGpuIdle].contains("error") &&
        std::fabs(m[kGpuIdle]["error"].get<double>()) > spec.thresholds.max_gpu_idle_error_pp) {
      failing.push_back(
          fmt::format("{}: GPU idle {:+.1f} pp", r["case"].get<std::string>(), m[kGpuIdle]["error"].get<double>()));
    }
  }
  thresholds["cases_over_limit"] = failing;
  thresholds["long_term_target"] = "median |train throughput error| <= 3%";
  thresholds["pass"] = thresholds_pass;
  doc["thresholds"] = thresholds;
  doc["rankings_agree"] = rankings_agree;

  doc["calibration"] = in.calibration;
  doc["environment"] = in.environment;
  // Manifest: from the first measured train trace (versions, commit, hardware, storage, data volume),
  // plus one command per case and kind.
  nlohmann::json manifest = nlohmann::json::object();
  for (const auto& run : in.runs) {
    if (run.plan.discarded || run.plan.kind != "train") continue;
    auto it = in.facts.find(run.plan.id);
    if (it == in.facts.end()) continue;
    const auto& mf = it->second.manifest;
    for (const char* key : {"versions", "commit", "dirty", "hardware", "storage", "data", "accelerator"}) {
      if (mf.contains(key)) manifest[key] = mf[key];
    }
    break;
  }
  nlohmann::json commands = nlohmann::json::object();
  std::string first_started, last_started;
  for (const auto& run : in.runs) {
    std::string key = run.plan.case_name + "." + run.plan.kind;
    if (!run.plan.discarded && !commands.contains(key)) commands[key] = run.command;
    if (!run.started_utc.empty()) {
      if (first_started.empty() || run.started_utc < first_started) first_started = run.started_utc;
      if (run.started_utc > last_started) last_started = run.started_utc;
    }
  }
  manifest["commands"] = commands;
  manifest["runs_started_utc"] = {first_started, last_started};
  doc["manifest"] = manifest;
  doc["warnings"] = in.warnings;
  doc["pass"] = (!spec.thresholds.enabled || thresholds_pass) && correctness_pass;
  return doc;
}

bool ChecksFailed(const nlohmann::json& validation) { return !validation.value("pass", false); }

}  // namespace simreplay::validation
