#include "sim/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "common/quantile.h"

namespace simreplay::sim {

double Round9(double value) {
  if (!std::isfinite(value)) return 0.0;
  return std::stod(fmt::format("{:.9g}", value));
}

nlohmann::json Distribution(std::vector<double> values) {
  if (values.empty()) return {{"mean", 0.0}, {"p50", 0.0}, {"p95", 0.0}, {"p99", 0.0}, {"max", 0.0}};
  std::sort(values.begin(), values.end());
  auto percentile = [&](double p) { return SortedQuantileLinear(values, p); };
  double mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  return {{"mean", Round9(mean)},
          {"p50", Round9(percentile(0.50))},
          {"p95", Round9(percentile(0.95))},
          {"p99", Round9(percentile(0.99))},
          {"max", Round9(values.back())}};
}

Bottleneck FindBottleneck(const SimInput& input, const SimRawStats& s) {
  const double T = std::max(s.makespan_s, 1e-12);
  const int ranks = input.scenario.hardware.gpus;
  const int workers = input.scenario.loader.num_workers;
  const double gpu_busy = s.gpu_busy_s / (ranks * T);
  const double cpu_util = s.cpu_busy_core_s / (input.cpu_cores * T);
  const double storage_busy = s.storage_busy_s / T;
  const double collective = s.collective_s / (ranks * T);
  const double h2d = s.h2d_s / (ranks * T);
  const double main_busy = s.main_busy_s / (ranks * T);
  const double pin_busy = s.pin_busy_s / (ranks * T);
  const double worker_busy = workers > 0 ? s.worker_busy_s / (s.worker_count * T) : 0.0;
  auto pct = [](double f) { return fmt::format("{:.1f}%", 100 * f); };
  if (gpu_busy >= 0.9) {
    return {"gpu_compute", "GPU busy " + pct(gpu_busy) + " of the run: the input pipeline keeps up"};
  }
  std::string idle = "GPU idle " + pct(1 - gpu_busy) + "; ";
  if (collective >= 0.25 && collective >= h2d) {
    return {"collective",
            idle + "ranks spend " + pct(collective) + " in barrier + all-reduce (slowest rank sets the pace)"};
  }
  if (cpu_util >= 0.85) {
    return {"cpu", idle + "CPU cores " + pct(cpu_util) + " busy on " + std::to_string(input.cpu_cores) +
                       " cores: decode/augment is CPU-bound; more workers will not help, faster or more cores will"};
  }
  if (input.model.storage.mode == "model" && storage_busy >= 0.85) {
    return {"storage", idle + "storage busy " + pct(storage_busy) + " of the run"};
  }
  if (workers == 0) {
    return {"main_process_loading",
            idle + "num_workers=0: the training loop loads every batch itself (" + pct(main_busy) + " of the run)"};
  }
  if (pin_busy >= 0.85) return {"pin_memory", idle + "pin thread busy " + pct(pin_busy)};
  if (main_busy >= 0.5) return {"main_process", idle + "main process busy " + pct(main_busy) + " receiving batches"};
  if (h2d >= 0.3) return {"h2d", idle + "host-to-device copies take " + pct(h2d) + " of the run"};
  const double restart = (s.time_to_first_batch_s + s.epoch_boundary_stall_s) / T;
  if (restart >= 0.2) {
    return {
        "epoch_restarts",
        idle + fmt::format(
                   "{} of the run waits for the first batch of an epoch (start-up {:.3f} s, "
                   "later epochs {:.3f} s){}",
                   pct(restart), s.time_to_first_batch_s, s.epoch_boundary_stall_s,
                   input.scenario.loader.persistent_workers ? "" : ": persistent_workers=true avoids the restarts")};
  }
  if (worker_busy >= 0.8) {
    return {"workers", idle + "each worker busy " + pct(worker_busy) + " with CPU " + pct(cpu_util) +
                           " used: too few workers for the step time"};
  }
  if (gpu_busy < 0.5 && worker_busy < 0.5) {
    return {"startup_or_latency", idle + "workers busy only " + pct(worker_busy) +
                                      ": time goes to worker start-up, epoch boundaries or head-of-line waits"};
  }
  return {"balanced",
          idle + "no single stage above its threshold (workers " + pct(worker_busy) + ", CPU " + pct(cpu_util) + ")"};
}

nlohmann::json SummarizeMetrics(const SimInput& input, const SimRawStats& full) {
  const double T = std::max(full.makespan_s, 1e-12);
  const int ranks = input.scenario.hardware.gpus;
  Bottleneck bottleneck = FindBottleneck(input, full);
  nlohmann::json m = nlohmann::json::object();
  m["train_throughput_samples_per_s"] = Round9(static_cast<double>(full.samples_consumed) / T);
  m["gpu_idle_fraction"] = Round9(std::clamp(1.0 - full.gpu_busy_s / (ranks * T), 0.0, 1.0));
  m["step_time_s"] = Distribution(full.step_s);
  m["data_wait_s"] = Distribution(full.wait_s);
  m["time_to_first_batch_s"] = Round9(full.time_to_first_batch_s);
  m["epoch_boundary_stall_s"] = Round9(full.epoch_boundary_stall_s);
  m["peak_host_memory_bytes"] = Round9(full.peak_host_memory_bytes);
  m["worker_pss_bytes"] = Round9(input.model.memory.worker_base_pss_bytes);
  m["storage_read_bytes_per_s"] = Round9(static_cast<double>(full.storage_read_bytes) / T);
  m["cpu_utilization"] = Round9(std::min(1.0, full.cpu_busy_core_s / (input.cpu_cores * T)));
  m["h2d_time_s"] = Round9(full.h2d_s);
  m["collective_time_s"] = Round9(full.collective_s);
  m["queue_wait_s"] = Distribution(full.queue_wait_s);
  m["stage_latency_s"] = {{"read", Distribution(full.read_s)},
                          {"decode", Distribution(full.decode_s)},
                          {"augment", Distribution(full.augment_s)}};
  m["simulated_time_s"] = Round9(full.makespan_s);
  m["samples"] = full.samples_consumed;
  m["optimizer_steps"] = static_cast<int64_t>(full.step_s.size());
  m["worker_starts"] = full.worker_starts;
  m["bottleneck"] = {{"stage", bottleneck.stage}, {"evidence", bottleneck.evidence}};
  return m;
}

nlohmann::json RawStatsToJson(const SimRawStats& s) {
  return {{"makespan_s", s.makespan_s},
          {"samples_consumed", s.samples_consumed},
          {"micro_batches", s.micro_batches},
          {"wait_s", s.wait_s},
          {"step_s", s.step_s},
          {"queue_wait_s", s.queue_wait_s},
          {"time_to_first_batch_s", s.time_to_first_batch_s},
          {"epoch_boundary_stall_s", s.epoch_boundary_stall_s},
          {"gpu_busy_s", s.gpu_busy_s},
          {"h2d_s", s.h2d_s},
          {"collective_s", s.collective_s},
          {"cpu_busy_core_s", s.cpu_busy_core_s},
          {"worker_busy_s", s.worker_busy_s},
          {"main_busy_s", s.main_busy_s},
          {"pin_busy_s", s.pin_busy_s},
          {"storage_read_bytes", s.storage_read_bytes},
          {"peak_host_memory_bytes", s.peak_host_memory_bytes},
          {"worker_starts", s.worker_starts}};
}
}  // namespace simreplay::sim
