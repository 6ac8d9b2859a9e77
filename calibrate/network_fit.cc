#include "calibrate/network_fit.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "common/json_fields.h"
#include "models/collective_model.h"
#include "common/quantile.h"
#include "replay/trace_reader.h"

namespace simreplay::calibrate {

namespace {

Status Bad(const std::string& path, const std::string& what) { return Status::InvalidArgument(path + ": " + what); }

// A finite number at j[key] (> 0 when positive is set).
Result<double> Number(const nlohmann::json& j, const std::string& key, const std::string& where, bool positive) {
  auto it = j.find(key);
  if (it == j.end()) return Bad(where, "expected field '" + key + "', found none");
  if (!it->is_number()) return Bad(where, "expected '" + key + "' to be a number, found " + it->type_name());
  double v = it->get<double>();
  if (!std::isfinite(v)) return Bad(where, "expected a finite '" + key + "', found " + it->dump());
  if (positive ? v <= 0 : v < 0)
    return Bad(where, std::string("expected '") + key + (positive ? "' > 0" : "' >= 0") + ", found " + it->dump());
  return v;
}

// Ring all-reduce: 2(n-1) steps, busbw / algbw = 2(n-1)/n.
double AllReduceBusFactor(int n) { return n > 1 ? models::AllReduceBusFraction(n) : 1.0; }

nlohmann::json FitJson(const AlphaBetaFit& f) {
  return {{"alpha_s", f.alpha_s},
          {"algbw_bytes_per_s", f.algbw_bytes_per_s},
          {"r2", f.r2},
          {"mape", f.mape},
          {"points", f.points},
          {"size_range_bytes", {f.min_bytes, f.max_bytes}},
          {"method", f.method},
          {"low_confidence", f.points < 4 || f.mape > 0.25}};
}

// Weighted least squares of t = alpha + beta S, weights 1/t^2 (relative errors); alpha clamped at 0
// (then beta refitted through the origin). beta <= 0 when time does not grow with size.
void WeightedLine(const std::vector<std::pair<double, double>>& pts, double* alpha, double* beta) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [s, t] : pts) {
    const double w = 1.0 / (t * t);
    sw += w;
    sx += w * s;
    sy += w * t;
    sxx += w * s * s;
    sxy += w * s * t;
  }
  const double det = sw * sxx - sx * sx;
  *beta = det > 0 ? (sw * sxy - sx * sy) / det : 0;
  *alpha = (sy - *beta * sx) / sw;
  if (*beta > 0 && *alpha < 0) {
    *alpha = 0;
    *beta = sxy / sxx;
  }
}

// The sizes of the bandwidth-bound points: those taking >= kBandwidthBoundFactor x the fastest point.
std::set<double> BandwidthBoundSizes(const std::vector<std::pair<double, double>>& pts) {
  double fastest_s = std::numeric_limits<double>::infinity();
  for (const auto& [bytes, t] : pts) fastest_s = std::min(fastest_s, t);
  std::set<double> sizes;
  for (const auto& [bytes, t] : pts)
    if (t >= kBandwidthBoundFactor * fastest_s) sizes.insert(bytes);
  return sizes;
}

}  // namespace

Result<AlphaBetaFit> FitAlphaBeta(const std::vector<std::pair<double, double>>& pts_in) {
  std::vector<std::pair<double, double>> pts;
  for (const auto& p : pts_in)
    if (p.second > 0 && p.first > 0 && std::isfinite(p.first) && std::isfinite(p.second)) pts.push_back(p);
  std::set<double> sizes;
  for (const auto& p : pts) sizes.insert(p.first);
  if (sizes.size() < 2)
    return Status::InvalidArgument("alpha-beta fit: expected points at two or more message sizes, found " +
                                   std::to_string(sizes.size()));
  // Two regimes: beta from the bandwidth-bound points, alpha from the rest. One line through every
  // point lets the small messages' scatter (1-4 ms of scheduling and TCP noise over 1 KiB-256 KiB)
  // set the slope: measured on a 1 Gbit/s link it gave a busbw 40% above the link's rate.
  const std::set<double> bound_sizes = BandwidthBoundSizes(pts);
  std::vector<std::pair<double, double>> bound, latency;
  for (const auto& p : pts) (bound_sizes.count(p.first) ? bound : latency).push_back(p);
  double alpha = 0, beta = 0;
  AlphaBetaFit f;
  if (bound_sizes.size() >= 2) {
    WeightedLine(bound, &alpha, &beta);
    if (beta > 0 && !latency.empty()) {
      std::vector<double> residuals;
      for (const auto& [s, t] : latency) residuals.push_back(t - beta * s);
      alpha = std::max(0.0, Median(residuals));
    }
    f.method = "two-regime: beta from points >= " + std::to_string(static_cast<int>(kBandwidthBoundFactor)) +
               "x the fastest, alpha = median residual of the others";
  } else {
    WeightedLine(pts, &alpha, &beta);
    f.method = "weighted least squares over every point, weights 1/t^2";
  }
  if (beta <= 0) return Status::InvalidArgument("alpha-beta fit: time does not grow with message size");
  f.alpha_s = alpha;
  f.algbw_bytes_per_s = 1.0 / beta;
  f.points = static_cast<int>(pts.size());
  f.min_bytes = static_cast<int64_t>(*sizes.begin());
  f.max_bytes = static_cast<int64_t>(*sizes.rbegin());
  double sw = 0, sy = 0;
  for (const auto& [s, t] : pts) {
    sw += 1.0 / (t * t);
    sy += 1.0 / t;
  }
  double mean_w = sy / sw, ss_res = 0, ss_tot = 0, ape = 0;
  for (const auto& [s, t] : pts) {
    double w = 1.0 / (t * t), pred = alpha + beta * s;
    ss_res += w * (t - pred) * (t - pred);
    ss_tot += w * (t - mean_w) * (t - mean_w);
    ape += std::abs(pred - t) / t;
  }
  f.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 1.0;
  f.mape = ape / pts.size();
  return f;
}

Result<CpuPerByteFit> FitCollectiveCpu(const std::vector<std::pair<double, double>>& time_points,
                                       const std::vector<std::pair<double, double>>& cpu_points, int world_size) {
  const std::set<double> bound_sizes = BandwidthBoundSizes(time_points);
  const double bus_factor = AllReduceBusFactor(world_size);
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  std::set<double> used;
  for (const auto& [bytes, cpu_s] : cpu_points) {
    if (!bound_sizes.count(bytes)) continue;
    const double x = bytes * bus_factor;
    n += 1;
    sx += x;
    sy += cpu_s;
    sxx += x * x;
    sxy += x * cpu_s;
    used.insert(bytes);
  }
  if (used.size() < 2) {
    return Status::InvalidArgument("collective CPU fit: expected CPU readings at two or more bandwidth-bound sizes, found " +
                                   std::to_string(used.size()));
  }
  const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  if (!(slope > 0)) return Status::InvalidArgument("collective CPU fit: CPU time does not grow with message size");
  CpuPerByteFit fit;
  fit.cpu_s_per_bus_byte = slope;
  fit.intercept_s = (sy - slope * sx) / n;
  fit.points = static_cast<int>(n);
  return fit;
}

Result<NetworkProbe> LoadNetworkProbe(const std::string& path) {
  // The project's one JSON reader: FILE:LINE on syntax errors and on numbers no double holds (1e400).
  auto parsed = ReadJsonFile(path);
  if (!parsed.ok()) return parsed.status();
  const nlohmann::json& j = *parsed;
  if (!j.is_object()) return Bad(path, std::string("expected a JSON object, found ") + j.type_name());
  if (!j.contains("schema") || !j["schema"].is_string() || j["schema"] != kNetworkProbeSchema) {
    return Bad(path, std::string("wrong schema version: expected \"") + kNetworkProbeSchema + "\", found " +
                         (j.contains("schema") ? j["schema"].dump() : "none"));
  }
  NetworkProbe p;
  p.path = path;
  if (j.contains("backend") && j["backend"].is_string()) p.backend = j["backend"].get<std::string>();
  auto ws = Number(j, "world_size", path, true);
  if (!ws.ok()) return ws.status();
  auto nodes = Number(j, "nodes", path, true);
  if (!nodes.ok()) return nodes.status();
  // Counts: whole numbers a cast to int holds (a larger double would be undefined behaviour to cast).
  for (auto [key, value] : {std::pair{"world_size", *ws}, std::pair{"nodes", *nodes}}) {
    if (value != std::floor(value) || value > 1e6) {
      return Bad(path, std::string("expected '") + key + "' to be a whole number up to 1e6, found " + j[key].dump());
    }
  }
  p.world_size = static_cast<int>(*ws);
  p.nodes = static_cast<int>(*nodes);
  if (!j.contains("results") || !j["results"].is_array() || j["results"].empty())
    return Bad(path,
               "expected a non-empty array 'results', found " + (j.contains("results") ? j["results"].dump() : "none"));
  for (size_t i = 0; i < j["results"].size(); ++i) {
    const nlohmann::json& r = j["results"][i];
    std::string where = path + ": results[" + std::to_string(i) + "]";
    if (!r.is_object() || !r.contains("op") || !r["op"].is_string())
      return Bad(where, "expected an object with a string 'op'");
    auto bytes = Number(r, "bytes", where, true);
    if (!bytes.ok()) return bytes.status();
    auto t = Number(r, "time_s", where, true);
    if (!t.ok()) return t.status();
    p.points[r["op"].get<std::string>()].emplace_back(*bytes, *t);
    for (const char* key : {"host_cpu_s_per_rank", "cpu_s"}) {
      if (!r.contains(key)) continue;
      auto cpu = Number(r, key, where, false);
      if (!cpu.ok()) return cpu.status();
      p.cpu_points[r["op"].get<std::string>()].emplace_back(*bytes, *cpu);
      break;
    }
  }
  if (j.contains("ranks") && j["ranks"].is_array() && !j["ranks"].empty() && j["ranks"][0].is_object()) {
    const nlohmann::json& iface = j["ranks"][0].value("interface", nlohmann::json::object());
    if (iface.is_object() && iface.contains("tc_rate_bits_per_s") && iface["tc_rate_bits_per_s"].is_number())
      p.link_rate_bits_per_s = iface["tc_rate_bits_per_s"].get<double>();
  }
  return p;
}

Result<TraceCollectives> ReadTraceCollectives(const std::vector<std::string>& traces) {
  TraceCollectives out;
  int64_t lowest_rank = std::numeric_limits<int64_t>::max();
  std::map<int64_t, std::map<int64_t, double>> bytes_by_rank_step;
  std::map<int64_t, std::vector<double>> comm_by_rank;
  for (const std::string& path : traces) {
    auto reader = replay::TraceReader::Open(path);
    if (!reader.ok()) return reader.status();
    const nlohmann::json& m = (*reader)->header().manifest;
    if (m.contains("world_size") && m["world_size"].is_number_integer())
      out.world_size = std::max(out.world_size, m["world_size"].get<int>());
    replay::TraceRecord record;
    bool any = false;
    while (true) {
      auto more = (*reader)->Next(&record);
      if (!more.ok()) return more.status();
      if (!*more) break;
      if (auto* st = std::get_if<replay::StepRecord>(&record)) {
        comm_by_rank[st->rank].push_back(st->comm_ns / 1e9);
        continue;
      }
      auto* o = std::get_if<replay::OtherRecord>(&record);
      if (o == nullptr || o->type != "collective") continue;
      const nlohmann::json& c = o->json;
      if (!c.contains("op") || !c.contains("bytes") || !c.contains("duration_ns") || !c.contains("rank")) continue;
      if (c["op"] != "all_reduce") continue;
      any = true;
      int64_t rank = c["rank"].get<int64_t>();
      int64_t step = c.value("step", static_cast<int64_t>(-1));
      double bytes = c["bytes"].get<double>();
      out.all_reduce_points.emplace_back(bytes, c["duration_ns"].get<double>() / 1e9);
      if (step >= 0) bytes_by_rank_step[rank][step] += bytes;
      lowest_rank = std::min(lowest_rank, rank);
      if (c.contains("world_size") && c["world_size"].is_number_integer())
        out.world_size = std::max(out.world_size, c["world_size"].get<int>());
    }
    if (any) out.paths.push_back(path);
  }
  if (bytes_by_rank_step.empty()) return out;
  std::vector<double> per_step;
  for (const auto& [step, bytes] : bytes_by_rank_step[lowest_rank]) per_step.push_back(bytes);
  out.steps_with_collectives = static_cast<int64_t>(per_step.size());
  out.gradient_bytes_per_step = Median(per_step);
  out.exposed_comm_s_median = Median(comm_by_rank[lowest_rank]);
  return out;
}

namespace {

// Sets collective.cpu_s_per_bus_byte from the probe's CPU readings of the all-reduce, when it has them.
void SetCollectiveCpu(const NetworkProbe& probe, const std::string& source, NetworkFitResult* r) {
  auto cpu = probe.cpu_points.find("all_reduce");
  if (cpu == probe.cpu_points.end()) {
    r->warnings.push_back("network probe " + probe.path +
                          " has no CPU readings (an older probe): the collective's host CPU work is not modelled");
    return;
  }
  auto f = FitCollectiveCpu(probe.points.at("all_reduce"), cpu->second, probe.world_size);
  if (!f.ok()) {
    r->warnings.push_back("network probe " + probe.path + ": " + f.status().message());
    return;
  }
  r->collective.cpu_s_per_bus_byte = f->cpu_s_per_bus_byte;
  r->info["collective.cpu_s_per_bus_byte"] = {
      false, source + ": CPU seconds per rank vs bus bytes over " + std::to_string(f->points) + " bandwidth-bound sizes"};
  r->fit_quality["probe"]["cpu"] = {{"cpu_s_per_bus_byte", f->cpu_s_per_bus_byte},
                                    {"intercept_s", f->intercept_s},
                                    {"points", f->points}};
}

// The probe's cluster links (models::ProbedNetwork): on one NIC per node a ring all-reduce's bus
// bandwidth is what one link achieved, and a ring step crosses two NICs.
void SetProbedLinks(const NetworkProbe& probe, const models::CollectiveParams& fitted, const std::string& source,
                    NetworkFitResult* r) {
  auto& net = r->network;
  net.link_bytes_per_s = fitted.bus_bytes_per_s;
  net.link_latency_s = fitted.alpha_s / 2;
  net.nominal_link_bytes_per_s = probe.link_rate_bits_per_s / 8;
  net.ranks = probe.world_size;
  net.nodes = probe.nodes;
  r->info["network.link_bytes_per_s"] = {false, source + ": achieved per link = busbw"};
  r->info["network.link_latency_s"] = {false, source + ": per NIC = alpha / 2 (a ring step crosses two)"};
  r->info["network.nominal_link_bytes_per_s"] = {
      probe.link_rate_bits_per_s <= 0,
      probe.link_rate_bits_per_s > 0 ? "network probe " + probe.path + ": rank 0's tc rate / 8"
                                     : "network probe " + probe.path + ": no tc rate recorded (nominal unknown)"};
  r->info["network.ranks"] = {false, "network probe " + probe.path + ": world_size"};
  r->info["network.nodes"] = {false, "network probe " + probe.path + ": nodes"};
}

}  // namespace

NetworkFitResult FitNetwork(const NetworkProbe* probe, const TraceCollectives* traces,
                            const models::CollectiveParams& start) {
  NetworkFitResult r;
  r.collective = start;
  bool fitted = false;
  if (probe != nullptr) {
    nlohmann::json ops = nlohmann::json::object();
    for (const auto& [op, pts] : probe->points) {
      auto f = FitAlphaBeta(pts);
      ops[op] = f.ok() ? FitJson(*f) : nlohmann::json{{"error", f.status().message()}};
    }
    r.fit_quality["probe"] = {{"path", probe->path},
                              {"backend", probe->backend},
                              {"world_size", probe->world_size},
                              {"nodes", probe->nodes},
                              {"link_rate_bits_per_s", probe->link_rate_bits_per_s},
                              {"ops", ops}};
    r.provenance = {
        {"path", probe->path}, {"world_size", probe->world_size}, {"nodes", probe->nodes}, {"backend", probe->backend}};
    auto it = probe->points.find("all_reduce");
    if (probe->world_size < 2) {
      r.warnings.push_back("network probe " + probe->path + " ran on one rank: collective parameters not set from it");
    } else if (it == probe->points.end()) {
      r.warnings.push_back("network probe " + probe->path + " has no all_reduce measurements");
    } else if (auto f = FitAlphaBeta(it->second); !f.ok()) {
      r.warnings.push_back("network probe " + probe->path + ": " + f.status().message());
    } else {
      int n = probe->world_size;
      r.collective.alpha_s = f->alpha_s / (2.0 * (n - 1));
      r.collective.bus_bytes_per_s = f->algbw_bytes_per_s * AllReduceBusFactor(n);
      std::string src = "network probe " + probe->path + ": all_reduce alpha-beta fit at " + std::to_string(n) +
                        " ranks (R2 " + std::to_string(f->r2) + ", MAPE " + std::to_string(f->mape) + ")";
      r.info["collective.alpha_s"] = {false, src + ", alpha / 2(n-1)"};
      r.info["collective.bus_bytes_per_s"] = {false, src + ", busbw = algbw 2(n-1)/n"};
      fitted = true;
      SetProbedLinks(*probe, r.collective, src, &r);
      if (f->mape > 0.25)
        r.warnings.push_back("network probe all_reduce fit is poor (MAPE " + std::to_string(f->mape) + ")");
      SetCollectiveCpu(*probe, src, &r);
    }
  }
  if (traces != nullptr && traces->steps_with_collectives > 0) {
    r.collective.gradient_bytes = traces->gradient_bytes_per_step;
    r.info["collective.gradient_bytes"] = {false,
                                           "median all-reduce bytes per step of the traces' collective records (" +
                                               std::to_string(traces->steps_with_collectives) + " steps)"};
    nlohmann::json tq = {{"world_size", traces->world_size},
                         {"steps", traces->steps_with_collectives},
                         {"gradient_bytes_per_step", traces->gradient_bytes_per_step},
                         {"exposed_comm_s_median", traces->exposed_comm_s_median},
                         {"all_reduce_records", traces->all_reduce_points.size()},
                         {"traces", traces->paths}};
    if (!fitted && traces->world_size > 1) {
      auto f = FitAlphaBeta(traces->all_reduce_points);
      if (f.ok()) {
        int n = traces->world_size;
        r.collective.alpha_s = f->alpha_s / (2.0 * (n - 1));
        r.collective.bus_bytes_per_s = f->algbw_bytes_per_s * AllReduceBusFactor(n);
        std::string src = "all_reduce records of the traces: alpha-beta fit at " + std::to_string(n) + " ranks";
        r.info["collective.alpha_s"] = {false, src};
        r.info["collective.bus_bytes_per_s"] = {false, src};
        tq["all_reduce_fit"] = FitJson(*f);
        fitted = true;
      } else {
        r.warnings.push_back("traces' all-reduce records cannot fit alpha-beta (" + f.status().message() +
                             "): collective alpha_s and bus_bytes_per_s stay assumed");
      }
    }
    if (fitted && traces->world_size > 1) {
      // Check: the ring model at the traces' world size against their measured exposed communication.
      models::ModelParams m;
      m.collective = r.collective;
      m.collective.time_per_step_s = 0;
      double predicted = m.CollectiveTimeS(traces->world_size);
      tq["check"] = {{"predicted_s", predicted},
                     {"measured_exposed_comm_s", traces->exposed_comm_s_median},
                     {"error", traces->exposed_comm_s_median > 0 ? predicted / traces->exposed_comm_s_median - 1 : 0}};
    }
    r.fit_quality["traces"] = tq;
  }
  if (fitted) {
    // measured alpha-beta replaces the mean comm time, so other node counts extrapolate
    r.collective.time_per_step_s = 0;
    r.info["collective.time_per_step_s"] = {false, "0: alpha-beta from measurements is used instead"};
  }
  return r;
}

void ApplyNetworkFit(const NetworkFitResult& fit, models::ModelParams* model) {
  model->collective = fit.collective;
  if (fit.network.probed()) model->network = fit.network;
  for (const auto& [k, v] : fit.info) model->info[k] = v;
  if (!fit.fit_quality.empty()) model->extra["fit_quality"]["network"] = fit.fit_quality;
  if (!fit.provenance.empty()) model->extra["provenance"]["network_probe"] = fit.provenance;
  for (const std::string& w : fit.warnings) model->extra["warnings"].push_back(w);
}

void DropSupersededWarnings(const NetworkFitResult& fit, std::vector<std::string>* warnings) {
  if (!fit.info.count("collective.bus_bytes_per_s")) return;
  // The trace stage says alpha-beta is assumed when it sees one world size; this stage measured it.
  std::erase_if(*warnings,
                [](const std::string& w) { return w.find("alpha-beta parameters are assumed") != std::string::npos; });
}

}  // namespace simreplay::calibrate
