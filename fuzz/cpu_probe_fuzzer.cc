// Fuzz target: the CPU contention probe document (probe-cpu.json, "simreplay.probe-cpu/1", docs/probe-cpu.md)
// as calibrate reads it, and the two fits calibrate runs on what it accepts (contention curve, wake-up delay).
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "calibrate/cpu_probe.h"
#include "fuzz/fuzz_input.h"

using simreplay::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = simreplay::fuzz::ScratchPath(".probe-cpu.json");
  simreplay::fuzz::WriteFileOrDie(path, data, size);
  auto probe = simreplay::calibrate::ReadCpuProbeFile(path);
  if (!probe.ok()) {
    Require(probe.status().message().rfind(path, 0) == 0, "error without the file name: " + probe.status().message());
    return 0;
  }
  Require(probe->cores >= 1 && !probe->points.empty(), "accepted a probe without cores or points");
  auto curve = simreplay::calibrate::FitContentionCurve(simreplay::calibrate::ThroughputCostPoints(*probe), probe->cores);
  if (curve.ok()) Require(std::isfinite(curve->base_cost) && curve->slowdown >= 0, "non-finite contention fit");
  auto wake = simreplay::calibrate::FitWakeDelay(*probe);
  if (wake.ok()) {
    Require(wake->base_s >= 0 && wake->per_excess_s >= 0, "negative wake-up delay fitted");
    Require(std::isfinite(wake->base_s) && std::isfinite(wake->per_excess_s), "non-finite wake-up delay fitted");
  }
  return 0;
}
