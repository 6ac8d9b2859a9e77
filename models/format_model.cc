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
  p.containers = {{"files", files}, {"tar", tar}, {"lmdb", lmdb}, {"hdf5", hdf5}};
  return p;
}

int64_t ContainerReadBytes(const ContainerFormat& c, int64_t media_bytes) {
  int64_t g = std::max<int64_t>(1, c.granularity_bytes);
  int64_t b = std::max<int64_t>(0, media_bytes) + std::max<int64_t>(0, c.header_bytes);
  return (b + g - 1) / g * g;
}

double ContainerReadS(const ContainerFormat& c, int64_t media_bytes, double reference_bandwidth_bytes_per_s) {
  double bw = c.bandwidth_bytes_per_s > 0 ? c.bandwidth_bytes_per_s : reference_bandwidth_bytes_per_s;
  double per_open = c.open_s / static_cast<double>(std::max<int64_t>(1, c.samples_per_open));
  return per_open + c.per_read_latency_s + static_cast<double>(ContainerReadBytes(c, media_bytes)) / bw;
}

Status ApplyFormat(const FormatParams& params, const std::string& from, const std::string& to,
                   std::vector<SampleIo>* samples) {
  auto src = params.containers.find(from);
  if (src == params.containers.end())
    return Status::InvalidArgument("format '" + from + "' is not in the model's formats");
  auto dst = params.containers.find(to);
  if (dst == params.containers.end())
    return Status::InvalidArgument("format '" + to + "' is not in the model's formats");
  if (from == to) return Status::Ok();
  const double ref = params.reference_bandwidth_bytes_per_s;
  for (auto& s : *samples) {
    // read_bytes of the source includes its header and rounding; the media bytes are what is left.
    int64_t media = std::max<int64_t>(0, s.read_bytes - src->second.header_bytes);
    double src_s = ContainerReadS(src->second, media, ref);
    double dst_s = ContainerReadS(dst->second, media, ref);
    s.read_s = (s.read_s > 0 && src_s > 0) ? s.read_s * dst_s / src_s : dst_s;
    int64_t dst_bytes = ContainerReadBytes(dst->second, media);
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
