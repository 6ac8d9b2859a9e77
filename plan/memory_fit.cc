#include "plan/memory_fit.h"

#include <algorithm>

#include <fmt/format.h>

namespace simreplay::plan {

MemoryFit FitMemory(const ModelSpec& model, bool fsdp, int gpus, const models::Accelerator& gpu,
                    double measured_peak_bytes, int grad_accum) {
  MemoryFit m;
  const BytesPerParameter b = StateBytes(model.optimizer, model.precision);
  const double full_states = model.parameters * b.total();
  // Bytes per parameter kept whole on every GPU, and those divided across the GPUs.
  const bool gathered_across_accumulation = fsdp && grad_accum > 1;
  const double whole_bpp = !fsdp ? b.total() : gathered_across_accumulation ? b.weights + b.gradients : 0.0;
  const double sharded_bpp = b.total() - whole_bpp;
  m.states_bytes = model.parameters * (whole_bpp + sharded_bpp / gpus);
  m.capacity_bytes = gpu.memory_bytes;
  m.usable_bytes = gpu.memory_bytes * (1 - model.memory_headroom_fraction);
  if (measured_peak_bytes > 0) {
    m.measured = true;
    m.activation_bytes = std::max(0.0, measured_peak_bytes - full_states);
    m.total_bytes = measured_peak_bytes - (full_states - m.states_bytes);
  } else {
    m.activation_bytes = model.activation_bytes_per_gpu;
    m.total_bytes = m.states_bytes + m.activation_bytes;
  }
  m.fits = m.total_bytes <= m.usable_bytes;
  const std::string states =
      !fsdp ? fmt::format("{:g} B/parameter", b.total())
      : gathered_across_accumulation
          ? fmt::format("{:g} B/parameter gathered (weights and gradients kept whole across {} accumulated "
                        "micro-batches) + {:g} B/parameter / {} GPUs",
                        whole_bpp, grad_accum, sharded_bpp, gpus)
          : fmt::format("{:g} B/parameter / {} GPUs", b.total(), gpus);
  m.breakdown = fmt::format(
      "{:.1f} GB states ({} x {:.3g} parameters) + {:.1f} GB activations{} = {:.1f} GB vs {:.1f} GB usable of {:.0f} GB",
      m.states_bytes / 1e9, states, model.parameters, m.activation_bytes / 1e9, m.measured ? " (preflight peak)" : "",
      m.total_bytes / 1e9, m.usable_bytes / 1e9, m.capacity_bytes / 1e9);
  return m;
}

}  // namespace simreplay::plan
