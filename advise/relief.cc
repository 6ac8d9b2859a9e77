#include "advise/relief.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "models/page_fault_churn.h"

namespace simreplay::advise {

namespace {

bool Recorded(const sim::PreparedPoint& p) { return p.input.model.storage.mode != "model"; }
bool Tiered(const sim::PreparedPoint& p) { return !p.input.scenario.storage.tiers.empty(); }
bool Shared(const sim::PreparedPoint& p) { return p.input.scenario.storage.kind == scenarios::StorageKind::kShared; }

int Ranks(const sim::PreparedPoint& p) { return p.input.scenario.cluster.nodes * p.input.scenario.hardware.gpus; }

double GradientBytes(const sim::PreparedPoint& p) {
  const auto& c = p.input.scenario.collective;
  return c.gradient_bytes >= 0 ? c.gradient_bytes : p.input.model.collective.gradient_bytes;
}

bool Communicates(const sim::PreparedPoint& p) {
  return Ranks(p) > 1 && (GradientBytes(p) > 0 || p.input.model.collective.time_per_step_s > 0 ||
                          p.input.scenario.collective.sharding == scenarios::Sharding::kFull);
}

// Reads that a storage relief could speed up: the trace reads something.
bool ReadsData(const sim::PreparedPoint& p) {
  for (const auto& s : p.costs->samples) {
    if (s.read_s > 0 || s.read_bytes > 0) return true;
  }
  return false;
}

// A copy of the point's cost table with `edit` applied to every sample.
template <typename Edit>
void ScaleCosts(sim::PreparedPoint* p, Edit edit) {
  auto table = std::make_shared<replay::SampleCostTable>(*p->costs);
  for (auto& s : table->samples) edit(&s);
  p->costs = std::move(table);
  p->input.costs = p->costs.get();
}

// A loader knob: the scenario changed and prepared again, as the user's run would be.
Result<sim::PreparedPoint> Reprepare(const sim::PreparedPoint& base, const scenarios::LoaderConfig& loader,
                                     sim::CostCache* cache) {
  scenarios::Scenario s = base.input.scenario;
  s.loader = loader;
  return sim::PreparePoint(s, cache);
}

}  // namespace

const char* ReliefActionName(ReliefAction a) {
  switch (a) {
    case ReliefAction::kKnob: return "knob";
    case ReliefAction::kHardware: return "hardware";
    case ReliefAction::kHypothesis: return "hypothesis";
  }
  return "?";
}

std::vector<Relief> ApplicableReliefs(const sim::PreparedPoint& p, double f) {
  std::vector<Relief> out;
  const auto& s = p.input.scenario;
  const auto& loader = s.loader;
  const std::string x = fmt::format("x{:g}", f), over = fmt::format("/{:g}", f);
  auto add = [&](ReliefKind kind, const char* name, const char* resource, ReliefAction action, std::string change) {
    out.push_back({kind, name, resource, action, std::move(change)});
  };
  if (ReadsData(p)) {
    if (Recorded(p) && !Tiered(p) && !Shared(p)) {
      add(ReliefKind::kStorageReadTime, "storage_read_time", "storage", ReliefAction::kHardware,
          "every recorded read time " + over + " (the trace is replayed as recorded: latency and bandwidth together)");
    } else {
      add(ReliefKind::kStorageLatency, "storage_latency", "storage", ReliefAction::kHardware,
          "storage request latency " + over);
      add(ReliefKind::kStorageBandwidth, "storage_bandwidth", "storage", ReliefAction::kHardware,
          "storage bandwidth " + x);
      const bool limited_tier = Tiered(p) && std::any_of(s.storage.tiers.begin(), s.storage.tiers.end(),
                                                          [](const models::StorageTier& t) { return t.max_streams > 0; });
      if (limited_tier || (!Tiered(p) && !Shared(p))) {
        add(ReliefKind::kStorageStreams, "storage_streams", "storage", ReliefAction::kHardware,
            "requests in flight per node " + x);
      }
    }
  }
  add(ReliefKind::kCpuCost, "decode_cpu_cost", "cpu", ReliefAction::kHypothesis,
      "per-sample decode + augment CPU time " + over + " (faster decode code)");
  // Not scaled by f: the change takes off what the capture measured, no more.
  const double churn = p.input.model.cpu.page_fault_cpu_share;
  if (churn >= models::kChurnShareWorthNaming) {
    add(ReliefKind::kAllocatorChurn, "allocator_churn", "cpu", ReliefAction::kKnob,
        fmt::format("glibc malloc keeps the loader's buffers mapped ({} in its environment): per-sample decode + "
                    "augment CPU x {:.2f}, without the {:.0f}% the capture measured in page faults",
                    models::kMallocChurnFix, 1 - churn, 100 * churn));
  }
  add(ReliefKind::kCores, "cpu_cores", "cpu", ReliefAction::kHardware,
      fmt::format("cores per node {} -> {}", p.input.cpu_cores, static_cast<int>(std::ceil(p.input.cpu_cores * f))));
  const int more_workers = std::max(1, static_cast<int>(std::ceil(loader.num_workers * f)));
  add(ReliefKind::kWorkers, "num_workers", "workers", ReliefAction::kKnob,
      fmt::format("num_workers {} -> {}", loader.num_workers, more_workers));
  if (loader.num_workers > 0) {
    add(ReliefKind::kPrefetch, "prefetch_factor", "prefetch", ReliefAction::kKnob,
        fmt::format("prefetch_factor {} -> {}", loader.prefetch_factor,
                    static_cast<int>(std::ceil(loader.prefetch_factor * f))));
    if (!loader.persistent_workers) {
      add(ReliefKind::kPersistentWorkers, "persistent_workers", "epoch_restarts", ReliefAction::kKnob,
          "persistent_workers false -> true");
    }
  }
  if (!loader.pin_memory) {
    add(ReliefKind::kPinMemory, "pin_memory", "h2d", ReliefAction::kKnob, "pin_memory false -> true");
  } else {
    add(ReliefKind::kPinThread, "pin_thread", "pin_memory", ReliefAction::kHypothesis, "pin thread copy rate " + x);
  }
  add(ReliefKind::kH2d, "h2d_bandwidth", "h2d", ReliefAction::kHardware, "host-to-device bandwidth " + x);
  add(ReliefKind::kGpuStep, "gpu_step", "gpu_compute", ReliefAction::kHypothesis, "GPU step time " + over);
  if (Communicates(p) || (Shared(p) && Ranks(p) > 1)) {
    add(ReliefKind::kNetwork, "network_bandwidth", "network", ReliefAction::kHardware,
        "NIC, intra-node and collective bandwidth " + x);
  }
  if (Communicates(p) && s.collective.overlap < 1) {
    add(ReliefKind::kOverlap, "collective_overlap", "collective", ReliefAction::kKnob,
        fmt::format("collective.overlap {:g} -> {:g} (exposed share {})", s.collective.overlap,
                    1 - (1 - s.collective.overlap) / f, over));
  }
  if (!s.cluster.stragglers.empty()) {
    add(ReliefKind::kStraggler, "straggler", "straggler", ReliefAction::kKnob,
        fmt::format("{} straggler(s) replaced by healthy nodes", s.cluster.stragglers.size()));
  }
  return out;
}

Result<sim::PreparedPoint> ApplyRelief(const sim::PreparedPoint& base, const Relief& relief, double f,
                                       sim::CostCache* cache) {
  scenarios::LoaderConfig loader = base.input.scenario.loader;
  switch (relief.kind) {
    case ReliefKind::kWorkers:
      loader.num_workers = std::max(1, static_cast<int>(std::ceil(loader.num_workers * f)));
      return Reprepare(base, loader, cache);
    case ReliefKind::kPrefetch:
      loader.prefetch_factor = static_cast<int>(std::ceil(loader.prefetch_factor * f));
      return Reprepare(base, loader, cache);
    case ReliefKind::kPersistentWorkers:
      loader.persistent_workers = true;
      return Reprepare(base, loader, cache);
    case ReliefKind::kPinMemory:
      loader.pin_memory = true;
      return Reprepare(base, loader, cache);
    default:
      break;
  }
  sim::PreparedPoint p = base;
  auto& in = p.input;
  auto& model = in.model;
  auto& sc = in.scenario;
  switch (relief.kind) {
    case ReliefKind::kStorageReadTime:
      ScaleCosts(&p, [f](replay::SampleCost* s) { s->read_s /= f; });
      break;
    case ReliefKind::kStorageLatency:
      model.storage.latency_s /= f;
      sc.storage.latency_s /= f;
      for (auto& t : sc.storage.tiers) {
        if (t.latency_s > 0) t.latency_s /= f;
      }
      // A tier replayed as captured has one recorded time for latency and transfer together.
      if (std::any_of(sc.storage.tiers.begin(), sc.storage.tiers.end(),
                      [](const models::StorageTier& t) { return t.AsCaptured(); })) {
        ScaleCosts(&p, [f](replay::SampleCost* s) { s->read_s /= f; });
      }
      break;
    case ReliefKind::kStorageBandwidth:
      model.storage.bandwidth_bytes_per_s *= f;
      model.storage.page_cache_bytes_per_s *= f;
      sc.storage.aggregate_bytes_per_s *= f;
      for (auto& t : sc.storage.tiers) {
        if (t.bytes_per_s_per_stream > 0) t.bytes_per_s_per_stream *= f;
      }
      break;
    case ReliefKind::kStorageStreams:
      model.storage.max_concurrency = static_cast<int>(std::ceil(model.storage.max_concurrency * f));
      for (auto& t : sc.storage.tiers) {
        if (t.max_streams > 0) t.max_streams = static_cast<int>(std::ceil(t.max_streams * f));
      }
      break;
    case ReliefKind::kCpuCost:
      ScaleCosts(&p, [f](replay::SampleCost* s) {
        s->decode_s /= f;
        s->augment_s /= f;
      });
      break;
    case ReliefKind::kAllocatorChurn: {
      const double keep = 1 - model.cpu.page_fault_cpu_share;
      ScaleCosts(&p, [keep](replay::SampleCost* s) {
        s->decode_s *= keep;
        s->augment_s *= keep;
      });
      model.cpu.page_fault_cpu_share = 0;
      break;
    }
    case ReliefKind::kCores:
      in.cpu_cores = static_cast<int>(std::ceil(in.cpu_cores * f));
      sc.hardware.cpu_cores = in.cpu_cores;
      break;
    case ReliefKind::kPinThread:
      model.cpu.pin_bytes_per_s *= f;
      break;
    case ReliefKind::kH2d:
      model.pcie.h2d_pinned_bytes_per_s *= f;
      model.pcie.h2d_pageable_bytes_per_s *= f;
      break;
    case ReliefKind::kGpuStep:
      in.step_time_s /= f;
      break;
    case ReliefKind::kNetwork:
      sc.cluster.nic_bytes_per_s *= f;
      sc.cluster.intra_node_bytes_per_s *= f;
      model.collective.bus_bytes_per_s *= f;
      model.collective.time_per_step_s /= f;
      break;
    case ReliefKind::kOverlap:
      sc.collective.overlap = 1 - (1 - sc.collective.overlap) / f;
      break;
    case ReliefKind::kStraggler:
      sc.cluster.stragglers.clear();
      break;
    default:
      return Status::Internal("relief " + relief.name + " is a loader knob");
  }
  return p;
}

}  // namespace simreplay::advise
