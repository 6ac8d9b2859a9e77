#include "models/format_model.h"

#include <algorithm>
#include <cmath>

#include "common/json_fields.h"

namespace simreplay::models {

FormatParams CatalogueFormats() {
  FormatParams p;
  ContainerFormat files;
  files.open_s = 20e-6;  // open + fstat + close on a local file system, page-cache metadata
  files.granularity_bytes = 4096;
  files.notes = "one file per sample: one open per sample, reads rounded to 4 KiB pages, random order";
  ContainerFormat tar;
  tar.open_s = 20e-6;
  tar.samples_per_open = 64;
  tar.header_bytes = 512;
  tar.granularity_bytes = 512;
  tar.sequential = true;
  tar.notes =
      "WebDataset shards of 64 samples: one open per shard, a 512 B header per member, 512 B "
      "records; sequential within a shard when streamed, one seek per sample with random access";
  ContainerFormat lmdb;
  lmdb.per_read_latency_s = 5e-6;
  lmdb.header_bytes = 16;
  lmdb.granularity_bytes = 4096;
  lmdb.notes = "one environment opened once; a B-tree lookup per sample through mmap, 4 KiB pages";
  ContainerFormat hdf5;
  hdf5.per_read_latency_s = 30e-6;
  hdf5.granularity_bytes = 1;
  hdf5.deserialize_s_per_byte = 0.1e-9;
  hdf5.notes = "one file opened once; a variable-length row read per sample (heap lookup + copy)";
  ContainerFormat tfrecord;
  tfrecord.open_s = 20e-6;
  tfrecord.samples_per_open = 64;
  tfrecord.header_bytes = 16;  // 8 B length + 4 B its masked CRC-32C + 4 B the payload's masked CRC-32C
  tfrecord.granularity_bytes = 1;
  tfrecord.random_granularity_bytes = 4096;  // a random read pulls at least one page
  tfrecord.deserialize_s_per_byte = 1e-9;    // CRC-32C of the payload in software (~1 GB/s) + copy
  tfrecord.sequential = true;
  tfrecord.notes =
      "TFRecord shards of 64 records (length, masked CRC-32C, payload, masked CRC-32C): one open per shard, "
      "16 B framing per record, payload CRC checked on read; no index of its own: random access needs an "
      "external offset index (one page per read)";
  ContainerFormat parquet;
  parquet.open_s = 60e-6;  // open + read the footer (file metadata, row-group offsets)
  parquet.samples_per_open = 64;
  parquet.header_bytes = 28;  // per-row share of page headers and the BYTE_ARRAY length prefix (4 B)
  parquet.granularity_bytes = 1;
  parquet.random_granularity_bytes = 1 << 20;  // random access decodes the whole data page (1 MiB default)
  parquet.random_seek_s = 20e-6;               // locate the row group and page through the footer
  parquet.deserialize_s_per_byte = 2e-9;       // page decompression (Snappy ~500 MB/s) and decoding
  parquet.sequential = true;
  parquet.notes =
      "ASSUMED, never measured here (Debian 12 has no Parquet library for Python): files of one 64-row "
      "row group, one binary column, 1 MiB data pages, Snappy; layout per the Apache Parquet format "
      "specification (footer metadata, row groups, column chunks, pages)";
  p.containers = {{"files", files},       {"tar", tar},        {"lmdb", lmdb},
                  {"hdf5", hdf5},         {"tfrecord", tfrecord}, {"parquet", parquet}};
  return p;
}

int64_t ContainerReadBytes(const ContainerFormat& c, int64_t media_bytes, bool sequential_access) {
  int64_t g = std::max<int64_t>(1, c.granularity_bytes);
  if (!(sequential_access && c.sequential)) g = std::max(g, c.random_granularity_bytes);
  int64_t b = std::max<int64_t>(0, media_bytes) + std::max<int64_t>(0, c.header_bytes);
  return (b + g - 1) / g * g;
}

double ContainerReadS(const ContainerFormat& c, int64_t media_bytes, double reference_bandwidth_bytes_per_s,
                      bool sequential_access) {
  double bw = c.bandwidth_bytes_per_s > 0 ? c.bandwidth_bytes_per_s : reference_bandwidth_bytes_per_s;
  double per_open = c.open_s / static_cast<double>(std::max<int64_t>(1, c.samples_per_open));
  double seek = sequential_access && c.sequential ? 0.0 : c.random_seek_s;
  return per_open + c.per_read_latency_s + seek +
         static_cast<double>(ContainerReadBytes(c, media_bytes, sequential_access)) / bw;
}

Status ApplyFormat(const FormatParams& params, const std::string& from, const std::string& to,
                   std::vector<SampleIo>* samples, bool target_sequential) {
  auto src = params.containers.find(from);
  if (src == params.containers.end())
    return Status::InvalidArgument("format '" + from + "' is not in the model's formats");
  auto dst = params.containers.find(to);
  if (dst == params.containers.end())
    return Status::InvalidArgument("format '" + to + "' is not in the model's formats");
  if (from == to && !(target_sequential && dst->second.sequential)) return Status::Ok();
  const double ref = params.reference_bandwidth_bytes_per_s;
  for (auto& s : *samples) {
    // read_bytes of the source includes its header and rounding; the media bytes are what is left.
    int64_t media = std::max<int64_t>(0, s.read_bytes - src->second.header_bytes);
    double src_s = ContainerReadS(src->second, media, ref, false);
    double dst_s = ContainerReadS(dst->second, media, ref, target_sequential);
    s.read_s = (s.read_s > 0 && src_s > 0) ? s.read_s * dst_s / src_s : dst_s;
    int64_t dst_bytes = ContainerReadBytes(dst->second, media, target_sequential);
    s.cpu_s = std::max(0.0, s.cpu_s - src->second.deserialize_s_per_byte * static_cast<double>(s.read_bytes) +
                                dst->second.deserialize_s_per_byte * static_cast<double>(dst_bytes));
    s.read_bytes = dst_bytes;
  }
  return Status::Ok();
}

nlohmann::json FormatParamsToJson(const FormatParams& params) {
  nlohmann::json containers = nlohmann::json::object();
  for (const auto& [name, c] : params.containers) {
    containers[name] = {{"open_s", c.open_s},
                        {"samples_per_open", c.samples_per_open},
                        {"per_read_latency_s", c.per_read_latency_s},
                        {"bandwidth_bytes_per_s", c.bandwidth_bytes_per_s},
                        {"header_bytes", c.header_bytes},
                        {"granularity_bytes", c.granularity_bytes},
                        {"deserialize_s_per_byte", c.deserialize_s_per_byte},
                        {"sequential", c.sequential},
                        {"random_seek_s", c.random_seek_s},
                        {"random_granularity_bytes", c.random_granularity_bytes},
                        {"assumed", c.assumed},
                        {"source", c.source},
                        {"notes", c.notes}};
  }
  return {{"captured", params.captured},
          {"reference_bandwidth_bytes_per_s", params.reference_bandwidth_bytes_per_s},
          {"containers", containers}};
}

Result<FormatParams> ParseFormatParams(const nlohmann::json& json, const std::string& where) {
  if (!json.is_object()) return Status::InvalidArgument(where + ": formats must be an object");
  FormatParams p;
  JsonFields top(json, where);
  SIMREPLAY_RETURN_IF_ERROR(top.GetOptionalString("captured", &p.captured));
  SIMREPLAY_RETURN_IF_ERROR(
      top.GetOptionalDouble("reference_bandwidth_bytes_per_s", &p.reference_bandwidth_bytes_per_s));
  if (p.reference_bandwidth_bytes_per_s <= 0) return top.Error("reference_bandwidth_bytes_per_s must be > 0");
  if (!json.contains("containers") || !json["containers"].is_object()) return top.Error("missing object 'containers'");
  // Catalogue containers the file does not describe (a model calibrated before they were added) stay
  // available; every one the file gives replaces its catalogue entry.
  p.containers = CatalogueFormats().containers;
  for (const auto& [name, cj] : json["containers"].items()) {
    if (!cj.is_object()) return top.Error("containers." + name + " must be an object");
    JsonFields f(cj, where + ": containers." + name);
    ContainerFormat c;
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalDouble("open_s", &c.open_s));
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("samples_per_open", &c.samples_per_open));
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalDouble("per_read_latency_s", &c.per_read_latency_s));
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalDouble("bandwidth_bytes_per_s", &c.bandwidth_bytes_per_s));
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("header_bytes", &c.header_bytes));
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("granularity_bytes", &c.granularity_bytes));
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalDouble("deserialize_s_per_byte", &c.deserialize_s_per_byte));
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalBool("sequential", &c.sequential));
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalDouble("random_seek_s", &c.random_seek_s));
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("random_granularity_bytes", &c.random_granularity_bytes));
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalBool("assumed", &c.assumed));
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalString("source", &c.source));
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalString("notes", &c.notes));
    if (c.samples_per_open < 1) return f.Error("samples_per_open must be >= 1");
    if (c.granularity_bytes < 1) return f.Error("granularity_bytes must be >= 1");
    p.containers[name] = c;
  }
  return p;
}

}  // namespace simreplay::models
