// The figures `simreplay plan` takes from a preflight run (python3 -m simreplay_capture.preflight,
// docs/preflight-format.md, its "measured" block): step time, peak memory, checkpoint bytes and
// bandwidths, restart time. Each figure present (not null) replaces the plan's assumption and is
// reported as measured; a preflight whose checks failed is refused.
#pragma once

#include <optional>
#include <string>

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
};

Result<PreflightInputs> LoadPreflight(const std::string& path);

}  // namespace simreplay::plan
