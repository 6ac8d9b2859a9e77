#include "models/cluster_topology.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

#include <boost/graph/depth_first_search.hpp>

#include "common/check.h"

namespace simreplay::models {

const char* LinkClassName(LinkClass c) {
  static const char* kNames[] = {"pcie", "intra_node", "nic", "fabric", "storage"};
  return kNames[static_cast<int>(c)];
}

ClusterTopology::ClusterTopology(const ClusterSpec& spec) : spec_(spec) {
  SIMREPLAY_CHECK(spec.nodes >= 1 && spec.gpus_per_node >= 1);
  // Switching layer first, so that a depth-first walk from vertex 0 reaches nodes in order.
  if (spec.shape == TopologyShape::kStar) {
    root_ = AddVertex(VertexKind::kSwitch, -1, -1, "switch");
  } else {
    const int spines = static_cast<int>(std::lround(spec.nodes_per_switch / spec.oversubscription));
    SIMREPLAY_CHECK(spines >= 1);
    for (int s = 0; s < spines; ++s)
      spine_.push_back(AddVertex(VertexKind::kSwitch, -1, -1, "spine" + std::to_string(s)));
    root_ = spine_[0];
    const int leaves = (spec.nodes + spec.nodes_per_switch - 1) / spec.nodes_per_switch;
    for (int l = 0; l < leaves; ++l) {
      leaf_.push_back(AddVertex(VertexKind::kSwitch, -1, -1, "leaf" + std::to_string(l)));
      for (int s = 0; s < spines; ++s) {
        leaf_spine_link_.push_back(AddLink(leaf_.back(), spine_[static_cast<size_t>(s)], LinkClass::kFabric,
                                           spec.nic_bytes_per_s, spec.nic_latency_s,
                                           "leaf" + std::to_string(l) + "-spine" + std::to_string(s)));
      }
    }
  }
  for (int n = 0; n < spec.nodes; ++n) {
    const std::string node = "node" + std::to_string(n);
    gateway_.push_back(AddVertex(VertexKind::kGateway, n, -1, node + "-nic"));
    const int uplink =
        spec.shape == TopologyShape::kStar ? root_ : leaf_[static_cast<size_t>(n / spec.nodes_per_switch)];
    nic_link_.push_back(
        AddLink(gateway_.back(), uplink, LinkClass::kNic, spec.nic_bytes_per_s, spec.nic_latency_s, node + "-nic"));
    cpu_.push_back(AddVertex(VertexKind::kCpu, n, -1, node + "-cpu"));
    // Host memory to the NIC (reads from shared storage land here) over the host's PCIe.
    host_link_.push_back(
        AddLink(cpu_.back(), gateway_.back(), LinkClass::kPcie, spec.pcie_bytes_per_s, 0, node + "-hostlink"));
    for (int g = 0; g < spec.gpus_per_node; ++g) {
      const std::string gpu = node + "-gpu" + std::to_string(g);
      gpu_.push_back(AddVertex(VertexKind::kGpu, n, g, gpu));
      // NVLink/NVSwitch: each GPU's own link to the node's switch, which the gateway stands for.
      nvlink_link_.push_back(AddLink(gpu_.back(), gateway_.back(), LinkClass::kIntraNode, spec.intra_node_bytes_per_s,
                                     spec.intra_node_latency_s, gpu + "-nvlink"));
      pcie_link_.push_back(AddLink(cpu_.back(), gpu_.back(), LinkClass::kPcie, spec.pcie_bytes_per_s,
                                   spec.pcie_latency_s, gpu + "-pcie"));
    }
  }
  if (spec.shared_storage) {
    // One storage service behind one link of the aggregate bandwidth, reachable from every top switch.
    storage_ = AddVertex(VertexKind::kStorage, -1, -1, "storage");
    const int front = AddVertex(VertexKind::kSwitch, -1, -1, "storage-switch");
    storage_link_ = AddLink(storage_, front, LinkClass::kStorage, spec.storage_bytes_per_s, 0, "storage");
    const std::vector<int> tops = spine_.empty() ? std::vector<int>{root_} : spine_;
    for (int t : tops) {
      storage_top_link_.push_back(
          AddLink(front, t, LinkClass::kFabric, spec.storage_bytes_per_s, 0, "storage-" + graph_[t].name));
    }
  }
}

int ClusterTopology::AddVertex(VertexKind kind, int node, int local, std::string name) {
  return static_cast<int>(boost::add_vertex(ClusterVertex{kind, node, local, std::move(name)}, graph_));
}

int ClusterTopology::AddLink(int from, int to, LinkClass c, double bytes_per_s, double latency_s, std::string name) {
  ClusterLink link{c, bytes_per_s, latency_s, from, static_cast<int>(links_.size()), std::move(name)};
  boost::add_edge(from, to, link, graph_);
  links_.push_back(std::move(link));
  return links_.back().index;
}

// Breadth-first search over the graph; edges are numbered in insertion order (links_).
std::vector<Hop> ClusterTopology::ShortestPath(int from_vertex, int to_vertex) const {
  const size_t n = boost::num_vertices(graph_);
  std::vector<int> via_link(n, -1), previous(n, -1);
  std::vector<bool> seen(n, false);
  std::queue<int> frontier;
  frontier.push(from_vertex);
  seen[static_cast<size_t>(from_vertex)] = true;
  while (!frontier.empty() && !seen[static_cast<size_t>(to_vertex)]) {
    int u = frontier.front();
    frontier.pop();
    for (auto [e, end] = boost::out_edges(u, graph_); e != end; ++e) {
      int v = static_cast<int>(boost::target(*e, graph_));
      if (seen[static_cast<size_t>(v)]) continue;
      // Do not route through a GPU or CPU (they are end points, not switches).
      const auto kind = graph_[static_cast<size_t>(v)].kind;
      if (v != to_vertex && (kind == VertexKind::kGpu || kind == VertexKind::kCpu || kind == VertexKind::kStorage))
        continue;
      seen[static_cast<size_t>(v)] = true;
      previous[static_cast<size_t>(v)] = u;
      via_link[static_cast<size_t>(v)] = graph_[*e].index;
      frontier.push(v);
    }
  }
  SIMREPLAY_CHECK(seen[static_cast<size_t>(to_vertex)]);
  std::vector<Hop> path;
  for (int v = to_vertex; v != from_vertex; v = previous[static_cast<size_t>(v)]) {
    const int link = via_link[static_cast<size_t>(v)];
    path.push_back(Hop{link, links_[static_cast<size_t>(link)].from == previous[static_cast<size_t>(v)]});
  }
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<Hop> ClusterTopology::SearchRoute(int from_vertex, int to_vertex) const {
  if (from_vertex == to_vertex) return {};
  const auto& a = graph_[static_cast<size_t>(from_vertex)];
  const auto& b = graph_[static_cast<size_t>(to_vertex)];
  const bool across_leaves = !spine_.empty() && (a.node < 0 || b.node < 0 ||
                                                 a.node / spec_.nodes_per_switch != b.node / spec_.nodes_per_switch);
  if (!across_leaves || (a.node < 0 && b.node < 0)) return ShortestPath(from_vertex, to_vertex);
  // Deterministic ECMP: pick the spine from the end points, then the unique path to and from it.
  const int spine = spine_[static_cast<size_t>(Spine(std::max(a.node, 0), std::max(b.node, 0)))];
  std::vector<Hop> path = ShortestPath(from_vertex, spine);
  std::vector<Hop> rest = ShortestPath(spine, to_vertex);
  path.insert(path.end(), rest.begin(), rest.end());
  return path;
}

int ClusterTopology::Spine(int from_node, int to_node) const {
  return (from_node + to_node) % static_cast<int>(spine_.size());
}

// The closed forms below are the shortest paths of the graph built in the constructor: a GPU reaches
// its node's gateway over its NVLink link, the CPU over its host link (routes never pass through a
// CPU, GPU or the storage host, only end there); gateways meet at the star switch, at their common
// leaf, or through the ECMP spine.
void ClusterTopology::AppendToGateway(int vertex, std::vector<Hop>* route) const {
  const auto& v = graph_[static_cast<size_t>(vertex)];
  if (v.kind == VertexKind::kGpu) {
    route->push_back({nvlink_link_[static_cast<size_t>(v.node * spec_.gpus_per_node + v.local)], true});
  } else if (v.kind == VertexKind::kCpu) {
    route->push_back({host_link_[static_cast<size_t>(v.node)], true});
  }
}

void ClusterTopology::AppendFromGateway(int vertex, std::vector<Hop>* route) const {
  const auto& v = graph_[static_cast<size_t>(vertex)];
  if (v.kind == VertexKind::kGpu) {
    route->push_back({nvlink_link_[static_cast<size_t>(v.node * spec_.gpus_per_node + v.local)], false});
  } else if (v.kind == VertexKind::kCpu) {
    route->push_back({host_link_[static_cast<size_t>(v.node)], false});
  }
}

void ClusterTopology::AppendBetweenGateways(int from_node, int to_node, std::vector<Hop>* route) const {
  route->push_back({nic_link_[static_cast<size_t>(from_node)], true});
  const int from_leaf = from_node / spec_.nodes_per_switch, to_leaf = to_node / spec_.nodes_per_switch;
  if (!spine_.empty() && from_leaf != to_leaf) {
    const size_t spines = spine_.size(), spine = static_cast<size_t>(Spine(from_node, to_node));
    route->push_back({leaf_spine_link_[static_cast<size_t>(from_leaf) * spines + spine], true});
    route->push_back({leaf_spine_link_[static_cast<size_t>(to_leaf) * spines + spine], false});
  }
  route->push_back({nic_link_[static_cast<size_t>(to_node)], false});
}

void ClusterTopology::AppendGatewayStorage(int node, bool to_storage, std::vector<Hop>* route) const {
  // Storage -> storage switch -> top switch (the star switch, or the ECMP spine with storage as node 0)
  // -> the node's leaf -> its gateway; the other way round reversed.
  const size_t top = spine_.empty() ? 0 : static_cast<size_t>(Spine(0, node));
  std::vector<Hop> hops = {{storage_link_, true}, {storage_top_link_[top], true}};
  if (!spine_.empty()) {
    hops.push_back({leaf_spine_link_[static_cast<size_t>(node / spec_.nodes_per_switch) * spine_.size() + top], false});
  }
  hops.push_back({nic_link_[static_cast<size_t>(node)], false});
  if (to_storage) {
    std::reverse(hops.begin(), hops.end());
    for (Hop& h : hops) h.up = !h.up;
  }
  route->insert(route->end(), hops.begin(), hops.end());
}

std::vector<Hop> ClusterTopology::Route(int from_vertex, int to_vertex) const {
  if (from_vertex == to_vertex) return {};
  const auto& a = graph_[static_cast<size_t>(from_vertex)];
  const auto& b = graph_[static_cast<size_t>(to_vertex)];
  const bool a_storage = a.kind == VertexKind::kStorage, b_storage = b.kind == VertexKind::kStorage;
  if ((a.node < 0 && !a_storage) || (b.node < 0 && !b_storage) || (a_storage && b_storage)) {
    return SearchRoute(from_vertex, to_vertex);  // a switch at an end: not on any simulated path
  }
  std::vector<Hop> route;
  if (a_storage) {
    AppendGatewayStorage(b.node, false, &route);
    AppendFromGateway(to_vertex, &route);
  } else if (b_storage) {
    AppendToGateway(from_vertex, &route);
    AppendGatewayStorage(a.node, true, &route);
  } else if (a.node != b.node) {
    AppendToGateway(from_vertex, &route);
    AppendBetweenGateways(a.node, b.node, &route);
    AppendFromGateway(to_vertex, &route);
  } else if (a.kind == VertexKind::kCpu && b.kind == VertexKind::kGpu) {
    route.push_back({pcie_link_[static_cast<size_t>(b.node * spec_.gpus_per_node + b.local)], true});
  } else if (a.kind == VertexKind::kGpu && b.kind == VertexKind::kCpu) {
    route.push_back({pcie_link_[static_cast<size_t>(a.node * spec_.gpus_per_node + a.local)], false});
  } else {
    AppendToGateway(from_vertex, &route);
    AppendFromGateway(to_vertex, &route);
  }
  return route;
}

double ClusterTopology::RouteLatencyS(const std::vector<Hop>& route) const {
  double latency_s = 0;
  for (const Hop& h : route) latency_s += links_[static_cast<size_t>(h.link)].latency_s;
  return latency_s;
}

double ClusterTopology::RouteBytesPerS(const std::vector<Hop>& route) const {
  double bytes_per_s = std::numeric_limits<double>::infinity();
  for (const Hop& h : route) bytes_per_s = std::min(bytes_per_s, links_[static_cast<size_t>(h.link)].bytes_per_s);
  return bytes_per_s;
}

namespace {

// Records GPU vertices in discovery order.
class GpuOrderVisitor : public boost::default_dfs_visitor {
 public:
  explicit GpuOrderVisitor(std::vector<int>* order) : order_(order) {}
  void discover_vertex(ClusterGraph::vertex_descriptor v, const ClusterGraph& g) const {
    if (g[v].kind == VertexKind::kGpu) order_->push_back(static_cast<int>(v));
  }

 private:
  std::vector<int>* order_;
};

}  // namespace

std::vector<int> ClusterTopology::RingOrder() const {
  std::vector<int> gpu_vertices;
  std::vector<boost::default_color_type> colors(boost::num_vertices(graph_));
  boost::depth_first_visit(graph_, static_cast<size_t>(root_), GpuOrderVisitor(&gpu_vertices),
                           boost::make_iterator_property_map(colors.begin(), boost::get(boost::vertex_index, graph_)));
  // The walk reaches a GPU from its node's gateway (NVLink) or its CPU (PCIe): either way node by node.
  std::vector<int> order;
  for (int v : gpu_vertices) {
    const auto& vertex = graph_[static_cast<size_t>(v)];
    order.push_back(vertex.node * spec_.gpus_per_node + vertex.local);
  }
  // Within a node the walk may meet GPUs through the CPU's PCIe links in edge order: keep local order.
  std::stable_sort(order.begin(), order.end(),
                   [this](int x, int y) { return NodeOf(x) < NodeOf(y) || (NodeOf(x) == NodeOf(y) && x < y); });
  return order;
}

std::vector<BinaryTree> DoubleBinaryTree(int n) {
  std::vector<int> parent0(static_cast<size_t>(n), -1);
  for (int r = 1; r < n; ++r) {
    int bit = 1;
    while (!(bit & r)) bit <<= 1;
    int up = (r ^ bit) | (bit << 1);
    if (up >= n) up = r ^ bit;
    parent0[static_cast<size_t>(r)] = up;
  }
  auto build = [n](const std::vector<int>& parent) {
    BinaryTree t;
    t.parent = parent;
    t.children.assign(static_cast<size_t>(n), {});
    for (int r = 0; r < n; ++r) {
      if (parent[static_cast<size_t>(r)] >= 0)
        t.children[static_cast<size_t>(parent[static_cast<size_t>(r)])].push_back(r);
      int d = 0;
      for (int p = r; parent[static_cast<size_t>(p)] >= 0; p = parent[static_cast<size_t>(p)]) ++d;
      t.depth = std::max(t.depth, d);
    }
    return t;
  };
  // Tree 1 relabels tree 0: mirror for even n, shift by one for odd n (as NCCL does).
  auto map = [n](int p) { return n % 2 == 0 ? n - 1 - p : (p + 1) % n; };
  auto unmap = [n](int q) { return n % 2 == 0 ? n - 1 - q : (q - 1 + n) % n; };
  std::vector<int> parent1(static_cast<size_t>(n), -1);
  for (int r = 0; r < n; ++r) {
    const int p = parent0[static_cast<size_t>(map(r))];
    parent1[static_cast<size_t>(r)] = p < 0 ? -1 : unmap(p);
  }
  return {build(parent0), build(parent1)};
}

}  // namespace simreplay::models
