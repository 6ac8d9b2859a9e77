#include "sim/media_replay.h"

#include <algorithm>
#include <vector>

namespace simreplay::sim {

Result<replay::SampleCostTable> ApplyMedia(const replay::SampleCostTable& in, const models::ModelParams& model,
                                           const std::map<std::string, models::MediaShapeSpec>& spec, uint64_t seed) {
  if (spec.empty()) return in;
  const auto& extra = model.extra;
  if (!extra.contains("formats") || !extra["formats"].contains("media")) {
    return Status::InvalidArgument(
        "data.media needs a calibrated model (its formats.media cost regressions); none is given");
  }
  auto models = models::ParseMediaCostModels(extra["formats"]["media"], "model");
  if (!models.ok()) return models.status();
  std::vector<models::MediaSample> samples;
  samples.reserve(in.samples.size());
  for (const auto& c : in.samples) {
    if (c.unsplit)
      return Status::InvalidArgument("data.media: the trace has no per-stage sample costs to synthesise from");
    samples.push_back({in.formats[static_cast<size_t>(c.format_id)], c.width, c.height, c.frames, c.read_bytes,
                       c.out_bytes, c.read_s, c.decode_s, c.augment_s});
  }
  replay::SampleCostTable out = in;
  std::vector<std::string> warnings;
  SIMREPLAY_RETURN_IF_ERROR(
      models::SynthesizeMedia(*models, spec, model.cpu.worker_cost_scale, seed, &samples, &warnings, &out.extrapolated));
  for (size_t i = 0; i < samples.size(); ++i) {
    const auto& s = samples[i];
    auto& c = out.samples[i];
    auto it = std::find(out.formats.begin(), out.formats.end(), s.media);
    if (it == out.formats.end()) it = out.formats.insert(out.formats.end(), s.media);
    c.format_id = static_cast<int32_t>(it - out.formats.begin());
    c.width = s.width, c.height = s.height, c.frames = s.frames;
    c.read_bytes = s.read_bytes, c.out_bytes = s.out_bytes;
    c.read_s = s.read_s, c.decode_s = s.decode_s, c.augment_s = s.augment_s;
  }
  out.warnings.push_back("per-sample costs synthesised for data.media from the model's per-media cost regressions");
  for (auto& w : warnings) out.warnings.push_back(std::move(w));
  return out;
}

}  // namespace simreplay::sim
