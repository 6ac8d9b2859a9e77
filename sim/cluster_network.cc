#include "sim/cluster_network.h"

#include <fmt/format.h>

namespace simreplay::sim {

nlohmann::json ResolvedNetwork::ToJson() const {
  auto one = [](const ResolvedValue& v) {
    return nlohmann::json{{"value", v.value}, {"provenance", v.provenance}, {"source", v.source}};
  };
  return {{"nic_bytes_per_s", one(nic_bytes_per_s)}, {"nic_latency_s", one(nic_latency_s)}, {"label", Label()}};
}

std::string ResolvedNetwork::Label() const {
  if (nic_bytes_per_s.provenance == nic_latency_s.provenance) return nic_bytes_per_s.provenance;
  return nic_bytes_per_s.provenance + " rate, " + nic_latency_s.provenance + " latency";
}

namespace {

std::string ProbeTopology(const models::ProbedNetwork& net) {
  return fmt::format("{:g} ranks on {:g} nodes", net.ranks, net.nodes);
}

}  // namespace

ResolvedNetwork ResolveClusterNetwork(const models::ModelParams& model, bool shared_storage,
                                      scenarios::ClusterConfig* cluster, std::vector<std::string>* warnings) {
  ResolvedNetwork r;
  r.used = cluster->nodes > 1 || shared_storage;
  const models::ProbedNetwork& net = model.network;
  if (cluster->nic_rate_stated) {
    r.nic_bytes_per_s = {cluster->nic_bytes_per_s, kAssumedNominal, "cluster.network.nic_bytes_per_s of the scenario"};
  } else if (net.probed()) {
    cluster->nic_bytes_per_s = net.link_bytes_per_s;
    r.nic_bytes_per_s = {net.link_bytes_per_s, kProbed,
                         "the model's network probe (achieved per link, " + ProbeTopology(net) + ")"};
  } else {
    r.nic_bytes_per_s = {cluster->nic_bytes_per_s, kAssumedDefault, "the scenario format's default"};
  }
  if (cluster->nic_latency_stated) {
    r.nic_latency_s = {cluster->nic_latency_s, kAssumedNominal, "cluster.network.nic_latency_s of the scenario"};
  } else if (net.probed()) {
    cluster->nic_latency_s = net.link_latency_s;
    r.nic_latency_s = {net.link_latency_s, kProbed,
                       "the model's network probe (alpha / 2 per NIC, " + ProbeTopology(net) + ")"};
  } else {
    r.nic_latency_s = {cluster->nic_latency_s, kAssumedDefault, "the scenario format's default"};
  }
  if (!r.used) return r;
  if (cluster->nic_rate_stated && net.probed()) {
    const std::string against =
        net.nominal_link_bytes_per_s > 0
            ? fmt::format(", {:.0f}% of its nominal {:.4g} B/s", 100 * net.link_bytes_per_s / net.nominal_link_bytes_per_s,
                          net.nominal_link_bytes_per_s)
            : " (its nominal rate was not recorded)";
    warnings->push_back(fmt::format(
        "cluster.network.nic_bytes_per_s {:.4g} B/s is assumed (nominal): the model's network probe achieved "
        "{:.4g} B/s per link{}; drop the key to simulate the probed rate",
        cluster->nic_bytes_per_s, net.link_bytes_per_s, against));
  } else if (cluster->nic_rate_stated) {
    warnings->push_back(fmt::format(
        "cluster.network.nic_bytes_per_s {:.4g} B/s is assumed (nominal): a line rate is not an achieved rate "
        "(collective bus bandwidth is commonly well below it); measure the links with `simreplay probe network` "
        "and calibrate with --network-probe",
        cluster->nic_bytes_per_s));
  } else if (!net.probed()) {
    warnings->push_back(fmt::format(
        "cluster.network: no network probe in the model and no rate in the scenario: NICs assumed (default) at "
        "{:.4g} B/s and {:.3g} s; calibrate with --network-probe for measured links",
        cluster->nic_bytes_per_s, cluster->nic_latency_s));
  }
  return r;
}

}  // namespace simreplay::sim
