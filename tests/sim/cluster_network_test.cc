// Where a cluster's NIC rate and latency come from, and what the outputs say about it.
#include "sim/cluster_network.h"

#include <algorithm>
#include <string>

#include <gtest/gtest.h>

namespace simreplay::sim {
namespace {

models::ModelParams Probed() {
  models::ModelParams m;
  m.network.link_bytes_per_s = 1.2e8;
  m.network.link_latency_s = 2e-4;
  m.network.nominal_link_bytes_per_s = 1.25e8;
  m.network.ranks = 2;
  m.network.nodes = 2;
  return m;
}

scenarios::ClusterConfig Nodes(int n) {
  scenarios::ClusterConfig c;
  c.nodes = n;
  return c;
}

bool Has(const std::vector<std::string>& warnings, const std::string& what) {
  return std::any_of(warnings.begin(), warnings.end(),
                     [&](const std::string& w) { return w.find(what) != std::string::npos; });
}

TEST(ClusterNetwork, AScenarioWithoutARateGetsTheProbedLinks) {
  auto c = Nodes(4);
  std::vector<std::string> warnings;
  ResolvedNetwork r = ResolveClusterNetwork(Probed(), false, &c, &warnings);
  EXPECT_TRUE(r.used);
  EXPECT_DOUBLE_EQ(c.nic_bytes_per_s, 1.2e8);
  EXPECT_DOUBLE_EQ(c.nic_latency_s, 2e-4);
  EXPECT_EQ(r.Label(), kProbed);
  EXPECT_NE(r.nic_bytes_per_s.source.find("2 ranks on 2 nodes"), std::string::npos);
  EXPECT_TRUE(warnings.empty());
}

TEST(ClusterNetwork, AStatedRateIsNominalAndTheWarningSaysHowFarTheProbeWasFromIt) {
  auto c = Nodes(2);
  c.nic_bytes_per_s = 1.25e8;
  c.nic_rate_stated = true;
  std::vector<std::string> warnings;
  ResolvedNetwork r = ResolveClusterNetwork(Probed(), false, &c, &warnings);
  EXPECT_DOUBLE_EQ(c.nic_bytes_per_s, 1.25e8);  // what the user wrote is what runs
  EXPECT_DOUBLE_EQ(c.nic_latency_s, 2e-4);      // the latency was not stated: probed
  EXPECT_EQ(r.nic_bytes_per_s.provenance, kAssumedNominal);
  EXPECT_EQ(r.Label(), "assumed (nominal) rate, probed latency");
  EXPECT_TRUE(Has(warnings, "is assumed (nominal): the model's network probe achieved 1.2e+08 B/s per link, 96% of"));
  EXPECT_EQ(r.ToJson()["nic_bytes_per_s"]["provenance"], kAssumedNominal);
}

TEST(ClusterNetwork, WithoutAProbeAStatedRateWarnsThatALineRateIsNotAchieved) {
  auto c = Nodes(2);
  c.nic_rate_stated = true;
  std::vector<std::string> warnings;
  ResolvedNetwork r = ResolveClusterNetwork(models::ModelParams{}, false, &c, &warnings);
  EXPECT_EQ(r.nic_bytes_per_s.provenance, kAssumedNominal);
  EXPECT_EQ(r.nic_latency_s.provenance, kAssumedDefault);
  EXPECT_TRUE(Has(warnings, "a line rate is not an achieved rate"));
}

TEST(ClusterNetwork, DefaultsAreLabelledAndOneNodeNeedsNoNetwork) {
  auto two = Nodes(2);
  std::vector<std::string> warnings;
  EXPECT_EQ(ResolveClusterNetwork(models::ModelParams{}, false, &two, &warnings).Label(), kAssumedDefault);
  EXPECT_TRUE(Has(warnings, "NICs assumed (default)"));
  auto one = Nodes(1);
  std::vector<std::string> none;
  EXPECT_FALSE(ResolveClusterNetwork(models::ModelParams{}, false, &one, &none).used);
  EXPECT_TRUE(none.empty());
  // Shared storage is read through the NIC even on one node.
  EXPECT_TRUE(ResolveClusterNetwork(Probed(), true, &one, &none).used);
}

}  // namespace
}  // namespace simreplay::sim
