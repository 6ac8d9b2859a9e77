// simreplay calibrate TRACE... --out model.json [--probe probe.json] [--no-self-check]
//   [--storage-mode recorded|model]: fits the model file (docs/model-format.md) from traces, then
// simulates each captured configuration and prints predicted vs measured (stored as "self_check").
#include <cstdio>
#include <filesystem>
#include <optional>

#include <CLI/CLI.hpp>

#include "calibrate/calibrator.h"
#include "calibrate/network_fit.h"
#include "cli/cli_util.h"
#include "cli/verb_registry.h"
#include "common/atomic_file.h"
#include "scenarios/scenario.h"
#include "sim/point_runner.h"

namespace simreplay::cli {
namespace {

int RunCalibrate(int argc, char** argv) {
  CLI::App app{
      "Fit the simulator's model (docs/model-format.md) from traces and an optional storage probe.\n"
      "Ends by simulating each captured configuration and printing predicted vs measured."};
  app.name(argv[0]);
  calibrate::CalibrateOptions options;
  std::string out;
  bool no_self_check = false;
  app.add_option("traces", options.traces,
                 "trace files (.jsonl or .jsonl.gz); the first is the one the model replays, at the mean cost level "
                 "of the traces that repeat its configuration")
      ->required();
  app.add_option("--out", out, "model file to write (atomically)")->required();
  app.add_option("--probe", options.probe_path, "storage probe document (simreplay probe storage)");
  app.add_option("--cpu-probe", options.cpu_probe_path,
                 "CPU contention probe (python3 -m simreplay_capture.probe_cpu, docs/probe-cpu.md): the measured "
                 "curve sets cpu.busy_core_slowdown and cpu.oversubscription_overhead, its timed sleeps the "
                 "scheduler wake-up delay (cpu.wakeup_delay_*)");
  app.add_option("--media-probe", options.media_probe_path,
                 "media probe (python3 -m simreplay_capture.probe_media, docs/probe-format.md): each medium's "
                 "decode and augment cost fitted as a fixed plus a per-pixel part over the probed image scales "
                 "and clip lengths, at the trace's level");
  app.add_option("--storage-mode", options.storage_mode,
                 "storage.mode written to the model: recorded (default) or model")
      ->check(CLI::IsMember({"recorded", "model"}));
  app.add_option("--cpu-scale", options.cpu_scale,
                 "intrinsic (default: remove the contention seen during capture) or as-captured (keep the slowdown "
                 "from other load during capture: predicts a machine as loaded as it was)")
      ->check(CLI::IsMember({"as-captured", "intrinsic"}));
  app.add_option("--busy-core-slowdown", options.busy_core_slowdown,
                 "set cpu.busy_core_slowdown instead of estimating it from the first trace (0 = cores do not slow "
                 "each other down)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_flag("--no-self-check", no_self_check, "skip simulating the captured configurations");
  std::string network_probe;
  app.add_option("--network-probe", network_probe,
                 "network probe document (simreplay probe network): sets the collective parameters");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  const std::string verb = "simreplay calibrate";
  options.model_path = out;
  auto result = calibrate::Calibrate(options);
  if (!result.ok()) return Fail(verb, result.status());
  // The network stage (calibrate/network_fit.h): collective parameters from the probe and the traces'
  // collective records.
  {
    std::optional<calibrate::NetworkProbe> probe;
    if (!network_probe.empty()) {
      auto loaded = calibrate::LoadNetworkProbe(network_probe);
      if (!loaded.ok()) return Fail(verb, loaded.status());
      probe = std::move(*loaded);
    }
    auto collectives = calibrate::ReadTraceCollectives(options.traces);
    if (!collectives.ok()) return Fail(verb, collectives.status());
    if (probe || collectives->steps_with_collectives > 0) {
      auto fit = calibrate::FitNetwork(probe ? &*probe : nullptr, &*collectives, result->model.collective);
      calibrate::DropSupersededWarnings(fit, &result->warnings);
      if (result->model.extra.contains("warnings") && result->model.extra["warnings"].is_array()) {
        auto ws = result->model.extra["warnings"].get<std::vector<std::string>>();
        calibrate::DropSupersededWarnings(fit, &ws);
        result->model.extra["warnings"] = ws;
      }
      calibrate::ApplyNetworkFit(fit, &result->model);
      for (const auto& w : fit.warnings) result->warnings.push_back(w);
    }
  }

  if (!no_self_check) {
    std::string dir = scenarios::DirectoryOf(out);
    sim::CostCache cache;
    auto check = calibrate::SelfCheck(
        *result, dir, [&cache](const scenarios::Scenario& s) { return sim::SimulateScenario(s, "", &cache); });
    if (!check.ok()) {
      // The model is still useful; the failed check is recorded in it and reported.
      std::fprintf(stderr, "%s: self-check failed: %s\n", verb.c_str(), check.status().message().c_str());
      result->model.extra["self_check"] = {{"error", check.status().message()}};
    } else {
      result->model.extra["self_check"] = *check;
      std::fputs(calibrate::FormatSelfCheckTable(*check).c_str(), stdout);
    }
  } else {
    result->model.extra["self_check"] = {{"skipped", "--no-self-check"}};
  }
  Status s = WriteFileAtomically(out, models::ModelToJson(result->model).dump(2) + "\n");
  if (!s.ok()) return Fail(verb, s);
  const auto& m = result->model;
  std::printf("cpu.worker_cost_scale %.4f (%s)\n", m.cpu.worker_cost_scale,
              m.info.at("cpu.worker_cost_scale").source.c_str());
  {
    // The contention curve and, when measured, how well it fits the probe's points.
    const nlohmann::json& fq = m.extra.contains("fit_quality") ? m.extra["fit_quality"] : nlohmann::json::object();
    const nlohmann::json curve = fq.contains("cpu") && fq["cpu"].contains("contention_curve")
                                     ? fq["cpu"]["contention_curve"]
                                     : nlohmann::json::object();
    const std::string source = curve.value("source", std::string("assumed"));
    std::printf("cpu contention        busy_core_slowdown %.3f, oversubscription_overhead %.3f (curve %s)\n",
                m.cpu.busy_core_slowdown, m.cpu.oversubscription_overhead, source.c_str());
    if (curve.contains("points")) {
      for (const auto& p : curve["points"]) {
        std::printf("  probe k=%d round %d: %.1f samples/s measured, %.1f fitted (%+.1f%%)\n", p["workers"].get<int>(),
                    p["round"].get<int>(), p["throughput_samples_per_s"].get<double>(),
                    p["fitted_throughput_samples_per_s"].get<double>(), p["error_pct"].get<double>());
      }
    }
  }
  std::printf("cpu.main_per_batch_s  %.6f s   worker_startup_s %.4f s   worker_spawn_s %.4f s   worker_shutdown_s %.4f s\n",
              m.cpu.main_per_batch_s, m.cpu.worker_startup_s, m.cpu.worker_spawn_s, m.cpu.worker_shutdown_s);
  std::printf("cpu wake-up delay     %.3g s + %.3g s per runnable thread beyond the cores (%s)\n",
              m.cpu.wakeup_delay_s, m.cpu.wakeup_delay_per_excess_s,
              m.info.count("cpu.wakeup_delay_s") && !m.info.at("cpu.wakeup_delay_s").assumed ? "CPU probe" : "assumed");
  std::printf("gpu.step_time_s       %.6f s (cv %.3f, %s, %s)\n", m.gpu.step_time_s, m.gpu.step_cv,
              m.gpu.distribution.c_str(), m.gpu.accelerator.c_str());
  std::printf("storage               latency %.3g s, bandwidth %.3g B/s, mode %s\n", m.storage.latency_s,
              m.storage.bandwidth_bytes_per_s, m.storage.mode.c_str());
  if (m.collective.gradient_bytes > 0 || m.info.count("collective.bus_bytes_per_s")) {
    std::printf("collective            alpha %.3g s, bus %.3g B/s, gradient %.0f B per step\n", m.collective.alpha_s,
                m.collective.bus_bytes_per_s, m.collective.gradient_bytes);
  }
  std::printf("memory                worker PSS %.1f MiB, main %.1f MiB\n", m.memory.worker_base_pss_bytes / (1 << 20),
              m.memory.main_base_bytes / (1 << 20));
  for (const auto& w : result->warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  std::printf("wrote %s\n", out.c_str());
  return kExitOk;
}

}  // namespace

SIMREPLAY_REGISTER_VERB("calibrate", "fit the simulator's model from traces (+ storage probe) and self-check it",
                        RunCalibrate);

}  // namespace simreplay::cli
