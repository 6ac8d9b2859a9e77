// How a storage container format (files, tar shards, LMDB, HDF5, ...) shapes the I/O and CPU work of
// loading one sample, and the pure transformation of per-sample costs from the format a trace was
// captured in to another. Plain C++, no replay/ dependency (models/ depends on common/ only): the
// costs are passed as SampleIo values; calibrate/format_model.h applies it to a
// replay::SampleCostTable.
//
// Cost of reading one sample of b media bytes in container c:
//   read_s(c, b) = c.open_s / c.samples_per_open + c.per_read_latency_s + B / bandwidth
//   with B = roundup(b + c.header_bytes, c.granularity_bytes) the bytes that really move, and
//   bandwidth = c.bandwidth_bytes_per_s, or the reference (measured) bandwidth when that is 0.
// Access pattern (scenario data.access): "random" (a map-style dataset looks each sample up by index,
// the default) adds c.random_seek_s per sample and rounds reads up to c.random_granularity_bytes when
// that is larger (a Parquet page, a file-system page); "sequential" (a streaming pass in shard/record
// order) reads containers marked `sequential` front to back: no seek and plain granularity. Containers
// not marked sequential cost the same either way.
// ApplyFormat keeps each sample's own deviation from its format's model: read_s' = read_s x
// read_s(to, b) / read_s(from, b), so page-cache hits and slow outliers of the trace carry over.
// Decoding is unchanged (the same media bytes are decoded); c.deserialize_s_per_byte adds CPU.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace simreplay::models {

struct ContainerFormat {
  double open_s = 0;                  // one open()+close() (per file; per shard for tar)
  int64_t samples_per_open = 1;       // samples read per open (shard size for tar)
  double per_read_latency_s = 0;      // per-sample seek / lookup / request latency
  double bandwidth_bytes_per_s = 0;   // 0: use the reference bandwidth (the captured storage's)
  int64_t header_bytes = 0;           // container bytes read with each sample (tar header, key)
  int64_t granularity_bytes = 1;      // reads are rounded up to this (page, block, chunk)
  double deserialize_s_per_byte = 0;  // CPU per byte to get the sample's bytes out of the container
  bool sequential = false;            // true when a pass reads the container front to back
  double random_seek_s = 0;           // extra per sample under random access (sequential containers)
  int64_t random_granularity_bytes = 0;  // reads round up to this under random access; 0: granularity_bytes
  bool assumed = true;                // structure and costs from the catalogue, not measured
  std::string source = "catalogue";
  std::string notes;
};

struct FormatParams {
  std::string captured;                               // container of the calibrating trace(s)
  double reference_bandwidth_bytes_per_s = 2e9;       // storage bandwidth used when a format gives 0
  std::map<std::string, ContainerFormat> containers;  // by name: files, tar, lmdb, hdf5, ...
};

// One sample's costs as the transformation sees them.
struct SampleIo {
  double read_s = 0;
  int64_t read_bytes = 0;
  double cpu_s = 0;  // decode + augment (+ deserialisation)
};

// The catalogue entries for files, tar, lmdb, hdf5, tfrecord and parquet (assumed; see
// docs/model-format.md).
FormatParams CatalogueFormats();
// read_s(c, b) above. REQUIRES: c.samples_per_open >= 1, c.granularity_bytes >= 1.
double ContainerReadS(const ContainerFormat& c, int64_t media_bytes, double reference_bandwidth_bytes_per_s,
                      bool sequential_access = false);
// Bytes that move for b media bytes in container c.
int64_t ContainerReadBytes(const ContainerFormat& c, int64_t media_bytes, bool sequential_access = false);
// Rewrites `samples` from container `from`, read with random access (a map-style Dataset, as capture
// records it), to container `to` read sequentially or not. InvalidArgument naming the unknown one.
Status ApplyFormat(const FormatParams& params, const std::string& from, const std::string& to,
                   std::vector<SampleIo>* samples, bool target_sequential = false);

nlohmann::json FormatParamsToJson(const FormatParams& params);
// Parses the "formats" object of a model file; `where` prefixes errors.
Result<FormatParams> ParseFormatParams(const nlohmann::json& json, const std::string& where);

}  // namespace simreplay::models
