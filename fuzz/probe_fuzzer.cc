// Fuzz target: a storage probe document (docs/probe-format.md) as the calibrator reads it.
#include <cstddef>
#include <cstdint>

#include "calibrate/probe_file.h"
#include "fuzz/fuzz_input.h"

using simreplay::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = simreplay::fuzz::ScratchPath(".probe.json");
  simreplay::fuzz::WriteFileOrDie(path, data, size);
  auto fit = simreplay::calibrate::LoadProbeFile(path);
  if (!fit.ok()) {
    Require(fit.status().message().rfind(path, 0) == 0, "error without the file name: " + fit.status().message());
    return 0;
  }
  if (fit->latency_s) Require(*fit->latency_s >= 0, "negative latency accepted");
  if (fit->max_useful_concurrency) {
    Require(*fit->max_useful_concurrency >= 1 && *fit->max_useful_concurrency <= 64, "concurrency out of range");
  }
  return 0;
}
