// The reliefs of a causal profile: each one makes a single resource of a prepared scenario point
// faster (or larger) by one factor and leaves everything else as it was, the way a causal profiler
// speeds up one thing at a time (docs/advice.md, "Causal attribution"). A relief is either a knob the
// user sets in their own job (loader settings, collective overlap, taking a straggler out), a hardware
// choice (more cores, faster storage or links), or a hypothesis nobody can set directly (faster decode
// code, a faster GPU step): the kind says which, so advice only ever recommends what can be done.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "sim/point_runner.h"

namespace simreplay::advise {

enum class ReliefKind {
  kStorageLatency,    // per-request latency / f
  kStorageBandwidth,  // device, per-stream or aggregate bandwidth x f
  kStorageReadTime,   // recorded read times / f (a trace replayed as recorded cannot split the two above)
  kStorageStreams,    // requests in flight per node x f
  kCpuCost,           // per-sample decode + augment CPU / f (faster decode code)
  kAllocatorChurn,    // per-sample decode + augment CPU without its measured page-fault share (malloc tuned)
  kCores,             // node cores x f
  kWorkers,           // loader.num_workers x f (at least 1)
  kPrefetch,          // loader.prefetch_factor x f
  kPersistentWorkers, // loader.persistent_workers = true
  kPinMemory,         // loader.pin_memory = true (when it is off)
  kPinThread,         // pin thread copy rate x f (when pin_memory is on)
  kH2d,               // PCIe host-to-device rates x f
  kGpuStep,           // GPU step time / f
  kNetwork,           // NIC, intra-node and analytic collective bandwidth x f
  kOverlap,           // collective.overlap: the exposed share (1 - overlap) / f
  kStraggler,         // the scenario's stragglers removed
};

// How a user acts on a relief.
enum class ReliefAction {
  kKnob,        // a setting of the user's job: recommended when it buys enough
  kHardware,    // a different machine, storage or network: a purchase, named as such
  kHypothesis,  // faster code or accelerator nobody can set: explains, never recommended as a change
};

struct Relief {
  ReliefKind kind;
  std::string name;      // stable id in diagnosis.json: "storage_latency", "num_workers", ...
  std::string resource;  // what it relieves: "storage", "cpu", "workers", "gpu_compute", "network", ...
  ReliefAction action;
  std::string change;    // what was simulated, in words: "num_workers 2 -> 4"
};

const char* ReliefActionName(ReliefAction a);

// The reliefs that change something for this point (a relief that would be a no-op, such as
// persistent workers when they are already on or a network relief on one GPU, is left out), in a
// fixed order. `factor` > 1.
std::vector<Relief> ApplicableReliefs(const sim::PreparedPoint& base, double factor);

// A copy of `base` with one relief applied. A loader knob is applied to the scenario and the point
// prepared again (so its extrapolation warnings are its own; `cache` shares the loaded trace); a
// resource is applied to the prepared model. CPU and read-time reliefs give the copy its own scaled
// cost table (held by its `costs`).
Result<sim::PreparedPoint> ApplyRelief(const sim::PreparedPoint& base, const Relief& relief, double factor,
                                       sim::CostCache* cache);

}  // namespace simreplay::advise
