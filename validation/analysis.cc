#include "validation/analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "sim/metrics.h"
#include "validation/gate.h"
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

// The manifest of the first measured train trace that has one (the machine the runs measured).
const nlohmann::json* FirstManifest(const AnalysisInput& in) {
  for (const auto& run : in.runs) {
    if (run.plan.discarded || run.plan.kind != "train") continue;
    auto it = in.facts.find(run.plan.id);
    if (it != in.facts.end() && it->second.manifest.is_object() && !it->second.manifest.empty()) {
      return &it->second.manifest;
    }
  }
  return nullptr;
}

double ManifestNumber(const nlohmann::json* manifest, const char* section, const char* key) {
  if (manifest == nullptr || !manifest->contains(section) || !(*manifest)[section].is_object()) return -1;
  const auto& s = (*manifest)[section];
  return s.contains(key) && s[key].is_number() ? s[key].get<double>() : -1;
}

// Whether measured runs read from a warm page cache, from the traces' own data volume and RAM: stated
// only as far as the manifest supports it.
std::string PageCacheStatement(const AnalysisInput& in) {
  const nlohmann::json* manifest = FirstManifest(in);
  const double data_bytes = ManifestNumber(manifest, "data", "bytes");
  const double ram_bytes = ManifestNumber(manifest, "hardware", "ram_bytes");
  const int warmups = in.spec->warmup_runs;
  if (data_bytes <= 0 || ram_bytes <= 0) {
    return "not stated: the traces' manifest gives no data volume or RAM size; cold-storage behaviour is not "
           "measured separately";
  }
  const std::string volume = fmt::format("{:.0f} MiB of data, {:.1f} GiB of RAM (trace manifest)",
                                         data_bytes / (1 << 20), ram_bytes / (1 << 30));
  if (warmups > 0 && data_bytes <= 0.5 * ram_bytes) {
    return "the dataset is read by the discarded warm-up runs and fits in the page cache (" + volume +
           "), so the measured runs read from a warm page cache; cold-storage behaviour is not measured here";
  }
  if (warmups == 0) return "no warm-up run: the first measured runs may read from storage (" + volume + ")";
  return "the dataset may not stay in the page cache (" + volume + "): measured runs may read from storage";
}

// The host, as the traces recorded it.
std::string HostStatement(const AnalysisInput& in) {
  const double cores = ManifestNumber(FirstManifest(in), "hardware", "cores");
  return cores > 0 ? fmt::format("{:.0f}-core host (trace manifest)", cores) : "host of unknown size";
}

// --- The sections of validation.json, in document order (docs/validation-format.md). ---

// What the case's prediction took from the CPU probe: "none", "other dataset" (out of sample) or the
// cases' own dataset, in sample when the probe measured the case's worker count.
std::string CpuProbeUse(const CpuProbeProvenance& probe, int num_workers) {
  if (!probe.used) return "none";
  if (probe.other_dataset) return "other dataset (out of sample)";
  return probe.InSample(num_workers) ? "own dataset at this worker count (IN SAMPLE)"
                                     : "own dataset, not at this worker count";
}

// One row per case: its configuration, the factor it varies and the case it is predicted from.
nlohmann::json MatrixJson(const AnalysisInput& in) {
  const ExperimentSpec& spec = *in.spec;
  nlohmann::json matrix = nlohmann::json::array();
  for (const auto& c : spec.cases) {
    const std::string& from = PredictedFrom(spec, c.name);
    matrix.push_back({{"case", c.name},
                      {"config", BenchConfigToJson(c.config)},
                      {"factors_vs_base", c.factors},
                      {"predicted_from", from},
                      {"cpu_probe", CpuProbeUse(in.cpu_probe, c.config.num_workers)},
                      {"train_reps", RepValues(in, c.name, "train", kTrainThroughput).size()},
                      {"pipeline_reps", RepValues(in, c.name, "pipeline", kPipelineThroughput).size()}});
  }
  return matrix;
}

// How warm-up, page cache, inputs, statistics and calibration are handled.
nlohmann::json MethodJson(const AnalysisInput& in) {
  const ExperimentSpec& spec = *in.spec;
  const BootstrapOptions& boot = spec.bootstrap;
  return {
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
      {"page_cache", PageCacheStatement(in)},
      {"statistic", "median of the repetitions; percentile bootstrap interval of the median"},
      {"bootstrap", {{"resamples", boot.resamples}, {"seed", boot.seed}, {"confidence", boot.confidence}}},
      {"memory_definition",
       "peak over 2 Hz samples of main-process RSS + every worker's PSS (from the trace); the "
       "host-wide MemTotal-MemAvailable peak of the bench summary includes other tenants and is "
       "reported but not compared"},
      {"calibration",
       fmt::format("every case is predicted from a model calibrated on the train runs of case '{}' (the "
                   "median-throughput one replays, at the mean cost level of all its repetitions), except '{}' "
                   "itself, predicted from case '{}' the same way: never from the case being predicted",
                   spec.calibrate_from, spec.calibrate_from, spec.calibrate_alternate)}};
}

// Load around the runs and failed runs: the noise the numbers were measured under.
nlohmann::json NoiseJson(const AnalysisInput& in) {
  double load_min = 1e300, load_max = -1, steal_max = -1, mhz_min = 1e300, mhz_max = -1;
  int failed_runs = 0, measured_runs = 0, repeated_runs = 0, unscored_runs = 0, unscored_host = 0;
  std::vector<double> host_shares;
  const std::vector<double> page_touch_us = ScreenedFaultCostsUs(in.runs);
  for (const auto& run : in.runs) {
    steal_max = std::max(steal_max, run.steal_fraction);
    if (run.HostDeliveredShare() >= 0) host_shares.push_back(run.HostDeliveredShare());
    if (run.over_noise_bound && run.noise_reason == "host_capacity") ++unscored_host;
    if (run.attempts > 1) ++repeated_runs;
    if (run.over_noise_bound) ++unscored_runs;
    for (double mhz : {run.cpu_mhz_before, run.cpu_mhz_after}) {
      if (mhz > 0) {
        mhz_min = std::min(mhz_min, mhz);
        mhz_max = std::max(mhz_max, mhz);
      }
    }
    for (double l : {run.loadavg_before, run.loadavg_after}) {
      if (l >= 0) {
        load_min = std::min(load_min, l);
        load_max = std::max(load_max, l);
      }
    }
    if (!run.plan.discarded) ++measured_runs;
    if (run.exit_code != 0) ++failed_runs;
  }
  return {
      {"loadavg_1min_min", load_max < 0 ? -1 : R(load_min)},
      {"loadavg_1min_max", load_max < 0 ? -1 : R(load_max)},
      {"runs_measured", measured_runs},
      {"runs_failed", failed_runs},
      {"steal_fraction_max", steal_max < 0 ? -1 : R(steal_max)},
      {"steal_bound", kStealBound},
      {"cpu_mhz_min", mhz_max < 0 ? -1 : R(mhz_min)},
      {"cpu_mhz_max", mhz_max < 0 ? -1 : R(mhz_max)},
      {"runs_repeated_for_noise", repeated_runs},
      {"runs_not_scored_for_noise", unscored_runs},
      {"runs_not_scored_for_host_capacity", unscored_host},
      {"host_delivered_share_min",
       host_shares.empty() ? -1 : R(*std::min_element(host_shares.begin(), host_shares.end()))},
      {"host_delivered_share_median", host_shares.empty() ? -1 : R(Median(host_shares))},
      {"host_delivered_share_bound", kMinDeliveredShare},
      // Recorded, not bounded (validation/host_capacity.h): what faulting in a fresh page costs.
      {"fresh_page_touch_us_median", page_touch_us.empty() ? -1 : R(Median(page_touch_us))},
      {"fresh_page_touch_us_max",
       page_touch_us.empty() ? -1 : R(*std::max_element(page_touch_us.begin(), page_touch_us.end()))},
      {"note", HostStatement(in) + ": other processes' load moves wall-clock throughput from run to run; each case's "
                                   "coefficient of variation (cv) is given with its results"}};
}

// Predicted vs measured per case and metric, with the errors the thresholds are judged on.
struct CaseResults {
  nlohmann::json json = nlohmann::json::array();
  std::vector<double> abs_train_errors;  // unrounded |train throughput error| of every compared case
  double max_idle_error = -1;            // largest |GPU idle error|, -1 when none
  std::string worst_idle_case;
};

CaseResults ResultsJson(const AnalysisInput& in) {
  const ExperimentSpec& spec = *in.spec;
  const BootstrapOptions& boot = spec.bootstrap;
  CaseResults out;
  nlohmann::json& results = out.json;
  std::vector<double>& abs_train_errors = out.abs_train_errors;
  double& max_idle_error = out.max_idle_error;
  std::string& worst_idle_case = out.worst_idle_case;
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
    std::vector<double> sample_cpu, sample_wall, sample_faults, host_busy;
    for (const auto& run : in.runs) {
      if (run.plan.discarded || run.plan.case_name != c.name || run.plan.kind != "train") continue;
      auto it = in.facts.find(run.plan.id);
      if (it == in.facts.end()) continue;
      if (it->second.sample_cpu_s >= 0) sample_cpu.push_back(it->second.sample_cpu_s);
      if (it->second.sample_wall_s >= 0) sample_wall.push_back(it->second.sample_wall_s);
      if (it->second.sample_minflt >= 0) sample_faults.push_back(it->second.sample_minflt);
      if (it->second.host_cpu_busy_fraction >= 0) host_busy.push_back(it->second.host_cpu_busy_fraction);
    }
    if (!sample_cpu.empty()) r["sample_cpu_s_median"] = R(Median(sample_cpu));
    if (!sample_wall.empty()) r["sample_wall_s_median"] = R(Median(sample_wall));
    if (!sample_faults.empty()) r["sample_page_faults_median"] = R(Median(sample_faults));
    if (!host_busy.empty()) r["host_cpu_busy_fraction_median"] = R(Median(host_busy));
    if (!host_peaks.empty()) r["host_mem_used_peak_bytes_median"] = R(Median(host_peaks));
    if (!cpu_per_sample.empty()) r["loader_cpu_s_per_sample_median"] = R(Median(cpu_per_sample));
    results.push_back(r);
  }
  return out;
}

// Per varied factor (the reference case plus the cases varying it) and over all cases.
nlohmann::json RankingsJson(const AnalysisInput& in, bool* agree) {
  const ExperimentSpec& spec = *in.spec;
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
  if (agree != nullptr) *agree = rankings_agree;
  return rankings;
}

// Same samples where the factor must not change them; repeatability of each case.
nlohmann::json CorrectnessJson(const AnalysisInput& in) {
  const ExperimentSpec& spec = *in.spec;
  const ExperimentCase& ref = ReferenceCase(spec);
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
  return {{"pass", correctness_pass}, {"checks", correctness}};
}

// What ran the training steps, from the measured train runs' trace manifests: "cuda" when every one
// ran on a GPU (validation/gpu/workers.json on an H200), "emulated" when every one slept (the bench's
// --emulate, or no GPU), "mixed" otherwise. Until 2026-12-04 every report said "emulated" whatever ran.
struct Accelerator {
  std::string label, note;
};
Accelerator AcceleratorOf(const AnalysisInput& in) {
  int cuda = 0, emulated = 0;
  std::string device;
  for (const auto& run : in.runs) {
    if (run.plan.discarded || run.plan.kind != "train") continue;
    auto it = in.facts.find(run.plan.id);
    if (it == in.facts.end()) continue;
    const auto& mf = it->second.manifest;
    if (mf.value("accelerator", "") == "cuda") {
      ++cuda;
      const nlohmann::json* hw = mf.contains("hardware") && mf["hardware"].is_object() ? &mf["hardware"] : nullptr;
      const nlohmann::json* gpus = hw != nullptr && hw->contains("gpus") ? &(*hw)["gpus"] : nullptr;
      if (device.empty() && gpus != nullptr && gpus->is_array() && !gpus->empty() && (*gpus)[0].is_object() &&
          (*gpus)[0].contains("name") && (*gpus)[0]["name"].is_string()) {
        device = (*gpus)[0]["name"].get<std::string>();
      }
    } else {
      ++emulated;
    }
  }
  const double step_s = in.spec->run.step_time_s;
  if (cuda > 0 && emulated == 0) {
    return {"cuda", fmt::format("every measured training step ran on a CUDA GPU{} (CUDA events), and every prediction "
                                "simulates the step time calibrated from those events",
                                device.empty() ? "" : " (" + device + ")")};
  }
  if (cuda > 0) {
    return {"mixed", fmt::format("{} measured runs stepped on a CUDA GPU and {} with an emulated sleep of {} s: their "
                                 "predictions are not comparable with each other",
                                 cuda, emulated, step_s)};
  }
  return {"emulated", fmt::format("no GPU: every training step in the real runs was an emulated sleep of {} s per "
                                  "micro-batch (bench --emulate), and every prediction simulates that emulated step",
                                  step_s)};
}

// Observed bottlenecks (rules on measured numbers) and hypotheses (the simulator's verdicts), apart.
void BottlenecksJson(const AnalysisInput& in, const nlohmann::json& results, nlohmann::json* observed_out,
                     nlohmann::json* hypotheses_out) {
  const ExperimentSpec& spec = *in.spec;
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
        verdict = "accelerator-bound: the step is busy >= 90% of the time";
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
    if (p != in.predictions.end() && !p->second.bottleneck.stage.empty()) {
      hypotheses.push_back({{"case", name},
                            {"source", "simulator (model calibrated on case '" + p->second.calibrated_from + "')"},
                            {"stage", p->second.bottleneck.stage},
                            {"evidence", p->second.bottleneck.evidence}});
    }
  }
  *observed_out = observed;
  *hypotheses_out = hypotheses;
}

// A/B comparisons against the reference case, with deployment and rollback checks.
nlohmann::json ComparisonsJson(const AnalysisInput& in) {
  const ExperimentSpec& spec = *in.spec;
  const ExperimentCase& ref = ReferenceCase(spec);
  const BootstrapOptions& boot = spec.bootstrap;
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
  return comparisons;
}

// The CI thresholds of the spec, judged on the case results.
nlohmann::json ThresholdsJson(const AnalysisInput& in, const CaseResults& r, const nlohmann::json& baseline) {
  const ExperimentSpec& spec = *in.spec;
  nlohmann::json thresholds = {{"enabled", spec.thresholds.enabled}};
  bool thresholds_pass = true;
  const std::vector<double>& abs_train_errors = r.abs_train_errors;
  const double max_idle_error = r.max_idle_error;
  const std::string& worst_idle_case = r.worst_idle_case;
  const nlohmann::json& results = r.json;
  // The limits are judged by validation/gate (one home, shared with the multi-node suite).
  const GateCheck median = JudgeLimit("median_abs_train_throughput_error_pct", GateStatistic::kMedian,
                                      abs_train_errors, spec.thresholds.median_train_throughput_error_pct);
  thresholds["median_abs_train_throughput_error_pct"] = {{"value", median.n ? nlohmann::json(R(median.value)) : nullptr},
                                                         {"limit", median.limit},
                                                         {"pass", median.pass},
                                                         {"cases", median.n}};
  thresholds_pass = thresholds_pass && median.pass;
  // max_idle_error < 0: no case has a GPU idle error to judge, which fails like an empty gate.
  const GateCheck idle =
      JudgeLimit("max_abs_gpu_idle_error_pp", GateStatistic::kMax,
                 max_idle_error >= 0 ? std::vector<double>{max_idle_error} : std::vector<double>{},
                 spec.thresholds.max_gpu_idle_error_pp);
  thresholds["max_abs_gpu_idle_error_pp"] = {{"value", idle.n ? nlohmann::json(R(idle.value)) : nullptr},
                                             {"limit", idle.limit},
                                             {"pass", idle.pass}};
  if (idle.n) thresholds["max_abs_gpu_idle_error_pp"]["case"] = worst_idle_case;
  thresholds_pass = thresholds_pass && idle.pass;
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
  // Per-case limits, reported for every case; enforced when the spec sets one.
  const double case_limit = spec.thresholds.max_case_train_throughput_error_pct;
  nlohmann::json per_case = nlohmann::json::array();
  bool per_case_pass = true;
  for (const auto& row : results) {
    const auto& m = row["metrics"];
    nlohmann::json entry = {{"case", row["case"]},
                            {"train_throughput_error_pct", m[kTrainThroughput].value("error", nlohmann::json())},
                            {"train_throughput_limit_pct", case_limit >= 0 ? nlohmann::json(case_limit) : nullptr},
                            {"gpu_idle_error_pp", m[kGpuIdle].value("error", nlohmann::json())},
                            {"gpu_idle_limit_pp", spec.thresholds.max_gpu_idle_error_pp}};
    bool ok = m[kGpuIdle].contains("error") &&
              std::fabs(m[kGpuIdle]["error"].get<double>()) <= spec.thresholds.max_gpu_idle_error_pp;
    if (case_limit >= 0) {
      ok = ok && m[kTrainThroughput].contains("error") &&
           std::fabs(m[kTrainThroughput]["error"].get<double>()) <= case_limit;
    }
    entry["pass"] = ok;
    per_case_pass = per_case_pass && ok;
    per_case.push_back(entry);
  }
  thresholds["per_case"] = per_case;
  if (case_limit >= 0) thresholds_pass = thresholds_pass && per_case_pass;
  // The error limits alone (median, GPU idle, per case), apart from the persistence comparison: the
  // held-out sets gate CI on these (docs/validation.md, "Held-out cases").
  thresholds["error_limits_pass"] = thresholds_pass;
  thresholds["beats_persistence"] = {{"model_median_abs_error_pct", baseline["model_median_abs_error_pct"]},
                                     {"baseline_median_abs_error_pct", baseline["baseline_median_abs_error_pct"]},
                                     {"margin_pp", spec.thresholds.beat_persistence_by_pp},
                                     {"cases", baseline["changed_cases"]},
                                     {"pass", baseline["model_beats_baseline"]}};
  thresholds_pass = thresholds_pass && baseline["model_beats_baseline"].get<bool>();
  thresholds["long_term_target"] = "median |train throughput error| <= 3%";
  thresholds["pass"] = thresholds_pass;
  return thresholds;
}

// Every planned run ran and was read, and every case has a prediction and a measurement: a
// validation scored on the cases that happened to survive could pass by accident.
nlohmann::json CompletenessJson(const AnalysisInput& in) {
  const ExperimentSpec& spec = *in.spec;
  std::vector<std::string> problems;
  const size_t planned = PlanRuns(spec).size();
  if (in.runs.size() < planned)
    problems.push_back(fmt::format("{} of {} planned runs recorded", in.runs.size(), planned));
  for (const auto& run : in.runs) {
    if (run.exit_code != 0) {
      problems.push_back(
          fmt::format("run {} failed (exit {}{})", run.plan.id, run.exit_code, run.timed_out ? ", timed out" : ""));
    } else if (!run.plan.discarded && !run.over_noise_bound && !in.metrics.count(run.plan.id)) {
      problems.push_back(fmt::format("run {}: its summary could not be read", run.plan.id));
    } else if (!run.plan.discarded && !run.over_noise_bound && run.plan.kind == "train" &&
               !in.facts.count(run.plan.id)) {
      problems.push_back(fmt::format("run {}: its trace could not be read", run.plan.id));
    }
  }
  for (const auto& c : spec.cases) {
    if (RepValues(in, c.name, "train", kTrainThroughput).empty()) {
      problems.push_back(fmt::format("case {}: no measured train run", c.name));
    }
    if (!in.predictions.count(c.name)) {
      auto why = in.prediction_errors.find(c.name);
      problems.push_back(fmt::format("case {}: not predicted ({})", c.name,
                                     why == in.prediction_errors.end() ? "no prediction" : why->second));
    }
  }
  return {
      {"pass", problems.empty()}, {"runs_planned", planned}, {"runs_recorded", in.runs.size()}, {"problems", problems}};
}

// The persistence baseline: every case "predicted" as the measured median of the case its model was
// calibrated on (what one would guess without a simulator). Reported beside the model's errors; on
// the cases where the factor changes the outcome (the measured median lies outside the calibrating
// case's bootstrap interval) the model must beat it by spec.thresholds.beat_persistence_by_pp.
nlohmann::json BaselineJson(const AnalysisInput& in, const CaseResults& r) {
  const ExperimentSpec& spec = *in.spec;
  nlohmann::json cases = nlohmann::json::array();
  std::vector<double> model_changed, baseline_changed;
  for (const auto& result : r.json) {
    const std::string name = result["case"].get<std::string>();
    const std::string& from = PredictedFrom(spec, name);
    auto own = RepValues(in, name, "train", kTrainThroughput);
    auto source = RepValues(in, from, "train", kTrainThroughput);
    if (own.empty() || source.empty()) continue;
    const double measured = Median(Values(own));
    const double baseline = Median(Values(source));
    const Interval source_ci = BootstrapInterval(Values(source), Statistic::kMedian, spec.bootstrap);
    const bool changed = !source_ci.Contains(measured);
    nlohmann::json row = {
        {"case", name},
        {"baseline_from", from},
        {"changed_by_factor", changed},
        {"train_throughput_baseline", R(baseline)},
        {"train_throughput_baseline_error_pct", R(PredictionError(kTrainThroughput, baseline, measured))}};
    auto idle_own = RepValues(in, name, "train", kGpuIdle);
    auto idle_source = RepValues(in, from, "train", kGpuIdle);
    if (!idle_own.empty() && !idle_source.empty()) {
      row["gpu_idle_baseline_error_pp"] =
          R(PredictionError(kGpuIdle, Median(Values(idle_source)), Median(Values(idle_own))));
    }
    const auto& model = result["metrics"][kTrainThroughput];
    if (model.contains("error")) {
      row["train_throughput_model_error_pct"] = model["error"];
      if (changed) {
        model_changed.push_back(std::fabs(model["error"].get<double>()));
        baseline_changed.push_back(std::fabs(PredictionError(kTrainThroughput, baseline, measured)));
      }
    }
    cases.push_back(row);
  }
  nlohmann::json out = {{"definition",
                         "persistence: each case predicted as the measured median train throughput (and GPU idle) of "
                         "the case its model was calibrated on; 'changed_by_factor' when the case's measured median "
                         "lies outside that case's bootstrap interval"},
                        {"cases", cases},
                        {"changed_cases", model_changed.size()},
                        {"margin_pp", spec.thresholds.beat_persistence_by_pp}};
  if (model_changed.empty()) {
    out["model_median_abs_error_pct"] = nullptr;
    out["baseline_median_abs_error_pct"] = nullptr;
    out["model_beats_baseline"] = false;
    out["note"] =
        "no case changed the outcome beyond the calibrating case's interval: nothing shows the model "
        "does better than repeating the measurement";
  } else {
    const double model = Median(model_changed), baseline = Median(baseline_changed);
    out["model_median_abs_error_pct"] = R(model);
    out["baseline_median_abs_error_pct"] = R(baseline);
    out["model_beats_baseline"] = model <= baseline - spec.thresholds.beat_persistence_by_pp;
  }
  return out;
}

// From the first measured train trace (versions, commit, hardware, storage, data volume), plus one
// command per case and kind and the time span of the runs.
nlohmann::json ManifestJson(const AnalysisInput& in) {
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
  return manifest;
}

}  // namespace

nlohmann::json Analyze(const AnalysisInput& in) {
  const ExperimentSpec& spec = *in.spec;
  nlohmann::json doc = nlohmann::json::object();
  doc["schema"] = kValidationSchema;
  doc["name"] = spec.name;
  doc["description"] = spec.description;
  doc["mode"] = spec.mode;
  const Accelerator accelerator = AcceleratorOf(in);
  doc["accelerator"] = accelerator.label;
  doc["accelerator_note"] = accelerator.note;
  doc["spec"] = spec.raw;
  doc["matrix"] = MatrixJson(in);
  doc["base"] = BenchConfigToJson(spec.base);
  doc["method"] = MethodJson(in);
  doc["noise"] = NoiseJson(in);
  const CaseResults results = ResultsJson(in);
  doc["results"] = results.json;
  bool rankings_agree = true;
  doc["rankings"] = RankingsJson(in, &rankings_agree);
  doc["correctness"] = CorrectnessJson(in);
  BottlenecksJson(in, results.json, &doc["observed_bottlenecks"], &doc["hypotheses"]);
  doc["comparisons"] = ComparisonsJson(in);
  doc["baseline"] = BaselineJson(in, results);
  doc["thresholds"] = ThresholdsJson(in, results, doc["baseline"]);
  doc["rankings_agree"] = rankings_agree;
  doc["calibration"] = in.calibration;
  doc["environment"] = in.environment;
  doc["manifest"] = ManifestJson(in);
  doc["warnings"] = in.warnings;
  const bool thresholds_pass = doc["thresholds"].value("pass", false);
  doc["completeness"] = CompletenessJson(in);
  doc["pass"] = (!spec.thresholds.enabled || thresholds_pass) && doc["correctness"].value("pass", false) &&
                doc["completeness"].value("pass", false);
  return doc;
}

bool ChecksFailed(const nlohmann::json& validation) { return !validation.value("pass", false); }

std::string FailedChecks(const nlohmann::json& validation) {
  if (!ChecksFailed(validation)) return "";
  std::string failed;
  auto add = [&](const char* what) { failed += (failed.empty() ? "" : "; ") + std::string(what); };
  if (!validation["completeness"].value("pass", false)) add("completeness: a run failed or a case lacks data");
  if (!validation["correctness"].value("pass", false)) add("correctness of delivered samples");
  if (validation["thresholds"].value("enabled", false) && !validation["thresholds"].value("pass", false)) {
    add("prediction-error thresholds");
  }
  return failed;
}

}  // namespace simreplay::validation
