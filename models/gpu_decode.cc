#include "models/gpu_decode.h"

#include <algorithm>

namespace simreplay::models {

void ApplyGpuDecode(const GpuDecodeCosts& costs, double worker_cost_scale, std::vector<GpuDecodeSample>* samples) {
  for (auto& s : *samples) {
    const double frames = static_cast<double>(std::max<int64_t>(1, s.frames));
    const double pixels = static_cast<double>(s.width) * static_cast<double>(s.height) * frames;
    s.gpu_s = costs.per_sample_s + costs.s_per_pixel * pixels + (s.frames > 1 ? costs.s_per_frame * frames : 0.0);
    s.cpu_s = costs.cpu_parse_s_per_byte * static_cast<double>(s.read_bytes) / std::max(1e-12, worker_cost_scale);
    s.h2d_bytes = s.read_bytes;
  }
}

}  // namespace simreplay::models
