// Importer of torch.profiler (Kineto) Chrome traces into trace format v1 (docs/trace-format.md).
// What is mapped from which event, what is derived and the limits are in docs/kineto-import.md.
//
// Usage:
//   KinetoImportOptions options;
//   options.input_paths = {"rank0.pt.trace.json.gz", "rank1.pt.trace.json.gz"};
//   auto summary = KinetoImporter::ImportToFile(options, "trace.jsonl.gz");
//   if (!summary.ok()) return summary.status();
//
// Every failure is a returned Status whose message starts with the offending file ("FILE: ..."); the
// importer never exits and never throws. Stateless and thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "replay/trace_records.h"

namespace simreplay::replay {

struct KinetoImportOptions {
  // Chrome trace files written by torch.profiler (.json, or gzip-compressed .json.gz), one per rank.
  // The rank of a file is its top-level distributedInfo.rank; a file without one gets its position in
  // this list. Two files with the same rank are an error.
  std::vector<std::string> input_paths;
  // Samples per batch. 0 (default): derived from the recorded input shapes ("Input Dims") of the first
  // aten::conv*/aten::linear/aten::embedding_bag call; an error when no file recorded shapes.
  int64_t batch_size = 0;
};

// What was imported for one rank (also written as the rank's `kineto_summary` event record).
struct KinetoRankSummary {
  std::string path;
  int64_t rank = 0;
  int64_t steps = 0;            // ProfilerStep#N events
  int64_t batches = 0;          // steps that contained a DataLoader __next__ event
  int64_t step_ns_total = 0;    // sum of step_ns
  int64_t wait_ns_total = 0;    // sum of batch wait_ns
  int64_t h2d_bytes_total = 0;  // sum of batch h2d_bytes
  int64_t compute_ns_total = 0;
  int64_t comm_ns_total = 0;  // exposed NCCL time
  int64_t gpu_busy_ns = 0;    // union of all GPU kernels (NCCL included) within the step windows
  int64_t nccl_ns = 0;        // union of NCCL kernels within the step windows (hidden or not)
};

// The converted trace, in memory, in the order it is written.
struct KinetoImport {
  TraceHeader header;
  std::vector<TraceRecord> records;      // per rank (ascending): per step (ascending): batch, step; then
                                         // the rank's kineto_summary event
  std::vector<KinetoRankSummary> ranks;  // ascending rank
  int64_t batch_size = 0;
  std::string batch_size_source;      // "--batch-size" or "FILE: aten::conv2d Input Dims[0][0]"
  std::vector<std::string> warnings;  // "FILE: ..." (e.g. a step without a DataLoader event)
};

class KinetoImporter {
 public:
  // Reads and converts every input. Errors: an input that cannot be read, is not JSON, has no
  // "traceEvents" array, has no ProfilerStep#N event or has a malformed event; no batch size given and
  // none derivable; duplicate ranks.
  static Result<KinetoImport> Convert(const KinetoImportOptions& options);

  // Writes a converted trace to `output_path` (".gz": compressed) through TraceWriter, so the file
  // appears whole or not at all. Errors name `output_path`.
  static Status Write(const KinetoImport& import, const std::string& output_path);

  // Convert(), then Write().
  static Result<KinetoImport> ImportToFile(const KinetoImportOptions& options, const std::string& output_path);
};

}  // namespace simreplay::replay
