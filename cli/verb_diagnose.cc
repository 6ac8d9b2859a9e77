// simreplay diagnose SCENARIO.json [--out DIR] [--trace TRACE] [--probe P] [--jobs N] [--relief-factor F]
// simreplay diagnose TRACE... [--model M] [--probe P] [--out DIR] [--jobs N] [--relief-factor F]
// Where the time goes: the trace's observations (no model) beside a causal profile of the scenario
// (every resource relieved in turn and simulated), the critical resource and the changes worth making
// (docs/advice.md). The trace-first form builds the scenario from the first trace's manifest and M;
// without --model it gives the observed half only and says that the hypotheses need a model. Writes
// DIR/diagnosis.json (simreplay.diagnosis/1) and DIR/report.html when --out is given.
#include <unistd.h>

#include <cstdio>
#include <optional>

#include <CLI/CLI.hpp>

#include "advise/causal_profile.h"
#include "advise/diagnosis.h"
#include "advise/observations.h"
#include "calibrate/storage_probe.h"
#include "cli/cli_util.h"
#include "cli/verb_registry.h"
#include "common/atomic_file.h"
#include "replay/trace_reader.h"
#include "scenarios/scenario.h"

namespace simreplay::cli {
namespace {

constexpr const char* kDiagnoseVerb = "simreplay diagnose";

// A file whose first line is a trace header is a trace; anything else is taken for a scenario.
bool IsTrace(const std::string& path) { return replay::TraceReader::Open(path).ok(); }

Result<advise::StorageProbeFits> ReadProbe(const std::string& path) {
  auto doc = calibrate::ReadProbeFile(path);
  if (!doc.ok()) return doc.status();
  advise::StorageProbeFits fits;
  fits.file = path;
  auto take = [](const std::optional<calibrate::ProbeFitRecord>& r, advise::ProbeFit* f) {
    if (!r.has_value()) return;
    f->present = true;
    f->peak_bytes_per_s = r->peak_bytes_per_s.value_or(0);
    f->stream_bytes_per_s = r->bandwidth_bytes_per_s.value_or(0);
    f->latency_s = r->latency_s;
  };
  take(doc->random, &fits.random);
  take(doc->sequential, &fits.sequential);
  return fits;
}

// The scenario of the trace-first form: the model, the first trace, and the loader the trace's
// manifest records, run for as many steps as rank 0 recorded.
Result<scenarios::Scenario> ScenarioFromTrace(const std::string& trace, const std::string& model, int64_t steps) {
  auto reader = replay::TraceReader::Open(trace);
  if (!reader.ok()) return reader.status();
  const nlohmann::json& manifest = (*reader)->header().manifest;
  nlohmann::json json = {{"model", AbsolutePath(model)}, {"trace", AbsolutePath(trace)}};
  if (manifest.contains("loader") && manifest["loader"].is_object()) {
    const nlohmann::json& l = manifest["loader"];
    nlohmann::json loader = nlohmann::json::object();
    for (const char* key : {"num_workers", "batch_size", "prefetch_factor"}) {
      if (l.contains(key) && l[key].is_number_integer()) loader[key] = l[key];
    }
    for (const char* key : {"pin_memory", "persistent_workers", "drop_last", "shuffle"}) {
      if (l.contains(key) && l[key].is_boolean()) loader[key] = l[key];
    }
    json["loader"] = loader;
  }
  json["train"] = steps > 0 ? nlohmann::json{{"steps", steps}} : nlohmann::json{{"epochs", 1}};
  return scenarios::ParseScenario(json, trace + " (scenario from its manifest and " + model + ")", ".");
}

int RunDiagnose(int argc, char** argv) {
  CLI::App app{
      "Diagnose a scenario or a trace: what the trace shows (observed) and what relieving each resource in\n"
      "turn would buy (simulated hypotheses, with the validated error band), the critical resource and the\n"
      "changes worth making. `diagnose TRACE... [--model M]`: without a model only the observed half.\n"
      "Writes DIR/diagnosis.json (schema simreplay.diagnosis/1, docs/advice.md) and DIR/report.html with\n"
      "--out, and prints a summary."};
  app.name(argv[0]);
  std::vector<std::string> inputs;
  std::string out_dir, trace_path, model_path, probe_path;
  int jobs = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  double factor = 2;
  app.add_option("input", inputs,
                 "a scenario JSON file (docs/scenario-format.md; a sweep is ignored), or one or more traces "
                 "(docs/trace-format.md: rank traces or a merged one)")
      ->required();
  app.add_option("--out", out_dir, "output directory (created if missing); without it nothing is written");
  app.add_option("--trace", trace_path, "scenario form: trace to observe (default: the trace the scenario replays)");
  app.add_option("--model", model_path, "trace form: model file (docs/model-format.md) for the hypotheses");
  app.add_option("--probe", probe_path, "`simreplay probe storage` document: the read ceiling (docs/probe-format.md)");
  app.add_option("--jobs,-j", jobs, "simulations run in parallel (default: CPU count)")->check(CLI::Range(1, 256));
  app.add_option("--relief-factor", factor, "how much faster each relief makes its resource (default 2)")
      ->check(CLI::Range(1.01, 100.0));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  const bool trace_form = IsTrace(inputs.front());
  if (!trace_form && inputs.size() > 1) {
    std::fprintf(stderr, "%s: %s is not a trace, so it must be the only input (a scenario)\n", kDiagnoseVerb,
                 inputs.front().c_str());
    return kExitUsage;
  }
  if (trace_form && !trace_path.empty()) {
    std::fprintf(stderr, "%s: --trace is for the scenario form; the traces are the inputs\n", kDiagnoseVerb);
    return kExitUsage;
  }
  if (!trace_form && !model_path.empty()) {
    std::fprintf(stderr, "%s: --model is for the trace form; a scenario names its model\n", kDiagnoseVerb);
    return kExitUsage;
  }
  std::optional<advise::StorageProbeFits> probe;
  if (!probe_path.empty()) {
    auto p = ReadProbe(probe_path);
    if (!p.ok()) return Fail(kDiagnoseVerb, p.status());
    probe = std::move(*p);
  }
  advise::ObserveOptions observe;
  observe.storage_probe = probe ? &*probe : nullptr;

  std::optional<scenarios::Scenario> scenario;
  std::string source = inputs.front();
  if (!trace_form) {
    auto json = scenarios::LoadScenarioJson(source);
    if (!json.ok()) return Fail(kDiagnoseVerb, json.status());
    auto parsed = scenarios::ParseScenario(*json, source, scenarios::DirectoryOf(source));
    if (!parsed.ok()) return Fail(kDiagnoseVerb, parsed.status());
    scenario = std::move(*parsed);
    observe.horizon = {scenario->train.steps, scenario->train.epochs, scenario->train.dataset_samples,
                       "scenario " + source};
  }

  std::vector<std::string> traces = inputs;
  std::optional<advise::CausalProfile> profile;
  auto run_profile = [&]() -> Status {
    sim::CostCache cache;
    advise::ProfileOptions options;
    options.factor = factor;
    options.jobs = jobs;
    const bool tty = StderrIsTty();
    options.on_progress = [tty](size_t done, size_t total) {
      if (tty) std::fprintf(stderr, "\r  diagnosing: %zu/%zu simulations", done, total);
    };
    auto p = advise::ProfileScenario(*scenario, options, &cache);
    if (tty) std::fprintf(stderr, "\n");
    if (!p.ok()) return p.status();
    profile = std::move(*p);
    return Status::Ok();
  };
  if (!trace_form) {
    Status s = run_profile();
    if (!s.ok()) return Fail(kDiagnoseVerb, s);
    traces = {trace_path.empty() ? profile->trace_path : trace_path};
  }
  auto observed = advise::ObserveTraces(traces, observe);
  if (!observed.ok()) return Fail(kDiagnoseVerb, observed.status());
  if (trace_form && !model_path.empty()) {
    auto built = ScenarioFromTrace(traces.front(), model_path, observed->steps);
    if (!built.ok()) return Fail(kDiagnoseVerb, built.status());
    scenario = std::move(*built);
    Status s = run_profile();
    if (!s.ok()) return Fail(kDiagnoseVerb, s);
  }

  const advise::Diagnosis diagnosis =
      profile ? advise::MakeDiagnosis(source, std::move(*observed), std::move(*profile))
              : advise::MakeObservedDiagnosis(source, std::move(*observed));
  if (!out_dir.empty()) {
    Status s = MakeDirectories(out_dir);
    if (s.ok()) s = WriteFileAtomically(out_dir + "/diagnosis.json", advise::DiagnosisJson(diagnosis).dump(2) + "\n");
    if (s.ok()) s = WriteFileAtomically(out_dir + "/report.html", advise::DiagnosisHtml(diagnosis));
    if (!s.ok()) return Fail(kDiagnoseVerb, s);
  }
  std::fputs(advise::DiagnosisText(diagnosis).c_str(), stdout);
  std::fflush(stdout);
  for (const auto& w : diagnosis.profile.base_warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  if (!out_dir.empty()) std::printf("wrote %s/diagnosis.json and %s/report.html\n", out_dir.c_str(), out_dir.c_str());
  return kExitOk;
}

}  // namespace

SIMREPLAY_REGISTER_VERB("diagnose", "where the time goes: observed breakdown + simulated reliefs, critical resource",
                        RunDiagnose);

}  // namespace simreplay::cli
