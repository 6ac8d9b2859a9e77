// StorageProbe: a native read microbenchmark of the storage under a directory. It writes a test file
// there, measures pread bandwidth and per-operation latency over block size × concurrency × access
// pattern with a cold and a warm page cache, and fits the storage model's per-read cost
// latency_s + bytes / bandwidth_bytes_per_s. The output format is docs/probe-format.md
// ("simreplay.probe/1").
//
// Thread safety: RunStorageProbe may be called from any thread, but two probes on the same directory
// compete for the device and distort each other's numbers.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace simreplay::calibrate {

enum class AccessPattern { kSequential, kRandom };
std::string_view AccessPatternName(AccessPattern pattern);

struct ProbeOptions {
  // Directory to probe. Must exist and be writable.
  std::string dir;
  // Name of the test file inside `dir`; empty means ".simreplay_probe.<pid>".
  std::string file_name;
  // Size of the test file, bytes. Must be a multiple of 4096 and at least the largest block size.
  uint64_t file_bytes = uint64_t{256} << 20;
  // Read sizes, bytes; each a positive multiple of 4096 (O_DIRECT alignment).
  std::vector<uint64_t> block_bytes = {4096, 64 << 10, 1 << 20, 4 << 20};
  // Reader thread counts, each in [1, 64]. The fit uses concurrency 1, so keep it in the list.
  std::vector<int> concurrency = {1, 2, 4, 8};
  std::vector<AccessPattern> patterns = {AccessPattern::kSequential, AccessPattern::kRandom};
  // Read the cold measurements with O_DIRECT (falls back to buffered reads where the fs refuses).
  bool direct = false;
  // Also measure with the whole file in the page cache (concurrency 1).
  bool warm_pass = true;
  // Each measurement stops after this many seconds (operations in flight finish) ...
  double time_limit_s = 0.5;
  // ... or after this many bytes; 0 means file_bytes.
  uint64_t max_measure_bytes = 0;
  // Seed of the std::mt19937_64 that orders random reads and fills the file.
  uint64_t seed = 1;
  // When fadvise cannot evict the file's pages and the process is root, write "1" to
  // /proc/sys/vm/drop_caches. That drops the clean pages of every process on the host.
  bool allow_global_drop_caches = true;
  // Called before each measurement with its 1-based index and the total; may be empty.
  std::function<void(int index, int total, std::string_view what)> on_progress;
  // Called with each note (fallbacks, cache-drop problems) as it arises; may be empty.
  std::function<void(std::string_view note)> on_note;
};

struct LatencyStats {
  double mean = 0;  // seconds
  double p50 = 0;   // seconds, nearest rank
  double p99 = 0;   // seconds, nearest rank
};

struct ProbeMeasurement {
  AccessPattern pattern = AccessPattern::kSequential;
  uint64_t block_bytes = 0;
  int concurrency = 1;
  bool cold = true;
  double bytes_per_s = 0;
  LatencyStats latency_s;
  uint64_t ops = 0;
  uint64_t bytes = 0;
  double wall_s = 0;
};

// One read of b bytes costs latency_s + b * seconds_per_byte.
struct LinearCostFit {
  double latency_s = 0;
  double seconds_per_byte = 0;
  double r2 = 0;  // under the fit's weights
  // 1 / seconds_per_byte, or nullopt when the slope is not positive.
  std::optional<double> bandwidth_bytes_per_s() const;
};

struct PatternFit {
  LinearCostFit cost;
  int max_useful_concurrency = 1;
  double peak_bytes_per_s = 0;
  std::map<uint64_t, int> max_useful_concurrency_by_block;
};

struct ProbeResult {
  std::string path;
  std::string fs;
  std::string mount_point;
  std::string device;
  uint64_t file_bytes = 0;
  bool direct = false;
  std::string cache_drop;  // "fadvise", "drop_caches" or "could not: <reason>"
  uint64_t seed = 0;
  double time_limit_s = 0;
  double write_bytes_per_s = 0;
  std::vector<std::string> notes;
  std::vector<ProbeMeasurement> measurements;
  std::optional<PatternFit> sequential_fit;
  std::optional<PatternFit> random_fit;
  std::optional<LinearCostFit> page_cache_fit;
};

// Creates the test file, measures, fits and removes the file (also on failure). Errors name
// options.dir: NotFound when it does not exist; InvalidArgument when it is not a directory, is not
// writable, lacks room for the file, or an option is out of range; IoError when a write or read fails.
Result<ProbeResult> RunStorageProbe(const ProbeOptions& options);

// The default test file path RunStorageProbe uses for `options` (dir + file_name or the pid default).
std::string ProbeFilePath(const ProbeOptions& options);

struct CostPoint {
  double block_bytes = 0;
  double op_s = 0;  // mean seconds per read; must be > 0
};

// Least-squares fit of op_s = latency_s + block_bytes * seconds_per_byte, weighted by 1/op_s² so that
// every point counts by its relative error. InvalidArgument with fewer than two distinct block sizes
// or a non-positive op_s.
Result<LinearCostFit> FitLinearCost(const std::vector<CostPoint>& points);

// The order in which the random pattern reads the blocks of a file_bytes-long file: a permutation of
// the block indices [0, file_bytes / block_bytes), a function of (seed, block_bytes) only, the same
// with every standard library. REQUIRES: block_bytes > 0.
std::vector<uint64_t> RandomReadOrder(uint64_t file_bytes, uint64_t block_bytes, uint64_t seed);

// The smallest concurrency whose bandwidth reaches `fraction` of the best in `bytes_per_s_by_concurrency`.
// REQUIRES: the map is not empty.
int MaxUsefulConcurrency(const std::map<int, double>& bytes_per_s_by_concurrency, double fraction = 0.9);

// The document of docs/probe-format.md, pretty-printed, ending in a newline.
std::string ProbeResultToJson(const ProbeResult& result);

// The fit section of a probe document as read back (calibration's use of the format). Values are kept
// as written (bandwidth, not its reciprocal) so that what is reported is what the probe wrote.
struct ProbeFitRecord {
  double latency_s = 0;
  std::optional<double> bandwidth_bytes_per_s;  // null in the file: slope not positive
  std::optional<double> r2;
  std::optional<int> max_useful_concurrency;
  std::optional<double> peak_bytes_per_s;
  std::optional<std::map<std::string, int>> max_useful_concurrency_by_block;  // block bytes (as written) -> threads
  // The record as the probe wrote it (only the fields present).
  nlohmann::json ToJson() const;
};

struct ProbeDocument {
  std::string file;        // the path read
  std::string cache_drop;  // "" when absent
  std::optional<ProbeFitRecord> sequential, random, page_cache;
};

// Reads a simreplay.probe/1 document: the one reader of the format (docs/probe-format.md). Errors
// (InvalidArgument, exit 3) name FILE:LINE for malformed JSON, FILE:1 for another schema, and FILE plus
// the field path for a fit field of the wrong type. A missing or null fit is not an error.
Result<ProbeDocument> ReadProbeFile(const std::string& path);

// A human-readable table of the measurements and the fit.
std::string FormatProbeTable(const ProbeResult& result);

}  // namespace simreplay::calibrate
