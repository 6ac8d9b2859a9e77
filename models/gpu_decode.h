// GPU decoding what-if (scenario decode.device "gpu": DALI / nvJPEG / NVDEC style pipelines). Decode and
// augmentation move to the GPU, the CPU keeps the read and the parse of the encoded stream, the H2D
// copy carries the encoded bytes instead of the decoded tensors, and the GPU step of every micro-batch
// grows by the batch's decode time. Costs are from an assumed catalogue (no GPU to measure them on
// here) and every output that uses them says so. Plain C++, no replay/ dependency.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace simreplay::models {

// Per-sample GPU cost = per_sample_s + s_per_pixel x pixels (+ s_per_frame x frames for clips);
// CPU parse cost = cpu_parse_s_per_byte x encoded bytes. pixels = width x height x max(1, frames).
struct GpuDecodeCosts {
  double per_sample_s = 20e-6;         // kernel launches and batching overhead per image
  double s_per_pixel = 1.0e-9;         // decode + colour conversion + augmentation
  double s_per_frame = 50e-6;          // video (NVDEC): per-frame set-up
  double cpu_parse_s_per_byte = 1e-9;  // headers + Huffman decoding of small images (nvJPEG hybrid)
  std::string source =
      "assumed catalogue: order of magnitude of published nvJPEG/NVDEC throughput on data-centre GPUs; "
      "never measured here (no GPU)";
};

struct GpuDecodeSample {
  int64_t width = 0, height = 0, frames = 0;
  int64_t read_bytes = 0;
  double gpu_s = 0;       // out: decode + augment on the GPU
  double cpu_s = 0;       // out: CPU parse (recorded seconds before worker_cost_scale)
  int64_t h2d_bytes = 0;  // out: the encoded bytes
};

// Fills the outputs of each sample. `worker_cost_scale` turns intrinsic CPU seconds into the recorded
// seconds the simulator replays (it multiplies them back).
void ApplyGpuDecode(const GpuDecodeCosts& costs, double worker_cost_scale, std::vector<GpuDecodeSample>* samples);

}  // namespace simreplay::models
