#include "calibrate/contention.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "calibrate/cost_regression.h"
#include "common/quantile.h"

namespace simreplay::calibrate {

nlohmann::json ContentionEstimate::ToJson() const {
  nlohmann::json j = {{"method", method},
                      {"intrinsic_scale", intrinsic_scale},
                      {"observed_core_share", observed_core_share},
                      {"busy_loader_threads", busy_loader_threads},
                      {"background_threads", background_threads},
                      {"as_captured_scale", as_captured_scale},
                      {"overhead_factor", overhead_factor},
                      {"overhead_per_sample_s", overhead_per_sample_s},
                      {"overhead_method", overhead_method},
                      {"send_s_per_byte", send_s_per_byte},
                      {"send_per_sample_s", send_per_sample_s},
                      {"samples_with_cpu_ns", samples_with_cpu},
                      {"assumed", assumed},
                      {"notes", notes}};
  if (worker_cpu_utilization_median >= 0) j["worker_cpu_utilization_median"] = worker_cpu_utilization_median;
  return j;
}

ContentionEstimate EstimateContention(const ContentionInput& in) {
  ContentionEstimate e;
  double stage_wall = 0, busy_wall = in.collate_s, cpu_in_stage = 0, stage_wall_with_cpu = 0;
  for (const auto& s : in.samples) {
    stage_wall += s.cpu_stage_s;
    busy_wall += s.cpu_stage_s;
    if (s.cpu_ns_s < 0) continue;
    const double wall = s.read_s + s.cpu_stage_s;
    if (wall <= 0) continue;
    cpu_in_stage += std::min(s.cpu_stage_s, s.cpu_ns_s * s.cpu_stage_s / wall);
    stage_wall_with_cpu += s.cpu_stage_s;
    ++e.samples_with_cpu;
  }
  if (!in.worker_cpu_utilization.empty()) {
    e.worker_cpu_utilization_median = QuantileNearestRank(in.worker_cpu_utilization, 0.5);
  }
  e.busy_loader_threads = in.run_wall_s > 0 ? busy_wall / in.run_wall_s : 0;
  const double cores = in.cores > 0 ? in.cores : 0;
  const double loader_share = (cores > 0 && e.busy_loader_threads > cores) ? cores / e.busy_loader_threads : 1.0;
  double overhead_cpu_per_sample_s = -1;  // known directly from process CPU; else from the factor below
  if (in.worker_stage_cpu_s > 0 && in.worker_process_cpu_s > 0) {
    e.overhead_factor = std::clamp(in.worker_process_cpu_s / in.worker_stage_cpu_s, 1.0, 3.0);
    e.overhead_method = "worker_process_cpu";
    e.notes.push_back(
        fmt::format("worker processes used {:.3g} s of CPU where the recorded stages account for {:.3g} s: "
                    "{:.1f}% more, added to every sample a worker loads",
                    in.worker_process_cpu_s, in.worker_stage_cpu_s, 100 * (e.overhead_factor - 1)));
    if (in.worker_window_samples > 0) {
      // The same clamp as the factor's: at most twice the stages' own CPU.
      const double samples = static_cast<double>(in.worker_window_samples);
      const double overhead_cpu = (e.overhead_factor - 1) * in.worker_stage_cpu_s;
      overhead_cpu_per_sample_s = overhead_cpu / samples;
      // Method 6 (reported): the part off the main thread is the send thread's, per byte of the tensors.
      const double off_thread = in.worker_process_cpu_s - in.worker_main_thread_cpu_s;
      if (in.worker_main_thread_cpu_s > 0 && in.worker_window_out_bytes > 0 && off_thread > 0) {
        const double send_cpu = std::min(off_thread, overhead_cpu);
        e.send_s_per_byte = send_cpu / in.worker_window_out_bytes;
        e.send_per_sample_s = send_cpu / samples;
        e.notes.push_back(fmt::format(
            "{:.3g} s of it ran off the workers' main threads (the result queue's feeder pickling batches into "
            "shared memory): {:.3g} ns per tensor byte, run on a send thread beside the worker",
            send_cpu, 1e9 * e.send_s_per_byte));
      }
    }
  } else if (in.cpu_work_per_batch_s > 0 && in.worker_overhead_per_batch_s > 0) {
    e.overhead_method = "batch_span_wall";
    e.overhead_factor = 1.0 + in.worker_overhead_per_batch_s / in.cpu_work_per_batch_s;
    e.notes.push_back(
        fmt::format("workers spend {:.3g} s per batch outside the recorded stages ({:.1f}% of the "
                    "recorded decode+augment+collate): added to every sample a worker loads",
                    in.worker_overhead_per_batch_s, 100 * (e.overhead_factor - 1)));
  }
  e.as_captured_scale = loader_share;
  if (stage_wall <= 0) {
    e.method = "none";
    e.assumed = true;
    e.notes.push_back("no decode/augment time recorded: worker_cost_scale left at 1");
    return e;
  }
  if (in.cores <= 0)
    e.notes.push_back("cores of the captured machine unknown (manifest hardware.cores): background load not estimated");
  if (e.samples_with_cpu > 0 && stage_wall_with_cpu > 0) {
    e.method = "cpu_ns";
    e.observed_core_share = std::clamp(cpu_in_stage / stage_wall_with_cpu, 1e-3, 1.0);
    e.intrinsic_scale = e.observed_core_share;
    if (static_cast<size_t>(e.samples_with_cpu) < in.samples.size()) {
      e.notes.push_back(fmt::format("cpu_ns recorded for {} of {} samples; the rest assumed alike", e.samples_with_cpu,
                                    in.samples.size()));
    }
    if (cores > 0 && e.observed_core_share < loader_share * 0.97) {
      // Saturated cores shared fairly among R runnable threads: share = C / R.
      e.background_threads = std::max(0.0, cores / e.observed_core_share - e.busy_loader_threads);
      e.notes.push_back(fmt::format(
          "loader threads got {:.2f} of a core where the loader alone explains {:.2f}: about {:.1f} other runnable "
          "threads on the host during capture (background load, not part of the intrinsic cost)",
          e.observed_core_share, loader_share, e.background_threads));
    }
  } else {
    e.method = "fair_share_assumed";
    e.assumed = true;
    e.intrinsic_scale = loader_share;
    e.observed_core_share = loader_share;
    e.notes.push_back(
        "no cpu_ns in the trace: intrinsic cost assumes fair sharing of the cores by the loader "
        "threads and no background load");
  }
  // Seconds per sample: measured CPU when known, else the factor's share of the mean recorded work.
  const double samples = static_cast<double>(in.samples.size());
  if (overhead_cpu_per_sample_s >= 0) {
    e.overhead_per_sample_s = overhead_cpu_per_sample_s;
  } else if (samples > 0) {
    e.overhead_per_sample_s = (e.overhead_factor - 1) * e.intrinsic_scale * (stage_wall + in.collate_s) / samples;
  }
  return e;
}

}  // namespace simreplay::calibrate
