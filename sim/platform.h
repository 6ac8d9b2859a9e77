// Turns a models::ClusterTopology into SimGrid zones: a root zone whose leaves are one zone per node
// (CPU host with C cores and the node's disk, one host per GPU, PCIe and NVLink links, a gateway
// router standing for the NIC side), the node zones joined by the topology's NIC and fabric links,
// and a storage host for shared storage. Every link but PCIe is full duplex: two SimGrid links, one
// per direction. Routes come from the topology (ClusterTopology::Route): inside a node a full zone's
// table ((G+2)^2 routes), between nodes computed by the root zone when a flow asks (no N^2 table).
#pragma once

#include <array>
#include <vector>

#include <simgrid/s4u.hpp>

#include "models/cluster_topology.h"
#include "models/model_params.h"
#include "sim/run_config.h"
#include "sim/sim_types.h"

namespace simreplay::sim {

// Host speed: one recorded CPU second is this many flops on a node's cores.
inline constexpr double kFlopsPerCpuSecond = 1e9;

struct NodeHosts {
  simgrid::s4u::Host* cpu = nullptr;
  simgrid::s4u::Disk* disk = nullptr;
  std::vector<simgrid::s4u::Host*> gpus;  // by local rank
};

struct Platform {
  std::vector<NodeHosts> nodes;
  simgrid::s4u::Host* storage = nullptr;  // shared storage service, when configured
  // Per topology link: the SimGrid link of each direction (PCIe: the same shared link twice).
  std::vector<simgrid::s4u::Link*> up, down;
  simgrid::s4u::Host* GpuOfRank(int rank, int gpus_per_node) const {
    return nodes[static_cast<size_t>(rank / gpus_per_node)].gpus[static_cast<size_t>(rank % gpus_per_node)];
  }
};

// REQUIRES: a SimGrid engine exists and no zone was created yet; `topology` outlives the engine (the
// root zone computes routes from it while the simulation runs).
Platform BuildPlatform(const models::ClusterTopology& topology, const models::ModelParams& model,
                       const RunConfig& config);

// How many links of each class (models::LinkClass order) a route crosses: a flow of B bytes adds
// B x count to each class's carried bytes (PCIe not counted).
using LinkClassCounts = std::array<int, models::kLinkClassCount>;
LinkClassCounts CountLinkClasses(const models::ClusterTopology& topology, const std::vector<models::Hop>& route);
void AddLinkBytes(const LinkClassCounts& counts, double bytes, std::array<LinkClassLoad, 5>* loads);

}  // namespace simreplay::sim
