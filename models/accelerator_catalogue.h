// The accelerator catalogue (models/accelerator_catalogue.json, docs/planning.md): memory, HBM
// bandwidth, dense BF16 peak and intra-node link of the GPUs a plan can choose from, and the stated
// roofline-style rule that moves a step time measured on one of them to another. The JSON file is
// compiled into the binary (Builtin()); a plan may name its own catalogue file instead.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace simreplay::models {

inline constexpr const char* kAcceleratorSchema = "simreplay.accelerators/1";

struct Accelerator {
  std::string name;                   // catalogue key, e.g. "h100-sxm"
  std::string description;            // e.g. "NVIDIA H100 SXM5 80 GB"
  double memory_bytes = 0;            // device memory (decimal bytes, as the datasheet states it)
  double hbm_bytes_per_s = 0;         // peak device-memory bandwidth
  double bf16_flops_per_s = 0;        // dense BF16 peak (no sparsity)
  double intra_node_bytes_per_s = 0;  // GPU-to-GPU link inside a node, total of both directions
  std::string intra_node_link;        // NVLink3, NVLink4, PCIe Gen5 x16, Infinity Fabric
  std::string source;                 // where the numbers come from
  // Case-insensitive substrings of the driver's device name (torch.cuda.get_device_name) that identify
  // this accelerator: how a preflight's GPU is matched to a catalogue entry. Empty: never matched.
  std::vector<std::string> device_names;
  std::string software_stack = "cuda";  // "cuda", "rocm" (needs a qualified stack) or "emulated" (no GPU)

  // The emulated accelerator: no GPU, the step a sleep of the scenario's step time, which is then
  // exactly the step the planned job runs (a plan of the emulated job itself, as its validation runs).
  bool emulated() const { return software_stack == "emulated"; }

  // Whether the driver's `device_name` is this accelerator (one of device_names is a substring of it).
  bool MatchesDeviceName(const std::string& device_name) const;
};

class AcceleratorCatalogue {
 public:
  // Parses a catalogue object; `where` prefixes errors ("FILE").
  static Result<AcceleratorCatalogue> Parse(const nlohmann::json& json, const std::string& where);
  static Result<AcceleratorCatalogue> Load(const std::string& path);
  // The catalogue compiled in from models/accelerator_catalogue.json.
  static const AcceleratorCatalogue& Builtin();

  // nullptr when `name` is not in the catalogue.
  const Accelerator* Find(const std::string& name) const;
  const std::vector<Accelerator>& accelerators() const { return accelerators_; }
  // The entry whose device_names match the driver's name, or nullptr.
  const Accelerator* FindByDeviceName(const std::string& device_name) const;
  // "a100-40gb, a100-80gb, ..." for error messages.
  std::string Names() const;

 private:
  std::vector<Accelerator> accelerators_;
};

// Roofline-style step-time scaling (docs/planning.md): a step measured on `from` is split into a
// compute-bound share c (limited by the BF16 peak) and a memory-bound share 1 - c (limited by HBM
// bandwidth); each share scales by the ratio of that roof:
//   step_to = step_from x (c x F_from / F_to + (1 - c) x B_from / B_to).
// An assumption, not a measurement: real speed-ups depend on kernels, precision paths and software
// stacks. REQUIRES: 0 <= c <= 1, positive peaks.
double ScaleStepTimeS(double step_from_s, const Accelerator& from, const Accelerator& to,
                      double compute_bound_fraction);

}  // namespace simreplay::models
