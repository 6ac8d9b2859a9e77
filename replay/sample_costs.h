// The per-sample costs a simulation replays, extracted from one or more traces in a fixed order, plus
// the trace-level facts the simulator and the reports need (manifest, measured batch and step stats).
// Costs are seconds and bytes. Traces without per-sample records (Kineto imports) yield one synthetic
// unsplit sample per recorded batch slot: the batch's load time spread evenly over its samples.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "replay/manifest.h"

namespace simreplay::replay {

struct SampleCost {
  double read_s = 0;
  double decode_s = 0;
  double augment_s = 0;
  int64_t read_bytes = 0;
  int64_t out_bytes = 0;
  int32_t format_id = 0;  // index into SampleCostTable::formats
  bool unsplit = false;
  // Decoded shape as recorded (frames = 1 for an image, 0 when unknown): the media what-ifs
  // (models/media_synth.h) scale these.
  int64_t width = 0;
  int64_t height = 0;
  int64_t frames = 0;
};

// What was measured in the traces, for replay defaults and predicted-vs-measured reports.
struct MeasuredRun {
  int64_t samples = 0;  // samples delivered to the training loop (sum of batch sizes)
  int64_t batches = 0;
  double wall_s = 0;  // replay/run_window.h: first iter() to the last step end
  double mean_wait_s = 0;
  double mean_collate_per_sample_s = -1;  // -1: unknown
  double mean_pin_bytes_per_s = -1;
  double mean_h2d_bytes_per_s = -1;
  double mean_step_compute_s = -1;  // per micro-batch
  double mean_comm_s = 0;
  int64_t mean_batch_size = 0;
  int64_t max_worker_pss_bytes = 0;
  int64_t max_main_rss_bytes = 0;
  int64_t peak_host_mem_bytes = 0;
};

struct SampleCostTable {
  std::vector<SampleCost> samples;  // in (rank, epoch, batch, index) order
  std::vector<std::string> formats;
  int64_t distinct_indices = 0;
  nlohmann::json manifest = nlohmann::json::object();  // first trace's manifest
  MeasuredRun measured;
  std::vector<std::string> warnings;
  // Scenario inputs these costs were synthesised beyond the measured range for (typed: the planner
  // widens intervals from this, never from the warnings' text).
  std::vector<std::string> extrapolated;
};

// What the replay takes out of the recorded costs: each worker lifetime's warm-up excess over its first
// `window` samples (replay/lifetime_warmup.h), priced with the calibration's steady costs per unit
// (none: the traces' own), out of those samples' decode and augment costs in proportion. The model
// charges that excess at every predicted worker start (cpu.recorded_warmup_samples, docs/model-format.md).
struct RecordedWarmup {
  int window = 0;  // 0: the recorded costs as they are
  std::map<std::string, double> steady_cpu_s_per_unit;
};

// Reads every trace (streaming) and builds the table. Fails when a trace is invalid or has neither
// sample records nor batch records with a known size.
Result<SampleCostTable> LoadSampleCosts(const std::vector<std::string>& trace_paths,
                                        const RecordedWarmup& warmup = {});

}  // namespace simreplay::replay
