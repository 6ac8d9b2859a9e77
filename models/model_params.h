// Parameters of the component models the simulator runs: CPU, storage, memory, PCIe, GPU step,
// collectives and the probed cluster links. Plain data with defaults in the declarations; every field carries its unit. The model
// file (docs/model-format.md) is loaded by LoadModelFile; each parameter may be written as a bare
// number or as {"value": x, "assumed": bool, "source": "..."}, and the provenance is kept.
#pragma once

#include <algorithm>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace simreplay::models {

inline constexpr const char* kModelSchema = "simreplay.model/1";

struct CpuParams {
  double core_speed_scale = 1.0;   // target core speed / speed of the core the trace was taken on
  double worker_cost_scale = 1.0;  // per-sample CPU cost in a worker = recorded cost x this (de-contention)
  // The part of worker_cost_scale that is worker-process overhead (IPC, pickling into shared memory,
  // the worker loop): loading inline in the main process (num_workers=0) costs recorded x
  // worker_cost_scale / worker_overhead_factor. Models calibrated before 2026-12-02 only; newer ones
  // hold 1 here and the overhead in worker_overhead_per_sample_s.
  double worker_overhead_factor = 1.0;
  // Worker CPU per sample outside the recorded stages (fetch loop, pickling the result into shared
  // memory, capture bookkeeping), intrinsic seconds: added to every sample a worker loads, whatever its
  // decode cost (it does not grow with the image; docs/model-format.md, "Calibration method" 4).
  double worker_overhead_per_sample_s = 0;
  // The worker's send thread (the result queue's feeder, pickling each batch's tensors into shared
  // memory) per byte of the batch's tensors: it runs beside the worker's next batch on the node's
  // cores, and the batch reaches the main process when it is done. 0 = folded into the overhead above.
  double worker_send_s_per_byte = 0;
  double main_per_batch_s = 0.0005;    // main process per batch: unpickle, rebuild tensors, loop overhead
  double pin_bytes_per_s = 4e9;        // pin thread copy speed into page-locked memory
  double worker_startup_s = 0.08;      // one worker: fork + import + worker_init_fn, paid at (re)start
  double worker_spawn_s = 0.01;        // main process, per worker started (serial)
  double worker_resume_s = 0.002;      // persistent workers: per-epoch resume handshake
  double worker_shutdown_s = 0;        // main process, per worker joined at the end of a non-persistent epoch
  // Extra CPU a fresh worker process spends on its first samples (first decodes, allocator growth,
  // lazily set-up codecs), per worker start, beyond what the same samples cost it later.
  double worker_warmup_cpu_s = 0;
  // The samples that excess is spread over, evenly, from a process's first: a process that loads fewer
  // pays that share of it. 0: all of it at the start, before the first sample (model files before
  // 2026-12-06).
  double worker_warmup_samples = 0;
  // The share of worker_warmup_cpu_s a process pays on its first sample, the rest spread over the
  // window: a fresh process's first decode sets up codecs and libraries (about 70 ms of a 150-200 ms
  // excess in the bench's captures). 0: all of it spread (model files before 2026-12-06 evening).
  double worker_warmup_first_share = 0;
  // The replay takes each captured worker lifetime's own warm-up excess out of the recorded costs of
  // its first this-many samples (replay/lifetime_warmup.h), since worker_warmup_cpu_s charges it again
  // where the predicted workers start. 0: the recorded costs as they are (model files before
  // 2026-12-06 evening, whose worker_cost_scale took the excess off every sample instead).
  double recorded_warmup_samples = 0;
  double collate_per_sample_s = 2e-5;  // used when the trace has no collate time
  double background_threads = 0;       // CPU demand of other processes on the node, in busy cores
  // Shared-core slowdown (SMT siblings, shared caches and memory bandwidth): with m of the C cores
  // busy, every execution runs at speed / (1 + busy_core_slowdown x (m - 1) / (C - 1)).
  double busy_core_slowdown = 0;
  // Oversubscription overhead (context switches, caches refilled after each switch): with n > C
  // executions runnable, every one is further slowed by (1 + oversubscription_overhead x (n - C) / C).
  // Fitted to a measured contention curve (simreplay_capture.probe_cpu, docs/probe-cpu.md).
  double oversubscription_overhead = 0;
  // Scheduler wake-up delay: a thread that blocked (the training loop in its step, or in next()) runs
  // again wakeup_delay_s + wakeup_delay_per_excess_s x max(0, n + 1 - C) after it could, with n CPU
  // executions running on the node's C cores. Measured by the CPU probe (docs/probe-cpu.md); 0 otherwise.
  double wakeup_delay_s = 0;
  double wakeup_delay_per_excess_s = 0;
  // Share of a worker's per-sample CPU spent faulting in fresh pages (allocator churn), measured from
  // the capture's per-sample page faults (models/page_fault_churn.h); in [0, 0.95]. The simulator
  // runs the costs as captured, churn included (inline loading pays its own: inline_page_fault_ratio);
  // advice simulates the share taken off (a tuned allocator) as a change the user can make.
  double page_fault_cpu_share = 0;
  // Page faults per sample of the main process loading inline (num_workers = 0) over those of the
  // captured workers, from the CPU probe's inline point: inline loading costs the worker cost x
  // InlineCostFactor (models/page_fault_churn.h). 1 = the same churn (no probe, or a capture loaded inline).
  double inline_page_fault_ratio = 1;
};

// The scheduler wake-up delay d(n) = base_s + per_excess_s x max(0, n + 1 - C) of a thread that blocked,
// with n CPU executions running beside it on C cores (CpuParams::wakeup_delay_*).
inline double WakeupDelayS(double base_s, double per_excess_s, double running, int cores) {
  const double excess = running + 1 - (cores > 1 ? cores : 1);
  return base_s + per_excess_s * (excess > 0 ? excess : 0);
}
inline double WakeupDelayS(const CpuParams& cpu, double running, int cores) {
  return WakeupDelayS(cpu.wakeup_delay_s, cpu.wakeup_delay_per_excess_s, running, cores);
}

// The capacity, in cores, of C cores with n CPU executions runnable (CpuParams::busy_core_slowdown,
// oversubscription_overhead): min(n, C) busy cores, each execution's cost multiplied by the shared-core
// slowdown and then by the oversubscription overhead beyond C. Every execution is still capped at one core.
inline double CoreCapacity(const CpuParams& cpu, int cores, int runnable) {
  const int busy = std::min(std::max(runnable, 1), cores);
  const double shared = cores > 1 ? 1.0 + cpu.busy_core_slowdown * (busy - 1) / (cores - 1) : 1.0;
  const double switching = 1.0 + cpu.oversubscription_overhead * std::max(0, runnable - cores) / cores;
  return busy / (shared * switching);
}

struct StorageParams {
  // "recorded": each read takes its recorded read time (page cache and device as captured).
  // "model": latency + bytes / bandwidth on a shared device with a concurrency cap.
  std::string mode = "recorded";
  double bandwidth_bytes_per_s = 2e9;
  double latency_s = 100e-6;
  int max_concurrency = 64;
  double page_cache_hit_ratio = 0.0;
  double page_cache_bytes_per_s = 8e9;
};

struct MemoryParams {
  double main_base_bytes = 600e6;        // main process resident set before loading
  double worker_base_pss_bytes = 120e6;  // one worker's proportional set (copy-on-write shared pages split)
  double batch_bytes_scale = 1.0;        // resident bytes per queued batch / its tensor bytes
  double capacity_bytes = 0;             // host memory; 0 = unknown (no out-of-memory check)
};

struct PcieParams {
  double h2d_pinned_bytes_per_s = 24e9;    // PCIe 4.0 x16 effective, pinned source
  double h2d_pageable_bytes_per_s = 10e9;  // pageable source (staged through a bounce buffer)
  double latency_s = 10e-6;
};

struct GpuParams {
  double step_time_s = 0.05;              // one micro-batch's forward+backward(+optimizer) on the accelerator
  std::string distribution = "constant";  // constant | normal | lognormal
  double step_cv = 0.0;                   // coefficient of variation for normal/lognormal
  int measured_batch_size = 0;            // batch size step_time_s was measured at; 0 = unknown (no scaling)
  // Measured at two or more batch sizes: step = step_intercept_s + step_per_sample_s x batch_size
  // replaces the proportional scaling of step_time_s (used when step_per_sample_s > 0).
  double step_intercept_s = 0;
  double step_per_sample_s = 0;
  std::string accelerator = "emulated";  // "cuda" when measured on a real GPU
  // Host CPU seconds of the training loop's thread per micro-batch, run on the node's cores before the
  // accelerator part (step_time_s) and slowed by what else runs there. Set from an emulated step only
  // (there the loop's CPU work is serial with the step; on a GPU the launches overlap the device).
  double step_host_cpu_s = 0;
  // Extra host CPU seconds of the loop thread in the first step after it forks DataLoader workers (at a
  // non-persistent epoch start): the copy-on-write faults of the pages the step writes, shared with the
  // children until then. Emulated steps only, like step_host_cpu_s.
  double step_host_cpu_after_fork_s = 0;
};

struct CollectiveParams {
  double time_per_step_s = 0.0;    // all-reduce time per optimizer step when > 0 (overrides alpha-beta)
  double alpha_s = 20e-6;          // per-message latency
  double bus_bytes_per_s = 100e9;  // algorithm bandwidth
  double gradient_bytes = 0.0;     // bytes all-reduced per optimizer step; 0 = no collective
  // Host CPU seconds a rank spends per byte it sends (busbw bytes: 2(n-1)/n x S for an all-reduce):
  // gloo's reductions and copies and the kernel's TCP work, run on the node's cores during the
  // transfer. 0 for GPU collectives (NCCL moves and reduces on the device).
  double cpu_s_per_bus_byte = 0.0;
};

// The cluster links a network probe measured (`calibrate --network-probe`, docs/modelling.md "Cluster
// links"): what a cluster scenario's NICs run at unless it states a rate. A ring all-reduce on one NIC
// per node sends 2(n-1)/n x S through every NIC, so the probe's bus bandwidth is the achieved rate of
// one link; a ring step crosses two NICs (sender's, receiver's), so one NIC's latency is alpha_s / 2.
// link_bytes_per_s = 0: no probe reached the model.
struct ProbedNetwork {
  double link_bytes_per_s = 0;          // achieved, per link and direction
  double link_latency_s = 0;            // per NIC (a step between two nodes crosses two)
  double nominal_link_bytes_per_s = 0;  // the probed link's stated rate (tc rate / 8); 0 = unknown
  double ranks = 0;                     // the probe's topology: ranks and nodes it ran across
  double nodes = 0;
  bool probed() const { return link_bytes_per_s > 0; }
};

// One parameter's provenance: whether it was measured, and from what.
struct ParamInfo {
  bool assumed = true;
  std::string source = "default";
};

struct ModelParams {
  CpuParams cpu;
  StorageParams storage;
  MemoryParams memory;
  PcieParams pcie;
  GpuParams gpu;
  CollectiveParams collective;
  ProbedNetwork network;
  std::string trace_path;                 // optional: per-sample costs to replay (resolved against the model file)
  // Format -> thread CPU seconds per unit (pixels x frames) of a sample past a worker's warm-up window:
  // the steady costs calibrate priced the warm-up excess with; the replay prices each recorded
  // lifetime's excess with them (cpu.recorded_warmup_samples). Empty: the trace's own.
  std::map<std::string, double> warmup_steady_cpu_s_per_unit;
  std::map<std::string, ParamInfo> info;  // "cpu.main_per_batch_s" -> provenance; absent = default
  nlohmann::json extra = nlohmann::json::object();  // fit quality, provenance, formats: kept verbatim

  // Collective time of one optimizer step across `ranks` (ring all-reduce when alpha-beta is used).
  double CollectiveTimeS(int ranks) const;
};

// Loads and validates a model file. Errors are "FILE:LINE: message" or "FILE: field: message".
Result<ModelParams> LoadModelFile(const std::string& path);
// Parses a model from JSON (`where` names its origin in errors). Missing sections keep defaults.
Result<ModelParams> ParseModel(const nlohmann::json& json, const std::string& where);
// The model as JSON, every parameter as {"value","assumed","source"}, in a fixed key order.
nlohmann::json ModelToJson(const ModelParams& model);

}  // namespace simreplay::models
