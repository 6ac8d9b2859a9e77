// decode.device "gpu" on a trace's cost table (models/gpu_decode.h): the CPU keeps the read and the
// parse, decode and augmentation leave the workers, and batches carry the encoded bytes to the GPU.
// The GPU-side time is returned separately: the caller adds it to the step (PreparePoint).
#pragma once

#include "models/gpu_decode.h"
#include "replay/sample_costs.h"

namespace simreplay::sim {

// The table with decode_s = the CPU parse, augment_s = 0, out_bytes = read_bytes.
replay::SampleCostTable MoveDecodeToGpu(const replay::SampleCostTable& in, const models::GpuDecodeCosts& costs,
                                        double worker_cost_scale);
// Mean GPU decode + augment seconds per sample of the table (shapes and bytes as in the table).
double MeanGpuDecodeS(const replay::SampleCostTable& table, const models::GpuDecodeCosts& costs);

}  // namespace simreplay::sim
