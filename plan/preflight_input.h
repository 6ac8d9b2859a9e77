// The figures `simreplay plan` takes from a preflight run (python3 -m simreplay_capture.preflight,
// docs/preflight-format.md, its "measured" block): step time, peak memory, checkpoint bytes and
// bandwidths, restart time, and what the pilot ran (micro-batch, sequence length, world size, device,
// software stack) so the planner can check it against the plan (plan/preflight_checks.h). A figure
// present (not null) replaces the plan's assumption; a preflight whose checks failed is refused.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace simreplay::plan {

struct PreflightInputs {
  std::string path;
  std::string device;                       // "cuda" or "cpu": where the preflight ran
  bool passed = true;                       // every check passed
  std::optional<double> step_time_s;        // mean measured step (one micro-batch), data wait excluded
  std::optional<double> peak_memory_bytes;  // accelerator peak (CUDA only; CPU RSS is not GPU memory)
  std::optional<double> checkpoint_bytes;
  std::optional<double> checkpoint_write_bytes_per_s;
  std::optional<double> checkpoint_read_bytes_per_s;
  std::optional<double> restart_s;  // restore + time to the first step after it
  int world_size = 1;               // ranks of the preflight (all on one node)

  // What the pilot ran, for the checks against the plan.
  std::optional<double> micro_batch_samples;  // per rank
  std::optional<double> sequence_length;      // tokens per sample (the entry's description)
  std::string device_name;                    // the driver's name of the GPU ("" when not recorded)
  bool rocm = false;                          // a ROCm build of torch ran it (versions.hip or manifest.rocm)
  std::string rocm_stack;                     // "ROCm 6.2.1 (hip 6.2.41133)" when rocm
  nlohmann::json manifest;                    // the run's manifest (null when the file has none)

  // Optional phases (null when the preflight did not measure them).
  std::optional<double> eval_s;
  std::string precision_low;  // "bf16" / "fp16" when the precision phase ran
  std::optional<double> step_time_s_fp32, step_time_s_low_precision;
  std::optional<double> ac_step_time_s_off, ac_recompute_s;          // activation checkpointing
  std::optional<double> ac_activation_bytes_off, ac_activation_bytes_saved;
  std::optional<double> attention_share_time, attention_share_memory;  // at attention_share_length
  std::optional<double> attention_share_length;
};

Result<PreflightInputs> LoadPreflight(const std::string& path);

}  // namespace simreplay::plan
