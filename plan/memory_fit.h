// Memory per GPU of a candidate (docs/planning.md, "Memory"): model states by optimizer and precision
// (replicated under DDP, sharded across all GPUs under FSDP / ZeRO-3) plus activations, against the
// device's capacity less a headroom.
#pragma once

#include <string>

#include "models/accelerator_catalogue.h"
#include "plan/plan_spec.h"

namespace simreplay::plan {

struct MemoryFit {
  double states_bytes = 0;      // weights + gradients + optimizer state + master copy on one GPU
  double activation_bytes = 0;  // activations of one micro-batch (plan file or preflight)
  double total_bytes = 0;
  double capacity_bytes = 0;  // device memory
  double usable_bytes = 0;    // capacity x (1 - headroom)
  bool fits = false;
  bool measured = false;  // from a preflight peak instead of the formula
  std::string breakdown;  // the numbers, in words
};

// `measured_peak_bytes` > 0: a preflight's peak memory of one GPU holding the full (unsharded) states
// and one micro-batch; it replaces the formula for DDP, and for FSDP the sharded part is taken off it.
MemoryFit FitMemory(const ModelSpec& model, bool fsdp, int gpus, const models::Accelerator& gpu,
                    double measured_peak_bytes = 0);

}  // namespace simreplay::plan
