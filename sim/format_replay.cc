#include "sim/format_replay.h"

#include <algorithm>
#include <vector>

namespace simreplay::sim {

Result<replay::SampleCostTable> ApplyFormat(const replay::SampleCostTable& in, const models::FormatParams& params,
                                            const std::string& target_format_or_empty, bool sequential) {
  std::string from = replay::ContainerOfManifest(in.manifest);
  if (!params.captured.empty() && !in.manifest.contains("data")) from = params.captured;
  const std::string target_format = target_format_or_empty.empty() ? from : target_format_or_empty;
  auto dst = params.containers.find(target_format);
  const bool access_changes = sequential && dst != params.containers.end() && dst->second.sequential;
  if (from == target_format && !access_changes) return in;  // as captured: the recorded costs unchanged
  std::vector<models::SampleIo> io;
  io.reserve(in.samples.size());
  for (const auto& s : in.samples) io.push_back({s.read_s, s.read_bytes, s.decode_s + s.augment_s});
  SIMREPLAY_RETURN_IF_ERROR(models::ApplyFormat(params, from, target_format, &io, sequential));
  replay::SampleCostTable out = in;
  for (size_t i = 0; i < io.size(); ++i) {
    auto& s = out.samples[i];
    s.decode_s = std::max(0.0, s.decode_s + io[i].cpu_s - (in.samples[i].decode_s + in.samples[i].augment_s));
    s.read_s = io[i].read_s;
    s.read_bytes = io[i].read_bytes;
  }
  {
    out.warnings.push_back("per-sample read costs transformed from format '" + from + "' to '" + target_format +
                           "'" + (sequential ? " read sequentially" : "") +
                           " (format model; catalogue entries are assumed)");
    if (dst != params.containers.end() && dst->second.assumed && dst->second.source == "catalogue" &&
        target_format == "parquet") {
      out.warnings.push_back("assumed: parquet is modelled from its documented layout only (never measured)");
    }
  }
  return out;
}

}  // namespace simreplay::sim
