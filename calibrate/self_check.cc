#include "calibrate/calibrator.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "calibrate/stages.h"
#include "common/atomic_file.h"
#include "replay/manifest.h"

namespace simreplay::calibrate {

using replay::ManifestBool;
using replay::ManifestDouble;
using replay::ManifestInt;

std::vector<CapturedRun> CapturedRuns(const CalibrationInput& in, const CalibrationDraft& d) {
  std::vector<CapturedRun> captured;
  for (size_t ti = 0; ti < in.traces.size(); ++ti) {
    const auto& t = in.traces[ti];
    CapturedRun run;
    run.trace = t.path;
    run.contention = d.contention[ti];
    // The trace's own cost level (its workers' warm-up excess the replay takes out of its recorded
    // costs: cpu.recorded_warmup_samples).
    run.worker_cost_scale = d.as_captured ? d.contention[ti].as_captured_scale : d.contention[ti].intrinsic_scale;
    run.measured = Summarize(t);
    const auto& m = t.manifest;
    if (t.batches.empty()) run.skip_reason = "no batch records";
    if (!m.contains("loader") || !m["loader"].is_object()) run.skip_reason = "no loader config in the manifest";
    if (m.value("world_size", 1) > 1) run.skip_reason = "multi-rank trace: self-check covers single-rank runs";
    if (run.measured.wall_s <= 0) run.skip_reason = "no measurable run time";
    int grad_accum = 1;
    if (m.contains("notes") && m["notes"].is_object() && m["notes"].contains("grad_accum") &&
        m["notes"]["grad_accum"].is_number_integer()) {
      grad_accum = std::max(1, m["notes"]["grad_accum"].get<int>());
    }
    nlohmann::json loader = {{"num_workers", std::max(0, ManifestInt(m, "loader", "num_workers", 0))},
                             {"batch_size", std::max(1, ManifestInt(m, "loader", "batch_size", 1))},
                             {"prefetch_factor", std::max(1, ManifestInt(m, "loader", "prefetch_factor", 2))},
                             {"pin_memory", ManifestBool(m, "loader", "pin_memory")},
                             {"persistent_workers", ManifestBool(m, "loader", "persistent_workers") &&
                                                        ManifestInt(m, "loader", "num_workers", 0) > 0},
                             {"drop_last", ManifestBool(m, "loader", "drop_last")},
                             {"shuffle", ManifestBool(m, "loader", "shuffle")}};
    nlohmann::json train = {{"steps", std::max<int64_t>(1, static_cast<int64_t>(t.batches.size()) / grad_accum)},
                            {"grad_accum", grad_accum}};
    const double files = ManifestDouble(m, "data", "files", 0);
    if (files > 0) train["dataset_samples"] = static_cast<int64_t>(files);
    run.scenario = {{"name", "self-check " + t.path},
                    {"trace", std::filesystem::absolute(t.path).string()},
                    {"loader", loader},
                    {"hardware", {{"cpu_cores", std::max(0, ManifestInt(m, "hardware", "cores", 0))}, {"gpus", 1}}},
                    {"train", train},
                    {"seed", 0}};
    captured.push_back(std::move(run));
  }
  return captured;
}

Result<nlohmann::json> SelfCheck(const CalibrationResult& result, const std::string& temp_dir,
                                 const SimulateFn& simulate) {
  nlohmann::json rows = nlohmann::json::array();
  double worst = 0;
  int checked = 0;
  for (const auto& run : result.captured) {
    nlohmann::json row = {{"trace", run.trace}};
    if (!run.skip_reason.empty()) {
      row["skipped"] = run.skip_reason;
      rows.push_back(row);
      continue;
    }
    models::ModelParams model = result.model;
    model.cpu.worker_cost_scale = run.worker_cost_scale;
    model.trace_path = std::filesystem::absolute(run.trace).string();
    model.extra = nlohmann::json::object();
    const std::string model_path =
        std::filesystem::absolute(fmt::format("{}/selfcheck-model.{}.{}.json", temp_dir, ::getpid(), checked)).string();
    SIMREPLAY_RETURN_IF_ERROR(WriteFileAtomically(model_path, models::ModelToJson(model).dump(2)));
    nlohmann::json scenario_json = run.scenario;
    scenario_json["model"] = model_path;
    auto scenario = scenarios::ParseScenario(scenario_json, "self-check scenario for " + run.trace, temp_dir);
    if (!scenario.ok()) {
      std::filesystem::remove(model_path);
      return scenario.status();
    }
    auto sim = simulate(*scenario);
    std::filesystem::remove(model_path);
    if (!sim.ok()) return Status(sim.status());
    const auto& m = (*sim)["metrics"];
    const double p_tp = m["train_throughput_samples_per_s"].get<double>();
    const double p_idle = m["gpu_idle_fraction"].get<double>();
    const double p_wait = m["data_wait_s"]["mean"].get<double>();
    const auto& meas = run.measured;
    const double err = meas.train_throughput_samples_per_s > 0
                           ? 100.0 * (p_tp - meas.train_throughput_samples_per_s) / meas.train_throughput_samples_per_s
                           : 0;
    worst = std::max(worst, std::abs(err));
    ++checked;
    row["config"] = {{"loader", run.scenario["loader"]},
                     {"cpu_cores", run.scenario["hardware"]["cpu_cores"]},
                     {"steps", run.scenario["train"]["steps"]},
                     {"worker_cost_scale", run.worker_cost_scale}};
    row["predicted"] = {{"train_throughput_samples_per_s", p_tp},
                        {"gpu_idle_fraction", p_idle},
                        {"mean_data_wait_s", p_wait},
                        {"pipeline_throughput_samples_per_s", m["pipeline_throughput_samples_per_s"]}};
    row["measured"] = meas.ToJson();
    row["error"] = {
        {"train_throughput_pct", err},
        {"gpu_idle_points", 100.0 * (p_idle - meas.gpu_idle_fraction)},
        {"mean_data_wait_pct",
         meas.mean_data_wait_s > 0 ? 100.0 * (p_wait - meas.mean_data_wait_s) / meas.mean_data_wait_s : 0.0}};
    if (sim->contains("warnings")) row["simulator_warnings"] = (*sim)["warnings"];
    rows.push_back(row);
  }
  return nlohmann::json{{"mode",
                         "the captured configuration simulated on the calibrated model, with that trace's own "
                         "worker_cost_scale of the kind the model holds (--cpu-scale)"},
                        {"runs", rows},
                        {"checked", checked},
                        // null, not 0, when every trace was skipped: nothing was checked.
                        {"max_abs_train_throughput_error_pct", checked > 0 ? nlohmann::json(worst) : nullptr},
                        {"target_pct", 3.0},
                        {"within_target", checked > 0 && worst <= 3.0}};
}

std::string FormatSelfCheckTable(const nlohmann::json& sc) {
  std::string out = "self-check (captured configuration simulated on the calibrated model)\n";
  out += fmt::format("{:<40} {:>14} {:>14} {:>9}\n", "quantity", "predicted", "measured", "error");
  for (const auto& row : sc["runs"]) {
    out += "trace " + row["trace"].get<std::string>() + "\n";
    if (row.contains("skipped")) {
      out += "  skipped: " + row["skipped"].get<std::string>() + "\n";
      continue;
    }
    const auto& p = row["predicted"];
    const auto& m = row["measured"];
    const auto& e = row["error"];
    out += fmt::format("  {:<38} {:>14.3f} {:>14.3f} {:>+8.2f}%\n", "train throughput (samples/s)",
                       p["train_throughput_samples_per_s"].get<double>(),
                       m["train_throughput_samples_per_s"].get<double>(), e["train_throughput_pct"].get<double>());
    out += fmt::format("  {:<38} {:>13.2f}% {:>13.2f}% {:>+7.2f}pt\n", "GPU idle",
                       100 * p["gpu_idle_fraction"].get<double>(), 100 * m["gpu_idle_fraction"].get<double>(),
                       e["gpu_idle_points"].get<double>());
    out += fmt::format("  {:<38} {:>14.5f} {:>14.5f} {:>+8.2f}%\n", "mean data wait (s)",
                       p["mean_data_wait_s"].get<double>(), m["mean_data_wait_s"].get<double>(),
                       e["mean_data_wait_pct"].get<double>());
  }
  if (sc.value("checked", 0) == 0) {
    out += "nothing checked: every trace was skipped (reasons above)\n";
  } else {
    out += fmt::format("max |throughput error| {:.2f}% over {} trace(s) (target <= {:.0f}%)\n",
                       sc["max_abs_train_throughput_error_pct"].get<double>(), sc["checked"].get<int>(),
                       sc["target_pct"].get<double>());
  }
  return out;
}

}  // namespace simreplay::calibrate
