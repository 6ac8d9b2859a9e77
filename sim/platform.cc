#include "sim/platform.h"

#include <algorithm>
#include <string>

namespace simreplay::sim {

namespace {

namespace sg4 = simgrid::s4u;
using models::Hop;
using models::LinkClass;

std::vector<sg4::LinkInRoute> ToLinks(const Platform& p, const std::vector<Hop>& route) {
  std::vector<sg4::LinkInRoute> links;
  for (const Hop& h : route) {
    links.emplace_back(h.up ? p.up[static_cast<size_t>(h.link)] : p.down[static_cast<size_t>(h.link)]);
  }
  return links;
}

// The node's CPU host: C cores at the model's speed (x a straggler's factor), slowed by contention.
sg4::Host* CreateCpu(sg4::NetZone* zone, const std::string& name, const models::ModelParams& model, int cores,
                     double speed_scale) {
  auto* host = zone->create_host(name, kFlopsPerCpuSecond * model.cpu.core_speed_scale * speed_scale);
  host->set_core_count(cores);
  const double slowdown = model.cpu.busy_core_slowdown;
  const double overhead = model.cpu.oversubscription_overhead;
  if ((slowdown > 0 && cores > 1) || overhead > 0) {
    // The node's capacity with n executions running: min(n, C) cores, every execution's cost
    // multiplied by the contention factor f(n) (models/model_params.h: shared-core slowdown, then
    // oversubscription overhead beyond C). Single-threaded executions stay capped at one core each.
    host->set_sharing_policy(sg4::Host::SharingPolicy::NONLINEAR, [slowdown, overhead, cores](double capacity, int n) {
      const int busy = std::min(std::max(n, 1), cores);
      const double shared = cores > 1 ? 1.0 + slowdown * (busy - 1) / (cores - 1) : 1.0;
      const double switching = 1.0 + overhead * std::max(0, n - cores) / cores;
      return capacity / cores * busy / (shared * switching);
    });
  }
  return host;
}

}  // namespace

Platform BuildPlatform(const models::ClusterTopology& topology, const models::ModelParams& model,
                       const RunConfig& config) {
  Platform p;
  const auto& links = topology.links();
  auto* root = sg4::create_full_zone("cluster");
  const int nodes = topology.spec().nodes;
  std::vector<sg4::NetZone*> zones;
  std::vector<simgrid::kernel::routing::NetPoint*> gateways;
  for (int n = 0; n < nodes; ++n) {
    auto* zone = sg4::create_full_zone("node" + std::to_string(n));
    zone->set_parent(root);
    zones.push_back(zone);
  }
  // Links live in the zone that uses them: intra-node links in the node's zone, the rest at the root.
  p.up.resize(links.size());
  p.down.resize(links.size());
  for (const auto& link : links) {
    const auto& from = topology.graph()[static_cast<size_t>(link.from)];
    sg4::NetZone* zone = (link.link_class == LinkClass::kPcie || link.link_class == LinkClass::kIntraNode)
                             ? zones[static_cast<size_t>(from.node)]
                             : root;
    const size_t i = static_cast<size_t>(link.index);
    if (link.link_class == LinkClass::kPcie) {
      // Host-to-device copies go one way: one shared link, as on a single node before clusters existed.
      p.up[i] = p.down[i] = zone->create_link(link.name, link.bytes_per_s)->set_latency(link.latency_s);
    } else {
      p.up[i] = zone->create_link(link.name + "_UP", link.bytes_per_s)->set_latency(link.latency_s);
      p.down[i] = zone->create_link(link.name + "_DOWN", link.bytes_per_s)->set_latency(link.latency_s);
    }
    p.up[i]->seal();
    if (p.down[i] != p.up[i]) p.down[i]->seal();
  }
  for (int n = 0; n < nodes; ++n) {
    auto* zone = zones[static_cast<size_t>(n)];
    NodeHosts hosts;
    hosts.cpu = CreateCpu(zone, "node" + std::to_string(n) + "-cpu", model, config.cpu_cores,
                          config.node_cpu_scale[static_cast<size_t>(n)]);
    hosts.disk = hosts.cpu->create_disk("disk" + std::to_string(n), model.storage.bandwidth_bytes_per_s,
                                        model.storage.bandwidth_bytes_per_s);
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
  for (int a = 0; a < nodes; ++a) {
    for (int b = 0; b < nodes; ++b) {
      if (a == b) continue;
      root->add_route(zones[static_cast<size_t>(a)]->get_netpoint(), zones[static_cast<size_t>(b)]->get_netpoint(),
                      gateways[static_cast<size_t>(a)], gateways[static_cast<size_t>(b)],
                      ToLinks(p, topology.Route(topology.GatewayVertex(a), topology.GatewayVertex(b))), false);
    }
    if (storage_gateway != nullptr) {
      auto* zone = zones[static_cast<size_t>(a)]->get_netpoint();
      root->add_route(storage_zone->get_netpoint(), zone, storage_gateway, gateways[static_cast<size_t>(a)],
                      ToLinks(p, topology.Route(topology.StorageVertex(), topology.GatewayVertex(a))), false);
      root->add_route(zone, storage_zone->get_netpoint(), gateways[static_cast<size_t>(a)], storage_gateway,
                      ToLinks(p, topology.Route(topology.GatewayVertex(a), topology.StorageVertex())), false);
    }
  }
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
