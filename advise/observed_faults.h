// Page-fault churn as the trace shows it (docs/advice.md, "Observed"): each sample's minor page faults
// beside its thread CPU time, fitted as cpu = no-fault cpu + faults x cost (models/page_fault_churn.h).
// A share worth naming points at the allocator, which the user can change (the allocator_churn relief
// simulates it); traces captured before samples recorded `minflt` cannot show it and say so.
#pragma once

#include <cstdint>

#include "advise/observed_records.h"
#include "models/page_fault_churn.h"

namespace simreplay::advise {

// Where the faults fall (docs/modelling.md, "Page-fault churn", "What drives it"). A process lifetime
// is a worker from its fork to its exit (one per epoch without persistent workers) or the main process
// for the whole run, its samples in start order. -1: not measurable (no faults, or no sizes recorded).
struct FaultConcentration {
  double top_tenth_share = -1;  // share of the faults in the tenth of the samples with the most
  int64_t lifetimes = 0;        // process lifetimes of kConcentrationMinSamples samples or more
  double lifetime_min_faults_per_sample = -1;  // the least and most faults per sample among them
  double lifetime_max_faults_per_sample = -1;
  // The samples that decode more pixels than kLargerThanLargest x the largest decoded before them in
  // their lifetime, and the share of the faults they took: glibc's mmap threshold follows the largest
  // block freed and the heap is trimmed above twice that, so such a sample's buffers come fresh.
  double larger_samples_share = -1;
  double larger_faults_share = -1;
};
inline constexpr int64_t kConcentrationMinSamples = 20;
inline constexpr double kLargerThanLargest = 0.5;

struct PageFaultObservation {
  bool visible = false;                  // samples with both cpu_ns and minflt
  models::PageFaultFit fit;              // over every such sample
  double worker_faults_per_sample = -1;  // samples loaded by workers; -1 = none
  double inline_faults_per_sample = -1;  // samples loaded by the main process; -1 = none
  bool worth_naming = false;             // measured, and at least kChurnShareWorthNaming of the CPU
  FaultConcentration where;
  Provenance from;
};

PageFaultObservation ObservePageFaults(const TraceRecords& records);

}  // namespace simreplay::advise
