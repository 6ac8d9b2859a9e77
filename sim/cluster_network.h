// Where a cluster's NIC rate and latency come from (docs/modelling.md, "Cluster links"). A scenario
// that states cluster.network.nic_bytes_per_s (or nic_latency_s) gets what it wrote, labelled
// `assumed (nominal)`: a line rate is not an achieved one. A scenario that states neither gets the
// links the model's network probe measured (`probed`), else the defaults (`assumed (default)`). The
// warnings say how far the probe's achieved rate was from its nominal one where it measured both.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/model_params.h"
#include "scenarios/scenario.h"

namespace simreplay::sim {

inline constexpr const char* kProbed = "probed";
inline constexpr const char* kAssumedNominal = "assumed (nominal)";
inline constexpr const char* kAssumedDefault = "assumed (default)";

struct ResolvedValue {
  double value = 0;
  std::string provenance;  // kProbed, kAssumedNominal or kAssumedDefault
  std::string source;      // what it came from, in words
};

struct ResolvedNetwork {
  bool used = false;  // more than one node, or shared storage read through the NICs
  ResolvedValue nic_bytes_per_s, nic_latency_s;
  // {"nic_bytes_per_s": {"value","provenance","source"}, "nic_latency_s": {...}, "label": Label()}
  nlohmann::json ToJson() const;
  // "probed", "assumed (nominal)", ... for the rate; "probed rate, assumed (nominal) latency" when
  // the two differ.
  std::string Label() const;
};

// Sets `cluster`'s NIC rate and latency as described above and appends the warnings.
ResolvedNetwork ResolveClusterNetwork(const models::ModelParams& model, bool shared_storage,
                                      scenarios::ClusterConfig* cluster, std::vector<std::string>* warnings);

}  // namespace simreplay::sim
