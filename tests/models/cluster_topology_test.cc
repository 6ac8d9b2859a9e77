#include "models/cluster_topology.h"

#include <gtest/gtest.h>

#include "models/collective_model.h"

namespace simreplay::models {
namespace {

ClusterSpec Spec(int nodes, int gpus) {
  ClusterSpec s;
  s.nodes = nodes;
  s.gpus_per_node = gpus;
  return s;
}

TEST(ClusterTopology, StarRouteBetweenNodesIsNvlinkNicNicNvlink) {
  ClusterTopology t(Spec(3, 2));
  auto route = t.Route(t.GpuVertex(1), t.GpuVertex(4));  // node 0 local 1 -> node 2 local 0
  ASSERT_EQ(route.size(), 4u);
  EXPECT_EQ(t.links()[static_cast<size_t>(route[0].link)].link_class, LinkClass::kIntraNode);
  EXPECT_TRUE(route[0].up);
  EXPECT_EQ(t.links()[static_cast<size_t>(route[1].link)].name, "node0-nic");
  EXPECT_TRUE(route[1].up);
  EXPECT_EQ(t.links()[static_cast<size_t>(route[2].link)].name, "node2-nic");
  EXPECT_FALSE(route[2].up);
  EXPECT_FALSE(route[3].up);
  // 2 us + 5 us + 5 us + 2 us with the defaults; the NIC is the slowest link.
  EXPECT_NEAR(t.RouteLatencyS(route), 14e-6, 1e-15);
  EXPECT_EQ(t.RouteBytesPerS(route), 12.5e9);
  // Inside a node: NVLink up, NVLink down; host to GPU: the PCIe link alone.
  EXPECT_EQ(t.Route(t.GpuVertex(0), t.GpuVertex(1)).size(), 2u);
  EXPECT_EQ(t.Route(t.CpuVertex(1), t.GpuVertex(3)).size(), 1u);
}

TEST(ClusterTopology, FatTreeSpreadsNodePairsOverSpines) {
  ClusterSpec s = Spec(8, 1);
  s.shape = TopologyShape::kFatTree;
  s.nodes_per_switch = 4;
  s.oversubscription = 2;  // 2 spines
  ClusterTopology t(s);
  EXPECT_EQ(t.spines(), 2);
  // Same leaf: NIC up, NIC down. Across leaves: NIC, leaf->spine, spine->leaf, NIC.
  EXPECT_EQ(t.Route(t.GatewayVertex(0), t.GatewayVertex(3)).size(), 2u);
  auto a = t.Route(t.GatewayVertex(0), t.GatewayVertex(4));  // spine (0 + 4) mod 2 = 0
  auto b = t.Route(t.GatewayVertex(0), t.GatewayVertex(5));  // spine 1
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(t.links()[static_cast<size_t>(a[1].link)].name, "leaf0-spine0");
  EXPECT_EQ(t.links()[static_cast<size_t>(b[1].link)].name, "leaf0-spine1");
}

TEST(ClusterTopology, RingOrderIsNodeByNode) {
  ClusterTopology t(Spec(3, 4));
  std::vector<int> expected(12);
  for (int i = 0; i < 12; ++i) expected[static_cast<size_t>(i)] = i;
  EXPECT_EQ(t.RingOrder(), expected);
}

TEST(ClusterTopology, SharedStorageReachesEveryNodeThroughItsNic) {
  ClusterSpec s = Spec(2, 1);
  s.shared_storage = true;
  ClusterTopology t(s);
  auto route = t.Route(t.StorageVertex(), t.CpuVertex(1));
  // storage link, storage switch -> top switch, node 1 NIC down, host link.
  ASSERT_EQ(route.size(), 4u);
  EXPECT_EQ(t.links()[static_cast<size_t>(route[0].link)].link_class, LinkClass::kStorage);
  EXPECT_EQ(t.links()[static_cast<size_t>(route[2].link)].name, "node1-nic");
  EXPECT_FALSE(route[2].up);
}

bool SameHops(const std::vector<Hop>& a, const std::vector<Hop>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].link != b[i].link || a[i].up != b[i].up) return false;
  }
  return true;
}

// The closed-form routes are the searched ones, hop for hop and direction for direction, between every
// pair of vertices: star and fat-tree, with and without shared storage, a partial last leaf,
// oversubscribed and not, one and several GPUs per node.
TEST(ClusterTopology, ClosedFormRoutesEqualSearchedRoutesForEveryPair) {
  std::vector<ClusterSpec> specs;
  for (bool storage : {false, true}) {
    for (int gpus : {1, 3}) {
      ClusterSpec star = Spec(5, gpus);
      star.shared_storage = storage;
      specs.push_back(star);
      ClusterSpec tree = Spec(11, gpus);  // leaves of 4, 4 and 3 nodes
      tree.shape = TopologyShape::kFatTree;
      tree.nodes_per_switch = 4;
      tree.oversubscription = 2;  // 2 spines
      tree.shared_storage = storage;
      specs.push_back(tree);
      tree.oversubscription = 1;  // 4 spines
      specs.push_back(tree);
      ClusterSpec single = Spec(1, gpus);
      single.shared_storage = storage;
      specs.push_back(single);
    }
  }
  for (const ClusterSpec& spec : specs) {
    ClusterTopology t(spec);
    const int vertices = static_cast<int>(boost::num_vertices(t.graph()));
    for (int a = 0; a < vertices; ++a) {
      for (int b = 0; b < vertices; ++b) {
        EXPECT_TRUE(SameHops(t.Route(a, b), t.SearchRoute(a, b)))
            << "nodes " << spec.nodes << " gpus " << spec.gpus_per_node << " fat-tree "
            << (spec.shape == TopologyShape::kFatTree) << " storage " << spec.shared_storage << ": "
            << t.graph()[static_cast<size_t>(a)].name << " -> " << t.graph()[static_cast<size_t>(b)].name;
      }
    }
  }
}

TEST(DoubleBinaryTree, FourRanksAreInnerInOneTreeAndLeafInTheOther) {
  // Tree 0: parent by lowest set bit: 1 -> 2, 2 -> 0, 3 -> 2. Tree 1 mirrors (n even): 2 -> 1, 1 -> 3,
  // 0 -> 1.
  auto trees = DoubleBinaryTree(4);
  ASSERT_EQ(trees.size(), 2u);
  EXPECT_EQ(trees[0].parent, (std::vector<int>{-1, 2, 0, 2}));
  EXPECT_EQ(trees[1].parent, (std::vector<int>{1, 3, 1, -1}));
  EXPECT_EQ(trees[0].depth, 2);
  EXPECT_EQ(trees[1].depth, 2);
  for (int r = 0; r < 4; ++r) {
    const bool leaf0 = trees[0].children[static_cast<size_t>(r)].empty();
    const bool leaf1 = trees[1].children[static_cast<size_t>(r)].empty();
    EXPECT_NE(leaf0, leaf1) << "rank " << r;
  }
}

TEST(DoubleBinaryTree, EveryRankReachesTheRootInLogDepth) {
  for (int n : {1, 2, 3, 7, 8, 100, 1024}) {
    for (const auto& tree : DoubleBinaryTree(n)) {
      int roots = 0;
      for (int r = 0; r < n; ++r) roots += tree.parent[static_cast<size_t>(r)] < 0;
      EXPECT_EQ(roots, 1) << n;
      int log2 = 0;
      while ((1 << log2) < n) ++log2;
      EXPECT_LE(tree.depth, log2) << n;
    }
  }
}

TEST(CollectiveModel, ClosedForms) {
  // Ring: 2(N-1)/N x S/B + 2(N-1) x latency. N = 8, S = 1 GB, 12.5 GB/s, 10 us: 0.14 + 14 x 10 us.
  EXPECT_NEAR(RingAllReduceS(8, 1e9, 12.5e9, 10e-6), 0.14 + 140e-6, 1e-12);
  EXPECT_NEAR(RingHalfS(8, 1e9, 12.5e9, 10e-6), 0.07 + 70e-6, 1e-12);
  EXPECT_EQ(RingAllReduceS(1, 1e9, 12.5e9, 10e-6), 0.0);
  // Hierarchical, 4 nodes x 8 GPUs: 2 x (7/8 x S / 300e9 + 7 x 4 us) + (1.5 x S / 12.5e9 + 6 x 14 us).
  EXPECT_NEAR(HierarchicalAllReduceS(4, 8, 1e9, 300e9, 4e-6, 12.5e9, 14e-6), 2 * (7.0 / 8 / 300 + 28e-6) + 0.12 + 84e-6,
              1e-12);
}

}  // namespace
}  // namespace simreplay::models
