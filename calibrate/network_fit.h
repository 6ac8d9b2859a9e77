// The network stage of calibration: sets the model's collective parameters from a network probe
// (`simreplay probe network`, docs/probe-format.md "Network probe") and from the collective records of
// multi-rank traces (docs/trace-format.md), each with its fit quality and provenance.
//
// The simulator's collective model is the ring all-reduce
//   t(S, n) = 2(n-1) alpha_s + 2(n-1)/n S / bus_bytes_per_s.
// The probe fits t = a + S / algbw at its world size n_p; with busbw = algbw 2(n_p-1)/n_p (nccl-tests)
// the ring form reproduces that fit exactly at n_p when alpha_s = a / (2(n_p-1)) and
// bus_bytes_per_s = busbw, and extrapolates to other rank counts by the ring's own arithmetic.
// Without a probe, the same fit is made on the traces' all-reduce records (bytes, duration), which
// need at least two distinct sizes (DDP's first bucket is smaller than the others).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "models/model_params.h"

namespace simreplay::calibrate {

inline constexpr const char* kNetworkProbeSchema = "simreplay.probe-network/1";

// A per-op alpha-beta fit t = alpha_s + bytes / algbw_bytes_per_s.
struct AlphaBetaFit {
  double alpha_s = 0;
  double algbw_bytes_per_s = 0;
  double r2 = 0;
  double mape = 0;
  int points = 0;
  int64_t min_bytes = 0, max_bytes = 0;
  std::string method;
};

// A point taking at least this many times the fastest one is bandwidth-bound.
inline constexpr double kBandwidthBoundFactor = 10;

// The nccl-tests reading of a size sweep: beta (1 / algbw) from the bandwidth-bound points (weighted
// least squares, weights 1/t^2), alpha = the median of t - beta S over the others, clamped at 0.
// Fewer than two bandwidth-bound sizes: one weighted line through every point. r2 and mape are over
// every point. Needs >= 2 points with two distinct sizes and positive times, else InvalidArgument.
Result<AlphaBetaFit> FitAlphaBeta(const std::vector<std::pair<double, double>>& bytes_and_seconds);

struct NetworkProbe {
  std::string path;
  std::string backend;
  int world_size = 0;
  int nodes = 0;
  double link_rate_bits_per_s = 0;  // tc rate on rank 0's interface, 0 when none
  // op -> (bytes, seconds) measured points, from "results"
  std::map<std::string, std::vector<std::pair<double, double>>> points;
  // op -> (bytes, CPU seconds per rank and operation) where the probe measured it: the host's busy
  // time shared out over its ranks ("host_cpu_s_per_rank"), else the rank's own process ("cpu_s")
  std::map<std::string, std::vector<std::pair<double, double>>> cpu_points;
};

// CPU seconds per bus byte (bytes x 2(n-1)/n for an all-reduce at n ranks): least squares through the
// bandwidth-bound points (those FitAlphaBeta uses for beta) of cpu = c0 + c x bus bytes; the fixed
// part c0 (Python dispatch, polling) is left out. InvalidArgument when fewer than two such sizes have
// a CPU reading or the slope is not positive.
struct CpuPerByteFit {
  double cpu_s_per_bus_byte = 0;
  double intercept_s = 0;
  int points = 0;
};
Result<CpuPerByteFit> FitCollectiveCpu(const std::vector<std::pair<double, double>>& time_points,
                                       const std::vector<std::pair<double, double>>& cpu_points, int world_size);

// Loads and validates a probe-network.json. Errors: NotFound (cannot open), InvalidArgument
// "FILE: what was expected, found ..." (malformed JSON with its line, wrong schema, missing or
// non-finite or non-positive fields).
Result<NetworkProbe> LoadNetworkProbe(const std::string& path);

// Collective facts of multi-rank traces.
struct TraceCollectives {
  int world_size = 1;
  int64_t steps_with_collectives = 0;
  double gradient_bytes_per_step = 0;  // median over steps of the all-reduce bytes of one rank's step
  double exposed_comm_s_median = 0;    // median step comm_ns (not hidden behind compute)
  std::vector<std::pair<double, double>> all_reduce_points;  // (bytes, seconds) of every all-reduce
  std::vector<std::string> paths;
};

// Reads the traces' `collective` and `step` records (rank 0's, or the lowest rank present).
// Returns steps_with_collectives = 0 when there are none.
Result<TraceCollectives> ReadTraceCollectives(const std::vector<std::string>& traces);

struct NetworkFitResult {
  models::CollectiveParams collective;
  models::ProbedNetwork network;  // the probe's links, for cluster scenarios (unset without a probe)
  std::map<std::string, models::ParamInfo> info;  // "collective.alpha_s" -> provenance
  nlohmann::json fit_quality = nlohmann::json::object();
  nlohmann::json provenance = nlohmann::json::object();
  std::vector<std::string> warnings;
};

// Fits the collective parameters. `probe` and `traces` may be null (then that source is not used);
// `start` holds the values to keep where nothing measures them.
NetworkFitResult FitNetwork(const NetworkProbe* probe, const TraceCollectives* traces,
                            const models::CollectiveParams& start);

// Writes the fit into the model: collective parameters, probed links, info, extra.fit_quality.network,
// extra.provenance.network_probe, and the warnings.
void ApplyNetworkFit(const NetworkFitResult& fit, models::ModelParams* model);

// Removes the earlier stages' "alpha-beta parameters are assumed" warning when this fit measured them.
void DropSupersededWarnings(const NetworkFitResult& fit, std::vector<std::string>* warnings);

}  // namespace simreplay::calibrate
