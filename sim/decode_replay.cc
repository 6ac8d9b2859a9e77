#include "sim/decode_replay.h"

#include <vector>

namespace simreplay::sim {

namespace {
std::vector<models::GpuDecodeSample> Run(const replay::SampleCostTable& t, const models::GpuDecodeCosts& costs,
                                         double worker_cost_scale) {
  std::vector<models::GpuDecodeSample> s;
  s.reserve(t.samples.size());
  for (const auto& c : t.samples) s.push_back({c.width, c.height, c.frames, c.read_bytes});
  models::ApplyGpuDecode(costs, worker_cost_scale, &s);
  return s;
}
}  // namespace

replay::SampleCostTable MoveDecodeToGpu(const replay::SampleCostTable& in, const models::GpuDecodeCosts& costs,
                                        double worker_cost_scale) {
  auto s = Run(in, costs, worker_cost_scale);
  replay::SampleCostTable out = in;
  for (size_t i = 0; i < s.size(); ++i) {
    auto& c = out.samples[i];
    c.decode_s = s[i].cpu_s;
    c.augment_s = 0;
    c.out_bytes = s[i].h2d_bytes;
  }
  out.warnings.push_back("assumed: decode.device gpu: decode and augmentation moved to the GPU with catalogue costs (" +
                         costs.source + "); the GPU step grows by each batch's decode time");
  return out;
}

double MeanGpuDecodeS(const replay::SampleCostTable& table, const models::GpuDecodeCosts& costs) {
  if (table.samples.empty()) return 0;
  double sum = 0;
  for (const auto& s : Run(table, costs, 1.0)) sum += s.gpu_s;
  return sum / static_cast<double>(table.samples.size());
}

}  // namespace simreplay::sim
