#include "sim/raw_stats_codec.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

namespace simreplay::sim {

// A field added to SimRawStats must be added to both functions below; this trips when the struct
// changes size so that nobody forgets (x86-64 libstdc++ layout, the one CI builds).
static_assert(sizeof(void*) != 8 || sizeof(SimRawStats) == 768, "SimRawStats changed: update the codec");

namespace {

// NaN and infinity travel as null and come back as NaN (as JSON would carry them: one rule).
nlohmann::json Num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
double Dbl(const nlohmann::json& j) { return j.is_null() ? std::numeric_limits<double>::quiet_NaN() : j.get<double>(); }
nlohmann::json Vec(const std::vector<double>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (double x : v) a.push_back(Num(x));
  return a;
}
std::vector<double> VecOf(const nlohmann::json& j) {
  std::vector<double> v;
  v.reserve(j.size());
  for (const auto& x : j) v.push_back(Dbl(x));
  return v;
}

bool Summary(const nlohmann::json& j, LatencySummary* out) {
  auto summary = LatencySummary::FromJson(j);
  if (!summary.ok()) return false;
  *out = std::move(*summary);
  return true;
}

}  // namespace

std::string EncodeRawStats(const SimRawStats& s) {
  nlohmann::json j = {{"makespan_s", Num(s.makespan_s)},
                      {"samples_consumed", s.samples_consumed},
                      {"micro_batches", s.micro_batches},
                      {"wait_s", Vec(s.wait_s)},
                      {"step_s", Vec(s.step_s)},
                      {"queue_wait_s", Vec(s.queue_wait_s)},
                      {"read_s", s.read_s.ToJson()},
                      {"decode_s", s.decode_s.ToJson()},
                      {"augment_s", s.augment_s.ToJson()},
                      {"time_to_first_batch_s", Num(s.time_to_first_batch_s)},
                      {"epoch_boundary_stall_s", Num(s.epoch_boundary_stall_s)},
                      {"gpu_busy_s", Num(s.gpu_busy_s)},
                      {"h2d_s", Num(s.h2d_s)},
                      {"collective_s", Num(s.collective_s)},
                      {"cpu_busy_core_s", Num(s.cpu_busy_core_s)},
                      {"worker_busy_s", Num(s.worker_busy_s)},
                      {"worker_count", Num(s.worker_count)},
                      {"main_busy_s", Num(s.main_busy_s)},
                      {"pin_busy_s", Num(s.pin_busy_s)},
                      {"storage_busy_s", Num(s.storage_busy_s)},
                      {"storage_read_bytes", s.storage_read_bytes},
                      {"peak_host_memory_bytes", Num(s.peak_host_memory_bytes)},
                      {"worker_starts", s.worker_starts},
                      {"timeline_truncated", s.timeline_truncated},
                      {"exposed_comm_s", Num(s.exposed_comm_s)},
                      {"per_rank_samples", s.per_rank_samples},
                      {"batches_per_epoch", s.batches_per_epoch},
                      {"simulated_nodes", s.simulated_nodes},
                      {"rank_folding_wait_spread", Num(s.rank_folding_wait_spread)}};
  nlohmann::json& ranks = j["ranks"] = nlohmann::json::array();
  for (const RankStats& r : s.ranks) {
    ranks.push_back({r.node, Num(r.gpu_busy_s), Num(r.wait_s), Num(r.collective_s), Num(r.exposed_comm_s), r.samples});
  }
  nlohmann::json& nodes = j["nodes"] = nlohmann::json::array();
  for (const NodeStats& n : s.nodes) {
    nodes.push_back({Num(n.cpu_busy_core_s), Num(n.storage_busy_s), n.storage_read_bytes, Num(n.peak_host_memory_bytes),
                     Num(n.memory_bytes)});
  }
  const CheckpointStats& c = s.checkpoint;
  j["checkpoint"] = {c.saves, Num(c.stall_s), Num(c.write_s), Num(c.bytes_written)};
  nlohmann::json& links = j["link_load"] = nlohmann::json::array();
  for (const LinkClassLoad& l : s.link_load) links.push_back({Num(l.bytes), Num(l.capacity_bytes_per_s), l.links});
  std::string bytes;
  nlohmann::json::to_msgpack(j, bytes);  // written into the string, no copy
  return bytes;
}

Result<SimRawStats> DecodeRawStats(const std::string& bytes) {
  SimRawStats s;
  try {
    const nlohmann::json j = nlohmann::json::from_msgpack(bytes);
    s.makespan_s = Dbl(j.at("makespan_s"));
    s.samples_consumed = j.at("samples_consumed").get<int64_t>();
    s.micro_batches = j.at("micro_batches").get<int64_t>();
    s.wait_s = VecOf(j.at("wait_s"));
    s.step_s = VecOf(j.at("step_s"));
    s.queue_wait_s = VecOf(j.at("queue_wait_s"));
    if (!Summary(j.at("read_s"), &s.read_s))
      return Status::Internal("simulation child returned an unreadable read_s summary");
    if (!Summary(j.at("decode_s"), &s.decode_s))
      return Status::Internal("simulation child returned an unreadable decode_s summary");
    if (!Summary(j.at("augment_s"), &s.augment_s))
      return Status::Internal("simulation child returned an unreadable augment_s summary");
    s.time_to_first_batch_s = Dbl(j.at("time_to_first_batch_s"));
    s.epoch_boundary_stall_s = Dbl(j.at("epoch_boundary_stall_s"));
    s.gpu_busy_s = Dbl(j.at("gpu_busy_s"));
    s.h2d_s = Dbl(j.at("h2d_s"));
    s.collective_s = Dbl(j.at("collective_s"));
    s.cpu_busy_core_s = Dbl(j.at("cpu_busy_core_s"));
    s.worker_busy_s = Dbl(j.at("worker_busy_s"));
    s.worker_count = Dbl(j.at("worker_count"));
    s.main_busy_s = Dbl(j.at("main_busy_s"));
    s.pin_busy_s = Dbl(j.at("pin_busy_s"));
    s.storage_busy_s = Dbl(j.at("storage_busy_s"));
    s.storage_read_bytes = j.at("storage_read_bytes").get<int64_t>();
    s.peak_host_memory_bytes = Dbl(j.at("peak_host_memory_bytes"));
    s.worker_starts = j.at("worker_starts").get<int64_t>();
    s.timeline_truncated = j.at("timeline_truncated").get<bool>();
    s.exposed_comm_s = Dbl(j.at("exposed_comm_s"));
    s.per_rank_samples = j.at("per_rank_samples").get<int64_t>();
    s.batches_per_epoch = j.at("batches_per_epoch").get<int64_t>();
    s.simulated_nodes = j.at("simulated_nodes").get<int32_t>();
    s.rank_folding_wait_spread = Dbl(j.at("rank_folding_wait_spread"));
    // Cluster figures travel as positional arrays (1024 ranks x named keys would dominate the text).
    for (const auto& r : j.at("ranks")) {
      s.ranks.push_back(RankStats{r.at(0).get<int32_t>(), Dbl(r.at(1)), Dbl(r.at(2)), Dbl(r.at(3)), Dbl(r.at(4)),
                                  r.at(5).get<int64_t>()});
    }
    for (const auto& n : j.at("nodes")) {
      s.nodes.push_back(NodeStats{Dbl(n.at(0)), Dbl(n.at(1)), n.at(2).get<int64_t>(), Dbl(n.at(3)), Dbl(n.at(4))});
    }
    const auto& c = j.at("checkpoint");
    s.checkpoint = CheckpointStats{c.at(0).get<int64_t>(), Dbl(c.at(1)), Dbl(c.at(2)), Dbl(c.at(3))};
    const auto& links = j.at("link_load");
    if (links.size() != s.link_load.size()) return Status::Internal("simulation child returned a wrong link_load size");
    for (size_t i = 0; i < s.link_load.size(); ++i) {
      s.link_load[i] = LinkClassLoad{Dbl(links[i].at(0)), Dbl(links[i].at(1)), links[i].at(2).get<int>()};
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::Internal(std::string("simulation child returned unreadable statistics: ") + e.what());
  }
  return s;
}

}  // namespace simreplay::sim
