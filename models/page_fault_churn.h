// Page-fault churn: how much of a loader's per-sample CPU went to faulting in fresh pages.
//
// A DataLoader worker forked from a process that never decoded starts with glibc malloc's default
// thresholds: it maps each large image buffer, returns it on free (munmap, heap trim) and faults it
// back in for the next sample. Where a fresh page is cheap (bare metal, well under 1 us) that costs
// little; on a VM that hands freed memory back to its hypervisor a fault costs 10-16 us and the
// churn can take half a worker's CPU (docs/modelling.md, "Page-fault churn"). The capture records each
// sample's minor faults beside its thread CPU time (docs/trace-format.md, `minflt`); this fit splits
// the two: cpu = no_fault_cpu + faults x fault_cost, by least squares over the samples. The churn is
// not predicted for configurations nobody ran (how often a fresh worker's allocator re-faults is
// chaotic: the same point measured 22 and 149 faults per sample a minute apart); the measured share
// is what a tuned allocator would take off, which is a change the user can A/B (advise/relief.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace simreplay::models {

// Fewer samples than this, or faults that do not vary, leave the cost unmeasured.
inline constexpr int64_t kMinFaultSamples = 50;
// Named in a diagnosis (and worth a relief) from this share of the loader's CPU on.
inline constexpr double kChurnShareWorthNaming = 0.10;
// The glibc settings that keep a worker's buffers mapped (docs/modelling.md, "Page-fault churn").
inline constexpr const char* kMallocChurnFix = "MALLOC_MMAP_THRESHOLD_=16777216 MALLOC_TRIM_THRESHOLD_=268435456";

struct FaultSample {
  double cpu_s = 0;   // thread CPU time of the sample's __getitem__
  double faults = 0;  // minor page faults the thread took during it
};

struct PageFaultFit {
  int64_t samples = 0;
  double faults_per_sample = 0;  // mean
  double fault_cost_s = 0;       // CPU seconds per fault: the slope (0 when not measured)
  double fault_cost_se_s = 0;    // its standard error
  double no_fault_cpu_s = 0;     // the intercept: a sample's CPU without a fault
  double r2 = 0;
  double cpu_share = 0;   // fault_cost x all faults / all CPU, in [0, 0.95]
  bool measured = false;  // enough samples, faults vary, slope > 2 standard errors
  std::string note;       // why not measured, or what was found, in words

  nlohmann::json ToJson() const;
};

PageFaultFit FitPageFaultChurn(const std::vector<FaultSample>& samples);

// The cost of a sample loaded inline relative to the captured workers' cost: the fault share scaled by
// the inline process's faults over the workers' (a long-lived main process keeps its buffers mapped
// where a fresh worker returns and re-faults them): 1 - share x (1 - ratio).
inline double InlineCostFactor(double page_fault_cpu_share, double inline_page_fault_ratio) {
  return 1 - page_fault_cpu_share * (1 - inline_page_fault_ratio);
}

}  // namespace simreplay::models
