// A scenario: which measured costs and model to use, the DataLoader and hardware configuration, how
// long to train, and optional sweep axes (docs/scenario-format.md). One validating loader; relative
// paths resolve against the scenario file's directory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/paths.h"
#include "common/status.h"

namespace simreplay::scenarios {

struct LoaderConfig {
  int num_workers = 0;
  int batch_size = 1;
  int prefetch_factor = 2;
  bool pin_memory = false;
  bool persistent_workers = false;
  bool drop_last = false;
  bool shuffle = false;
};

struct HardwareConfig {
  int cpu_cores = 0;               // 0: the cores recorded in the trace's manifest, else 8
  int gpus = 1;                    // GPU ranks on the node, one DataLoader each
  double background_threads = -1;  // busy cores taken by other processes; < 0: the model's value
};

struct TrainConfig {
  int64_t steps = 0;            // optimizer steps; 0 = use epochs
  int64_t epochs = 0;           // full passes over the dataset; used when steps == 0
  double step_time_s = -1;      // >= 0 overrides the model's GPU step time (one micro-batch)
  int grad_accum = 1;           // micro-batches per optimizer step
  int64_t dataset_samples = 0;  // samples per epoch (all ranks); 0 = distinct samples in the trace
};

struct Scenario {
  std::string path;        // the file it came from ("" for inline)
  std::string model_path;  // resolved; may be empty
  std::string trace_path;  // resolved; may be empty (then the model's trace)
  LoaderConfig loader;
  HardwareConfig hardware;
  TrainConfig train;
  std::string data_format;                 // container to simulate (files, tar, lmdb, hdf5); "" = as captured
  std::string replay_order = "recorded";   // recorded | shuffled
  std::string replay_fidelity = "sample";  // sample: one activity per sample stage; batch: per batch
  uint64_t seed = 0;
  int64_t timeline_max_events = 200000;
  nlohmann::json resolved;  // the scenario as simulated (no sweep), for result.json
};

// One point of a sweep: the axis values that produced it and the scenario.
struct SweepPoint {
  std::vector<std::pair<std::string, nlohmann::json>> axes;
  Scenario scenario;
};

// Loads, validates and resolves a scenario file.
Result<nlohmann::json> LoadScenarioJson(const std::string& path);
// Parses a scenario object (no "sweep" expansion). `base_dir` resolves relative paths.
Result<Scenario> ParseScenario(const nlohmann::json& json, const std::string& where, const std::string& base_dir);
// Expands "sweep" axes into their cartesian product in axis-declaration order, last axis fastest.
// Without "sweep", one point with no axes.
Result<std::vector<SweepPoint>> ExpandSweep(const nlohmann::json& json, const std::string& where,
                                            const std::string& base_dir);
// Directory part of a path ("." when none): the project's one definition (common/paths.h).
using ::simreplay::DirectoryOf;

}  // namespace simreplay::scenarios
