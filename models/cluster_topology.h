// A cluster as data: nodes (one CPU host, G GPUs and a NIC gateway each), switches and full-duplex
// links, held in a Boost.Graph. No SimGrid here: sim/platform.cc turns it into SimGrid zones, and the
// topology answers the questions the collectives and the closed forms ask (routes, ring order, double
// binary trees, the latency of a path). docs/modelling.md ("Clusters") describes the shapes.
// Routes between node vertices and storage are closed forms (O(1) hops, no search), so a cluster of N
// nodes costs O(N) to build and every route is computed when asked.
#pragma once

#include <string>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

namespace simreplay::models {

enum class VertexKind { kCpu, kGpu, kGateway, kSwitch, kStorage };
// Link classes reported in results (network utilisation per class).
enum class LinkClass { kPcie, kIntraNode, kNic, kFabric, kStorage };
inline constexpr int kLinkClassCount = 5;
const char* LinkClassName(LinkClass c);

enum class TopologyShape { kStar, kFatTree };

struct ClusterSpec {
  int nodes = 1;
  int gpus_per_node = 1;
  TopologyShape shape = TopologyShape::kStar;
  int nodes_per_switch = 8;         // fat-tree leaf switch: nodes below it
  double oversubscription = 1;      // fat-tree: nodes_per_switch / spine switches (each link at NIC rate)
  double nic_bytes_per_s = 12.5e9;  // all NICs of a node together (nics_per_node x one NIC), each direction
  double nic_latency_s = 5e-6;
  double intra_node_bytes_per_s = 300e9;
  double intra_node_latency_s = 2e-6;
  double pcie_bytes_per_s = 24e9;
  double pcie_latency_s = 10e-6;
  bool shared_storage = false;
  double storage_bytes_per_s = 2e9;  // shared storage: aggregate cap
};

struct ClusterVertex {
  VertexKind kind = VertexKind::kSwitch;
  int node = -1;   // owning node (CPU, GPU, gateway)
  int local = -1;  // GPU: local rank
  std::string name;
};

// One full-duplex link. `up` is the direction from `from` towards the other end (the edge's source
// as added); each direction has the whole bandwidth.
struct ClusterLink {
  LinkClass link_class = LinkClass::kFabric;
  double bytes_per_s = 0;
  double latency_s = 0;
  int from = -1;   // vertex the "up" direction leaves
  int index = -1;  // position in ClusterTopology::links()
  std::string name;
};

using ClusterGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, ClusterVertex, ClusterLink>;

// One traversed link of a route: the edge and whether it is crossed in its "up" direction.
struct Hop {
  int link = -1;  // index into ClusterTopology::links()
  bool up = true;
};

class ClusterTopology {
 public:
  // REQUIRES: spec.nodes >= 1, spec.gpus_per_node >= 1; for a fat-tree, nodes_per_switch /
  // oversubscription is a whole number >= 1.
  explicit ClusterTopology(const ClusterSpec& spec);

  const ClusterSpec& spec() const { return spec_; }
  const ClusterGraph& graph() const { return graph_; }
  int ranks() const { return spec_.nodes * spec_.gpus_per_node; }
  int NodeOf(int rank) const { return rank / spec_.gpus_per_node; }
  int LocalOf(int rank) const { return rank % spec_.gpus_per_node; }
  int CpuVertex(int node) const { return cpu_[static_cast<size_t>(node)]; }
  int GatewayVertex(int node) const { return gateway_[static_cast<size_t>(node)]; }
  int GpuVertex(int rank) const { return gpu_[static_cast<size_t>(rank)]; }
  int StorageVertex() const { return storage_; }  // -1 without shared storage
  int spines() const { return static_cast<int>(spine_.size()); }
  // Links in edge order (the index a Hop refers to).
  const std::vector<ClusterLink>& links() const { return links_; }

  // The route between two vertices: the unique shortest path inside a node, and across the network
  // the path through spine (src_node + dst_node) mod spines in a fat-tree (deterministic ECMP; storage
  // counts as node 0). Closed form between CPU, GPU, gateway and storage vertices (O(1)); a route with
  // a switch at an end is searched (SearchRoute). Equal to SearchRoute everywhere
  // (tests/models/cluster_topology_test.cc checks every pair of several shapes).
  std::vector<Hop> Route(int from_vertex, int to_vertex) const;
  // The same route found by breadth-first search over the graph (O(vertices)): the reference the
  // closed form is checked against, and what Route uses for switch end points.
  std::vector<Hop> SearchRoute(int from_vertex, int to_vertex) const;
  double RouteLatencyS(const std::vector<Hop>& route) const;
  double RouteBytesPerS(const std::vector<Hop>& route) const;  // the slowest link

  // Ranks in the order a depth-first walk of the graph from the root switch meets their GPUs: node by
  // node, local ranks in order, so a ring crosses each node boundary once.
  std::vector<int> RingOrder() const;

 private:
  int AddVertex(VertexKind kind, int node, int local, std::string name);
  int AddLink(int from, int to, LinkClass c, double bytes_per_s, double latency_s, std::string name);  // its index
  std::vector<Hop> ShortestPath(int from_vertex, int to_vertex) const;
  // Closed-form pieces of a route (see Route): a node vertex to its node's gateway and back, and the
  // network between two gateways, or a gateway and the storage service.
  void AppendToGateway(int vertex, std::vector<Hop>* route) const;
  void AppendFromGateway(int vertex, std::vector<Hop>* route) const;
  void AppendBetweenGateways(int from_node, int to_node, std::vector<Hop>* route) const;
  void AppendGatewayStorage(int node, bool to_storage, std::vector<Hop>* route) const;
  int Spine(int from_node, int to_node) const;

  ClusterSpec spec_;
  ClusterGraph graph_;
  std::vector<ClusterLink> links_;
  std::vector<int> cpu_, gateway_, gpu_, leaf_, spine_;
  int root_ = -1;  // star: the switch; fat-tree: spine 0
  int storage_ = -1;
  // Link indices by end point, for the closed-form routes: per node (NIC, host link), per rank
  // (NVLink, PCIe), per leaf x spine (fabric uplink), per top switch (storage switch uplink).
  std::vector<int> nic_link_, host_link_, nvlink_link_, pcie_link_, leaf_spine_link_, storage_top_link_;
  int storage_link_ = -1;
};

// NCCL-style double binary tree over positions 0..n-1 (Sanders et al. 2009; NCCL >= 2.4): tree 0 is
// the in-order binary tree by lowest set bit, tree 1 its mirror (n even) or shift by one (n odd), so
// that most positions are a leaf in one tree and inner in the other. parent[p] = -1 at the root.
struct BinaryTree {
  std::vector<int> parent;
  std::vector<std::vector<int>> children;
  int depth = 0;  // edges on the longest root-to-leaf path
};
std::vector<BinaryTree> DoubleBinaryTree(int n);

}  // namespace simreplay::models
