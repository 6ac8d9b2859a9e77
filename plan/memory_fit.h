// Memory per GPU of a candidate (docs/planning.md, "Memory" and "Sharding: one assumption for memory
// and traffic"): model states by optimizer and precision plus activations, against the device's
// capacity less a headroom. DDP replicates every state. FSDP follows what the simulator's FSDP
// communication does (sim/simulation.cc): with one micro-batch per optimizer step every state is
// sharded across all GPUs (FULL_SHARD: parameters gathered per unit and freed, gradients
// reduce-scattered); with gradient accumulation the collectives run on the last micro-batch only,
// so the parameters stay gathered and the gradients accumulate unsharded across the micro-batches
// (FSDP's no_sync), and only the optimizer state and master copy stay sharded.
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
// `grad_accum`: micro-batches per optimizer step (the scenario's train.grad_accum).
MemoryFit FitMemory(const ModelSpec& model, bool fsdp, int gpus, const models::Accelerator& gpu,
                    double measured_peak_bytes = 0, int grad_accum = 1);

}  // namespace simreplay::plan
