// In-memory form of the records of trace format v1 (docs/trace-format.md). Field names and units
// follow the spec one to one.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

namespace simreplay::replay {

inline constexpr const char* kTraceSchema = "simreplay.trace/1";

struct TraceHeader {
  nlohmann::json manifest = nlohmann::json::object();
};

struct SampleRecord {
  int64_t rank = 0;
  int64_t epoch = 0;
  int64_t index = 0;
  int64_t batch = 0;
  int64_t worker = 0;  // -1: main process
  int64_t t_start_ns = 0;
  int64_t read_ns = 0;
  int64_t decode_ns = 0;
  int64_t augment_ns = 0;
  int64_t read_bytes = 0;
  int64_t out_bytes = 0;
  std::string format;
  int64_t width = 0;
  int64_t height = 0;
  int64_t frames = 0;
  bool unsplit = false;  // "stages":"unsplit": the whole __getitem__ time is in decode_ns
  int64_t cpu_ns = -1;   // optional: -1 when absent
  // optional: the whole __getitem__ call's wall time (-1 when absent); it covers work outside the
  // three stages (the content hash, a collection pause), which cpu_ns also counts
  int64_t wall_ns = -1;
  // optional: minor page faults the calling thread took during the call (-1 when absent); on hosts
  // where a fresh page is expensive they are a large, config-dependent share of cpu_ns
  int64_t minflt = -1;
  std::string hash;      // optional content hash
};

struct BatchRecord {
  int64_t rank = 0;
  int64_t epoch = 0;
  int64_t batch = 0;
  int64_t worker = 0;
  int64_t size = 0;
  int64_t collate_ns = 0;
  int64_t t_ready_ns = 0;
  int64_t wait_ns = 0;
  int64_t pin_ns = 0;
  int64_t h2d_ns = 0;
  int64_t h2d_bytes = 0;
  int64_t t_next_start_ns = -1;  // optional
  int64_t bytes = -1;            // optional
};

struct StepRecord {
  int64_t rank = 0;
  int64_t step = 0;
  int64_t t_start_ns = 0;
  int64_t compute_ns = 0;
  int64_t comm_ns = 0;
  int64_t step_ns = 0;
  int64_t micro_batches = 1;
  // Optional (-1: not recorded): CPU time of the training loop's thread during the step, and the
  // accelerator part of compute_ns when the loop marked it (the bench's emulated step: its sleep).
  int64_t cpu_ns = -1;
  int64_t accel_ns = -1;
};

struct WorkerRecord {
  int64_t rank = 0;
  int64_t worker = 0;
  int64_t pid = 0;
  int64_t t_ns = 0;
  int64_t rss_bytes = 0;
  int64_t pss_bytes = 0;
  int64_t cpu_ns = 0;
  // CPU of the process's main thread (where a worker loads its samples); -1 = not recorded.
  int64_t main_thread_cpu_ns = -1;
  int64_t io_read_bytes = 0;
};

struct HostRecord {
  int64_t t_ns = 0;
  int64_t mem_used_bytes = 0;
  int64_t cpu_busy_ns = 0;
  int64_t mem_total_bytes = -1;  // optional: -1 when absent
  int64_t mem_peak_bytes = -1;   // optional: -1 when absent
};

// Records the reader does not interpret (event, footer) are passed through as raw JSON.
struct OtherRecord {
  std::string type;
  nlohmann::json json;
};

using TraceRecord = std::variant<SampleRecord, BatchRecord, StepRecord, WorkerRecord, HostRecord, OtherRecord>;

// Serialises a record to the one-line JSON object of the spec (with "type").
nlohmann::json ToJson(const TraceRecord& record);

}  // namespace simreplay::replay
