#include "sim/platform.h"

#include <algorithm>
#include <string>

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>

#include "common/check.h"

namespace simreplay::sim {

namespace {

namespace sg4 = simgrid::s4u;
using models::Hop;
using models::LinkClass;
using simgrid::kernel::routing::NetPoint;

// The root zone: its members are the node zones (and the storage zone); the route between two members
// is computed when SimGrid asks for it (a flow starts), from the topology's closed form, instead of a
// table of every pair (N^2 routes, which is what a full zone holds). The route is the one a full zone
// would have returned for ToLinks(Route(gateway a, gateway b)): the same links in the same order, and
// the latency summed in the same order (SimGrid adds the root's part first, then each node's part).
class OnDemandRootZone final : public simgrid::kernel::routing::NetZoneImpl {
 public:
  // *topology must outlive the engine that owns this zone.
  OnDemandRootZone(const std::string& name, const models::ClusterTopology* topology)
      : NetZoneImpl(name), topology_(topology) {}

  // The links of each topology link direction (Platform::up / down), after they are created.
  void SetLinks(const Platform& platform) {
    for (size_t i = 0; i < platform.up.size(); ++i) {
      up_.push_back(platform.up[i]->get_impl());
      up_latency_s_.push_back(platform.up[i]->get_latency());
      down_.push_back(platform.down[i]->get_impl());
      down_latency_s_.push_back(platform.down[i]->get_latency());
    }
  }

  // REQUIRES: `member` is a child zone of this one; `gateway` is its netpoint standing for
  // `gateway_vertex` of the topology.
  void AddMember(sg4::NetZone* member, int gateway_vertex, NetPoint* gateway) {
    const size_t id = member->get_netpoint()->id();
    if (members_.size() <= id) members_.resize(id + 1);
    members_[id] = Member{gateway_vertex, gateway};
  }

 protected:
  void get_local_route(const NetPoint* src, const NetPoint* dst, simgrid::kernel::routing::Route* into,
                       double* latency) override {
    const Member& from = members_.at(src->id());
    const Member& to = members_.at(dst->id());
    SIMREPLAY_CHECK(from.gateway != nullptr && to.gateway != nullptr);
    into->gw_src_ = from.gateway;
    into->gw_dst_ = to.gateway;
    for (const Hop& h : topology_->Route(from.gateway_vertex, to.gateway_vertex)) {
      const auto i = static_cast<size_t>(h.link);
      into->link_list_.push_back(h.up ? up_[i] : down_[i]);
      if (latency != nullptr) *latency += h.up ? up_latency_s_[i] : down_latency_s_[i];
    }
  }

 private:
  struct Member {
    int gateway_vertex = -1;
    NetPoint* gateway = nullptr;
  };
  const models::ClusterTopology* topology_;
  std::vector<simgrid::kernel::resource::StandardLinkImpl*> up_, down_;
  std::vector<double> up_latency_s_, down_latency_s_;
  std::vector<Member> members_;  // by netpoint id in this zone
};

std::vector<sg4::LinkInRoute> ToLinks(const Platform& p, const std::vector<Hop>& route) {
  std::vector<sg4::LinkInRoute> links;
  for (const Hop& h : route) {
    links.emplace_back(h.up ? p.up[static_cast<size_t>(h.link)] : p.down[static_cast<size_t>(h.link)]);
  }
  return links;
}

// The node's CPU host: where its actors live. Their CPU work does not run on it as SimGrid executions
// but on the node's SharedCores (sim/shared_cores.h), which shares the cores as SimGrid's multi-core
// model would, contention factors included.
sg4::Host* CreateCpu(sg4::NetZone* zone, const std::string& name, const models::ModelParams& model, int cores,
                     double speed_scale) {
  auto* host = zone->create_host(name, kFlopsPerCpuSecond * model.cpu.core_speed_scale * speed_scale);
  host->set_core_count(cores);
  return host;
}

}  // namespace

Platform BuildPlatform(const models::ClusterTopology& topology, const models::ModelParams& model,
                       const RunConfig& config) {
  Platform p;
  const auto& links = topology.links();
  const bool checkpoint_to_shared =
      config.checkpoint.enabled() && config.checkpoint.target == scenarios::CheckpointTarget::kShared;
  const bool checkpoint_to_disk =
      config.checkpoint.enabled() && config.checkpoint.target == scenarios::CheckpointTarget::kLocal;
  auto* root_impl = new OnDemandRootZone("cluster", &topology);  // owned by the engine (its root zone)
  sg4::NetZone* root = root_impl->get_iface();
  const int nodes = topology.spec().nodes;
  std::vector<sg4::NetZone*> zones;
  std::vector<simgrid::kernel::routing::NetPoint*> gateways;
  // Every link is created at the root, before any node zone exists: SimGrid checks each new link's
  // name against every zone below the root, one by one, so links created with N node zones in place
  // cost O(N) each and the platform O(N^2) (most of the time at 32,768 GPUs and more). Routes refer to
  // links wherever they were created.
  p.up.resize(links.size());
  p.down.resize(links.size());
  for (const auto& link : links) {
    const size_t i = static_cast<size_t>(link.index);
    if (link.link_class == LinkClass::kPcie || (link.link_class == LinkClass::kStorage && checkpoint_to_shared)) {
      // Host-to-device copies go one way: one shared link, as on a single node before clusters existed.
      // The storage service's bandwidth serves reads and checkpoint writes together (one link for both
      // directions), so a save slows the loaders' reads; without shared-storage saves nothing goes up it.
      p.up[i] = p.down[i] = root->create_link(link.name, link.bytes_per_s)->set_latency(link.latency_s);
    } else {
      p.up[i] = root->create_link(link.name + "_UP", link.bytes_per_s)->set_latency(link.latency_s);
      p.down[i] = root->create_link(link.name + "_DOWN", link.bytes_per_s)->set_latency(link.latency_s);
    }
    p.up[i]->seal();
    if (p.down[i] != p.up[i]) p.down[i]->seal();
  }
  for (int n = 0; n < nodes; ++n) {
    auto* zone = sg4::create_full_zone("node" + std::to_string(n));
    zone->set_parent(root);
    zones.push_back(zone);
    NodeHosts hosts;
    hosts.cpu = CreateCpu(zone, "node" + std::to_string(n) + "-cpu", model, config.cpu_cores,
                          config.node_cpu_scale[static_cast<size_t>(n)]);
    hosts.disk = hosts.cpu->create_disk("disk" + std::to_string(n), model.storage.bandwidth_bytes_per_s,
                                        model.storage.bandwidth_bytes_per_s);
    // A local save writes the disk the loaders read: one device bandwidth for both.
    if (checkpoint_to_disk) hosts.disk->set_readwrite_bandwidth(model.storage.bandwidth_bytes_per_s);
    hosts.cpu->seal();
    auto* gateway = zone->create_router("node" + std::to_string(n) + "-gw");
    gateways.push_back(gateway);
    for (int g = 0; g < topology.spec().gpus_per_node; ++g) {
      auto* gpu = zone->create_host("node" + std::to_string(n) + "-gpu" + std::to_string(g), kFlopsPerCpuSecond);
      gpu->seal();
      hosts.gpus.push_back(gpu);
    }
    // Routes inside the node, in both directions, from the topology graph.
    std::vector<std::pair<simgrid::kernel::routing::NetPoint*, int>> points = {
        {hosts.cpu->get_netpoint(), topology.CpuVertex(n)}, {gateway, topology.GatewayVertex(n)}};
    for (int g = 0; g < topology.spec().gpus_per_node; ++g) {
      points.emplace_back(hosts.gpus[static_cast<size_t>(g)]->get_netpoint(),
                          topology.GpuVertex(n * topology.spec().gpus_per_node + g));
    }
    for (const auto& [a, va] : points) {
      for (const auto& [b, vb] : points) {
        if (a == b) continue;
        zone->add_route(a, b, nullptr, nullptr, ToLinks(p, topology.Route(va, vb)), false);
      }
    }
    zone->seal();
    p.nodes.push_back(std::move(hosts));
  }
  // The storage service sits in a zone of its own (SimGrid routes between zones, not zone and host).
  simgrid::kernel::routing::NetPoint* storage_gateway = nullptr;
  sg4::NetZone* storage_zone = nullptr;
  if (topology.StorageVertex() >= 0) {
    storage_zone = sg4::create_full_zone("storage");
    storage_zone->set_parent(root);
    p.storage = storage_zone->create_host("storage", kFlopsPerCpuSecond);
    p.storage->seal();
    storage_zone->seal();
    storage_gateway = p.storage->get_netpoint();
  }
  root_impl->SetLinks(p);
  for (int n = 0; n < nodes; ++n) {
    root_impl->AddMember(zones[static_cast<size_t>(n)], topology.GatewayVertex(n), gateways[static_cast<size_t>(n)]);
  }
  if (storage_zone != nullptr) root_impl->AddMember(storage_zone, topology.StorageVertex(), storage_gateway);
  root->seal();
  return p;
}

LinkClassCounts CountLinkClasses(const models::ClusterTopology& topology, const std::vector<models::Hop>& route) {
  LinkClassCounts counts{};
  for (const Hop& h : route) {
    const LinkClass c = topology.links()[static_cast<size_t>(h.link)].link_class;
    if (c != LinkClass::kPcie) ++counts[static_cast<size_t>(c)];
  }
  return counts;
}

void AddLinkBytes(const LinkClassCounts& counts, double bytes, std::array<LinkClassLoad, 5>* loads) {
  for (size_t c = 0; c < counts.size(); ++c) (*loads)[c].bytes += counts[c] * bytes;
}

}  // namespace simreplay::sim
