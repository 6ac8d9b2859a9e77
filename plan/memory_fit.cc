#include "plan/memory_fit.h"

#include <fmt/format.h>

namespace simreplay::plan {

MemoryFit FitMemory(const ModelSpec& model, bool fsdp, int gpus, const models::Accelerator& gpu,
                    double measured_peak_bytes) {
  MemoryFit m;
  const BytesPerParameter b = StateBytes(model.optimizer, model.precision);
  const double full_states = model.parameters * b.total();
  const double shards = fsdp ? gpus : 1;
  m.states_bytes = full_states / shards;
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
  m.breakdown = fmt::format(
      "{:.1f} GB states ({:g} B/parameter x {:.3g} parameters{}) + {:.1f} GB activations{} = {:.1f} GB vs {:.1f} GB "
      "usable of {:.0f} GB",
      m.states_bytes / 1e9, b.total(), model.parameters, fsdp ? fmt::format(" / {} GPUs", gpus) : "",
      m.activation_bytes / 1e9, m.measured ? " (preflight peak)" : "", m.total_bytes / 1e9, m.usable_bytes / 1e9,
      m.capacity_bytes / 1e9);
  return m;
}

}  // namespace simreplay::plan
