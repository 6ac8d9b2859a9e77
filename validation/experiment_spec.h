// An experiment spec (docs/validation-format.md, schema "simreplay.experiment/1"): the real runs to
// make (bench pipeline or any command that writes a trace with the capture package plus a summary),
// the configurations (cases), repetitions, calibration sources, bootstrap settings, CI thresholds and
// deployment/rollback criteria. One validating loader; errors read "FILE:LINE: what was expected, what
// was found" (lines found with JsonLocator).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "validation/statistics.h"

namespace simreplay::validation {

inline constexpr const char* kExperimentSchema = "simreplay.experiment/1";

// One DataLoader + storage configuration of the bench pipeline. The factors an A/B test may vary.
struct BenchConfig {
  int num_workers = 2;
  int batch_size = 8;
  int prefetch_factor = 2;
  bool pin_memory = false;
  bool persistent_workers = false;
  std::string format = "files";  // files | tar | lmdb | hdf5 (bench make-dataset formats)
};

// Names of the factors, in a fixed order: num_workers, batch_size, prefetch_factor, pin_memory,
// persistent_workers, format.
const std::vector<std::string>& FactorNames();
// The factor's value as JSON, or null for an unknown name.
nlohmann::json FactorValue(const BenchConfig& config, const std::string& factor);
// The factors in which a and b differ, in FactorNames() order.
std::vector<std::string> DifferingFactors(const BenchConfig& a, const BenchConfig& b);
// Whether changing `factor` must leave each delivered sample's content unchanged (content hashes are
// then compared). Worker count, batch size and persistent workers move samples between worker
// processes, whose augmentation RNG streams differ, so for them only the sample order is compared.
bool FactorPreservesContent(const std::string& factor);
nlohmann::json BenchConfigToJson(const BenchConfig& config);

struct ExperimentCase {
  std::string name;
  BenchConfig config;
  std::vector<std::string> factors;  // factors that differ from the spec's base ([] for the base itself)
};

// How each real run is made.
struct RunSettings {
  int steps = 60;             // micro-batches per run (the bench's --steps)
  int warmup_steps = 10;      // first steps excluded from every measured metric
  double step_time_s = 0.02;  // emulated accelerator step (sleep) per micro-batch; no GPU here
  int image_size = 96;
  int frames = 4;
  int64_t seed = 0;        // same seed in every run: same shuffle, same augmentation draws per worker
  double timeout_s = 300;  // a run that takes longer is killed and fails the experiment
  // Optional argv template for a command other than the bench. Placeholders: {python} {data} {trace}
  // {summary} {format} {num_workers} {batch_size} {prefetch_factor} {pin_memory} {persistent_workers}
  // {steps} {warmup_steps} {seed} {step_time_s} {pipeline_only} (the last three booleans as 0/1).
  std::vector<std::string> command;
};

struct Thresholds {
  bool enabled = false;  // present in the spec: a failure makes `validate` exit 4
  double median_train_throughput_error_pct = 10;
  double max_gpu_idle_error_pp = 10;
  // Every case's |train throughput error| must stay under this; < 0: no per-case limit (still reported).
  double max_case_train_throughput_error_pct = -1;
  // On the cases the factor changes (measured median outside the calibrating case's interval), the
  // model's median |train throughput error| must beat the persistence baseline's by this many points.
  double beat_persistence_by_pp = 5;
};

struct Criteria {
  double memory_headroom_bytes = 2e9;      // adopt B only if predicted peak host memory of B stays below this
  double rollback_gpu_idle_margin_pp = 5;  // roll back when B's measured GPU idle exceeds A's by more
};

struct ExperimentSpec {
  std::string path;  // spec file
  std::string name;
  std::string description;
  std::string mode = "suite";  // "ab": exactly two cases differing in one factor; "suite": cases vs base
  std::string dataset_dir;     // resolved against the spec's directory; --data overrides
  RunSettings run;
  int repetitions = 5;             // measured runs per case and kind (interleaved)
  int warmup_runs = 1;             // discarded runs per case before the measured ones (page cache, imports)
  bool pipeline_only_runs = true;  // also measure each case with --pipeline-only
  BenchConfig base;
  std::vector<ExperimentCase> cases;
  std::string calibrate_from;       // case whose trace calibrates the model for every other case
  std::string calibrate_alternate;  // case that calibrates the model used to predict calibrate_from
  // calibration.cpu_probe: after the runs, measure the CPU contention curve of the bench dataset
  // (python3 -m simreplay_capture.probe_cpu, docs/probe-cpu.md) into OUT/probe-cpu.json and calibrate
  // every model with it (--cpu-probe). Bench runs only (no run.command).
  struct CpuProbeSettings {
    bool enabled = false;
    double seconds_per_point = 2.0;
    int rounds = 2;
    double max_total_s = 90;
    int max_workers = 0;  // largest k; 0 = the probe's default, 2 x cores
    // make-dataset arguments of ANOTHER bench dataset to probe (built into OUT/probe-data): the probe
    // then measures no case's own configuration (out of sample, docs/validation.md); "{data}" stands
    // for the cases' dataset (e.g. --exclude-sources {data}: no photo in common). Empty: the
    // probe replays the cases' own dataset, and every case at a probed worker count is in sample.
    std::vector<std::string> dataset_args;
  } cpu_probe;
  BootstrapOptions bootstrap;
  Thresholds thresholds;
  Criteria criteria;
  nlohmann::json raw;  // the spec as read, for the report
};

// Loads and validates a spec file. InvalidArgument "FILE:LINE: ..." on bad content, NotFound when the
// file cannot be opened.
Result<ExperimentSpec> LoadExperimentSpec(const std::string& path);
// Same from text (`path` names it in errors and resolves relative paths).
Result<ExperimentSpec> ParseExperimentSpec(const std::string& text, const std::string& path);

const ExperimentCase* FindCase(const ExperimentSpec& spec, const std::string& name);

// The case whose model predicts `case_name`: calibrate_from, or calibrate_alternate for calibrate_from
// itself (a case is never predicted from its own runs).
const std::string& PredictedFrom(const ExperimentSpec& spec, const std::string& case_name);

}  // namespace simreplay::validation
