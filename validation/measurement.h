// What one real run measured: its metrics (from the run's summary JSON, warm-up steps excluded, plus
// the process-tree memory peak from its trace) and the facts of its trace needed for correctness
// checks (content hashes and delivery order of the samples that reached the training loop).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace simreplay::validation {

// Metric keys shared by measured runs, predictions and the comparison, in report order.
inline constexpr const char* kTrainThroughput = "train_throughput_samples_per_s";
inline constexpr const char* kPipelineThroughput = "pipeline_throughput_samples_per_s";
inline constexpr const char* kGpuIdle = "gpu_idle_fraction";
inline constexpr const char* kWaitMean = "data_wait_mean_s";
inline constexpr const char* kWaitP95 = "data_wait_p95_s";
inline constexpr const char* kFirstBatch = "time_to_first_batch_s";
inline constexpr const char* kPeakMemory = "peak_host_memory_bytes";
const std::vector<std::string>& MetricNames();
// True for fractions (errors in percentage points), false for quantities (errors in %).
bool MetricIsFraction(const std::string& metric);

// Facts of a trace for the correctness checks, restricted to delivered batches (prefetched samples of
// batches that never reached the loop depend on the prefetch depth and are left out).
struct TraceFacts {
  std::map<std::pair<int64_t, int64_t>, std::string> hash_by_epoch_index;  // (epoch, index) -> hash
  std::vector<std::vector<int64_t>> order_by_epoch;  // delivered dataset indices, in delivery order
  int64_t samples_without_hash = 0;
  // Peak over the 2 Hz resource samples of main-process RSS + every worker's PSS: the definition the
  // model's memory parameters and the simulator's peak_host_memory_bytes use. 0 when not recorded.
  double peak_process_memory_bytes = 0;
  // Mean thread CPU time of one delivered sample's __getitem__ (sample cpu_ns): the intrinsic loading
  // cost, insensitive to contention. -1 when not recorded.
  double sample_cpu_s = -1;
  // Mean wall time of one delivered sample's __getitem__ (contention included). -1 when not recorded.
  double sample_wall_s = -1;
  // Mean minor page faults of one delivered sample's __getitem__ (sample minflt): the allocator churn
  // of the run (docs/modelling.md, "Page-fault churn"). -1 when not recorded.
  double sample_minflt = -1;
  // Busy fraction of all host cores over the trace (host records: cpu_busy_ns; other tenants included).
  // -1 when fewer than two host records.
  double host_cpu_busy_fraction = -1;
  nlohmann::json manifest = nlohmann::json::object();
};

Result<TraceFacts> ReadTraceFacts(const std::string& trace_path);

// A run's measured metrics. Absent keys were not measured (gpu idle of a pipeline-only run).
struct RunMetrics {
  std::map<std::string, double> values;
  double host_mem_used_peak_bytes = 0;  // host-wide (other tenants included): context, not compared
  double cpu_s_per_sample = -1;
};

// Reads the bench summary (docs/capture.md, --summary-json) of a run of `kind` ("train" or "pipeline")
// and adds the trace's process-tree memory peak. A train run gives the train throughput, a pipeline run
// the pipeline throughput.
Result<RunMetrics> ReadRunMetrics(const std::string& summary_path, const std::string& kind, const TraceFacts* facts);

// Outcome of one correctness check between two runs.
struct SampleCheck {
  std::string kind;  // "content" (same hash per (epoch, index)), "order" (same delivery order), "repeat"
  std::string a, b;  // what was compared (case names or run ids)
  int64_t compared = 0;
  int64_t mismatched = 0;
  bool pass = false;
  std::string detail;
  nlohmann::json ToJson() const;
};

// Content hashes of the samples both runs delivered. Fails (pass=false) when nothing could be compared.
SampleCheck CompareContent(const TraceFacts& a, const TraceFacts& b);
// Delivered index sequences epoch by epoch, over the shorter run's length; `max_epochs` < 0: all.
SampleCheck CompareOrder(const TraceFacts& a, const TraceFacts& b, int max_epochs);

}  // namespace simreplay::validation
