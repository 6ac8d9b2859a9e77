// Separating the intrinsic per-sample CPU cost from the CPU contention a trace was captured under.
//
// A trace's decode_ns/augment_ns are wall times. When W workers + the main process (+ anything else on
// the host) want more cores than the C the machine has, each runnable thread gets only a share of a
// core and its recorded wall times are inflated. The simulator runs every CPU cost as a SimGrid
// execution on a C-core host shared fairly by all simulated processes, so it applies the loader's own
// contention itself; feeding it inflated costs would apply that contention twice.
//
// Method (docs/model-format.md, "Calibration method"):
//  1. Per sample with the optional cpu_ns (thread CPU time of the whole __getitem__), the CPU spent in
//     decode+augment is cpu_ns x (decode+augment) / (read+decode+augment), capped at decode+augment.
//     intrinsic_scale = sum(that CPU) / sum(decode+augment wall). It is the share of a core the loader
//     threads actually got; cpu.worker_cost_scale = intrinsic_scale, so recorded x scale = intrinsic.
//  2. Without cpu_ns: fair share assumed, intrinsic_scale = min(1, C / N) with N the time-averaged
//     number of busy loader threads (assumed, no background load), flagged as such.
//  3. N = (sum of decode+augment+collate wall over all samples) / run wall time. When the measured
//     share is below what the loader alone explains (C / N), the rest is other load on the host:
//     background_threads = C / share - N (0 when the cores were not saturated).
//  4. as_captured_scale = min(1, C / N): the scale that makes the simulator, which will itself slow the
//     N loader threads to C / N, reproduce the recorded wall times. It is what a self-check of the
//     captured configuration must use while the simulator does not model background load.
//  5. Work outside the recorded stages: the simulator runs only decode+augment (x scale) and collate
//     per sample/batch, but a worker also spends CPU between and around samples (fetch loop, tensor
//     building, capture bookkeeping, task receipt, result pickling, decoder threads). Preferred
//     measure: worker process CPU / recorded stage CPU over the worker records' windows (CPU time is
//     not inflated by waiting for a core). Fallback without enough worker records: per batch, batch
//     span minus recorded stages plus the gaps between a worker's batches (wall time: overstated on
//     oversubscribed captures, where waiting for a core looks like overhead). Reported as
//     overhead_factor (worker CPU / stage CPU) and given to the simulator as seconds per sample,
//     overhead_per_sample_s, added to every sample a worker loads: the work it stands for (the loop,
//     pickling a fixed-size result, bookkeeping) does not grow with the sample's decode cost, so it is
//     not folded into the scales (until 2026-12-02 it was, and a what-if with 4x the pixels per image
//     was charged twice the overhead: docs/validation-log.md, "What-if runs").
//  6. Where the worker records hold the main thread's CPU too, the part of the overhead off the main
//     threads is split out: the result queue's feeder, which pickles each batch's tensors into shared
//     memory while the worker loads the next batch, per byte of the tensors (send_s_per_byte ->
//     cpu.worker_send_s_per_byte, run on a send thread beside the worker) and per sample (what
//     calibration takes off overhead_per_sample_s; docs/modelling.md, "The worker's send thread").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace simreplay::calibrate {

struct ContentionSample {
  double read_s = 0;
  double cpu_stage_s = 0;  // decode + augment wall time
  double cpu_ns_s = -1;    // thread CPU time of the call, seconds; -1 when not recorded
};

struct ContentionInput {
  std::vector<ContentionSample> samples;
  double collate_s = 0;                        // sum of collate wall time over all batches
  int workers = 0;                             // num_workers of the captured loader
  int cores = 0;                               // cores of the captured machine; 0 = unknown
  double run_wall_s = 0;                       // wall time of the run (loader start to last step end)
  std::vector<double> worker_cpu_utilization;  // per worker pid: delta cpu_ns / delta t (worker records)
  // Worker time per batch spent outside the recorded stages and collate (the fetch loop, tensor
  // building, capture bookkeeping, receiving the task and sending the result), seconds; and the
  // recorded decode+augment+collate per batch it is compared with. 0 / 0 when unknown.
  double worker_overhead_per_batch_s = 0;
  double cpu_work_per_batch_s = 0;
  // CPU-time view of the same overhead, from worker records: the workers' process CPU (all threads)
  // over their record windows, and the recorded stages' CPU (cpu_ns, collate) inside those windows.
  // Contention cannot inflate it (waiting for a core is not CPU time), so it is preferred when known.
  double worker_process_cpu_s = 0;
  double worker_stage_cpu_s = 0;
  int64_t worker_window_samples = 0;  // samples recorded inside those windows
  // The workers' main-thread CPU over the same windows (method 6), and the tensor bytes of the samples
  // in them; 0 when any window lacks the main thread's CPU (no split).
  double worker_main_thread_cpu_s = 0;
  double worker_window_out_bytes = 0;
};

struct ContentionEstimate {
  double intrinsic_scale = 1.0;          // -> cpu.worker_cost_scale
  double observed_core_share = 1.0;      // share of a core a busy loader thread got (method 1)
  double busy_loader_threads = 0;        // N
  double background_threads = 0;         // other runnable threads on the host (method 3)
  double as_captured_scale = 1.0;        // method 4
  double overhead_factor = 1.0;          // method 5: worker CPU / recorded stage CPU (reported)
  double overhead_per_sample_s = 0;      // method 5: -> cpu.worker_overhead_per_sample_s
  double send_s_per_byte = 0;            // method 6: -> cpu.worker_send_s_per_byte (0: not split)
  double send_per_sample_s = 0;          // method 6: the same per sample, part of overhead_per_sample_s
  std::string overhead_method = "none";  // worker_process_cpu | batch_span_wall | none
  int64_t samples_with_cpu = 0;
  std::string method;  // "cpu_ns" | "fair_share_assumed" | "none"
  bool assumed = false;
  std::vector<std::string> notes;
  double worker_cpu_utilization_median = -1;  // cross-check from worker records; -1 = none

  nlohmann::json ToJson() const;
};

ContentionEstimate EstimateContention(const ContentionInput& input);

}  // namespace simreplay::calibrate
