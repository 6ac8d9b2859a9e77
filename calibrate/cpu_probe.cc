#include "calibrate/cpu_probe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <boost/math/distributions/fisher_f.hpp>

#include <fmt/format.h>

#include "common/json_fields.h"
#include "models/model_params.h"

namespace simreplay::calibrate {

namespace {

constexpr const char* kCpuProbeSchema = "simreplay.probe-cpu/1";

Status FieldError(const std::string& path, const std::string& field, const std::string& expected,
                  const nlohmann::json& found) {
  return Status::InvalidArgument(path + ": " + field + ": expected " + expected + ", found " + found.dump());
}

// A finite number >= 0 (or > 0 when `positive`), read into *out.
Status ReadNumber(const std::string& path, const nlohmann::json& object, const std::string& where, const char* key,
                  bool positive, double* out) {
  if (!object.contains(key)) return FieldError(path, where + "." + key, "a number", nullptr);
  const auto& v = object[key];
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || (positive && v.get<double>() <= 0)) {
    return FieldError(path, where + "." + key, positive ? "a finite number > 0" : "a finite number >= 0", v);
  }
  *out = v.get<double>();
  return Status::Ok();
}

// Grid steps of the least-squares search (docs/probe-cpu.md): fine enough that the grid, not the data,
// never limits the fit (0.25% of slowdown).
constexpr double kGridStep = 0.0025;
constexpr double kMaxSlowdown = 1.5;
constexpr double kMaxOverhead = 3.0;
// A wake-up delay beyond a minute is no measurement (and would overflow the fit's sums).
constexpr double kMaxWakeDelayS = 60.0;

struct GridFit {
  double s = 0, o = 0, log_c0 = 0, rms = std::numeric_limits<double>::infinity(), sse = 0;
};

// Dense block index per point (the probe's rounds: each round sweeps every k within seconds, so the
// host's drift between rounds is a per-round level, fitted as one intercept per round).
std::vector<size_t> BlockIndex(const std::vector<CurvePoint>& points, size_t* blocks) {
  std::map<int, size_t> dense;
  for (const auto& p : points) dense.emplace(p.block, 0);
  size_t next = 0;
  for (auto& [block, index] : dense) index = next++;
  std::vector<size_t> out;
  for (const auto& p : points) out.push_back(dense[p.block]);
  *blocks = dense.size();
  return out;
}

GridFit SearchGrid(const std::vector<CurvePoint>& points, int cores, bool with_overhead) {
  const size_t n = points.size();
  size_t blocks = 0;
  const std::vector<size_t> block = BlockIndex(points, &blocks);
  std::vector<double> block_count(blocks, 0);
  for (size_t i = 0; i < n; ++i) block_count[block[i]] += 1;
  std::vector<double> y(n), a(n), b(n);
  for (size_t i = 0; i < n; ++i) {
    y[i] = std::log(points[i].cost);
    a[i] = cores > 1 ? (std::min(points[i].n, static_cast<double>(cores)) - 1) / (cores - 1) : 0;
    b[i] = std::max(0.0, points[i].n - cores) / cores;
  }
  const int s_steps = cores > 1 ? static_cast<int>(std::lround(kMaxSlowdown / kGridStep)) : 0;
  const int o_steps = with_overhead ? static_cast<int>(std::lround(kMaxOverhead / kGridStep)) : 0;
  std::vector<std::vector<double>> log_o(static_cast<size_t>(o_steps) + 1, std::vector<double>(n));
  for (int j = 0; j <= o_steps; ++j)
    for (size_t i = 0; i < n; ++i) log_o[static_cast<size_t>(j)][i] = std::log1p(j * kGridStep * b[i]);
  GridFit best;
  std::vector<double> r(n), block_sum(blocks);
  for (int k = 0; k <= s_steps; ++k) {
    const double s = k * kGridStep;
    for (size_t i = 0; i < n; ++i) r[i] = y[i] - std::log1p(s * a[i]);
    for (int j = 0; j <= o_steps; ++j) {
      const auto& lo = log_o[static_cast<size_t>(j)];
      std::fill(block_sum.begin(), block_sum.end(), 0.0);
      double mean = 0;
      for (size_t i = 0; i < n; ++i) {
        block_sum[block[i]] += r[i] - lo[i];
        mean += r[i] - lo[i];
      }
      mean /= static_cast<double>(n);
      double sse = 0;
      for (size_t i = 0; i < n; ++i) {
        const double e = r[i] - lo[i] - block_sum[block[i]] / block_count[block[i]];
        sse += e * e;
      }
      const double rms = std::sqrt(sse / static_cast<double>(n));
      // Strictly better only: ties keep the smaller parameters (the search runs upwards).
      if (rms < best.rms - 1e-12) best = {s, j * kGridStep, mean, rms, sse};
    }
  }
  return best;
}

}  // namespace

double ContentionFactor(double n, int cores, double slowdown, double overhead) {
  const double c = std::max(1, cores);
  const double busy = std::clamp(n, 1.0, c);
  const double shared = c > 1 ? 1.0 + slowdown * (busy - 1) / (c - 1) : 1.0;
  return shared * (1.0 + overhead * std::max(0.0, n - c) / c);
}

double ContentionCurveFit::Factor(double n, int cores) const { return ContentionFactor(n, cores, slowdown, overhead); }

nlohmann::json ContentionCurveFit::ToJson() const {
  return {{"base_cost", base_cost},
          {"slowdown", slowdown},
          {"overhead", overhead},
          {"overhead_unconstrained", overhead_unconstrained},
          {"overhead_kept", overhead_kept},
          {"rms_log_error", rms_log_error},
          {"rms_log_error_without_overhead", rms_log_error_without_overhead},
          {"overhead_f", std::isfinite(overhead_f) ? nlohmann::json(overhead_f) : nlohmann::json("inf")},
          {"overhead_f_critical",
           std::isfinite(overhead_f_critical) ? nlohmann::json(overhead_f_critical) : nlohmann::json("inf")},
          {"points", points},
          {"note", note}};
}

Result<ContentionCurveFit> FitContentionCurve(const std::vector<CurvePoint>& points, int cores) {
  if (cores < 1) return Status::InvalidArgument(fmt::format("contention fit: cores must be >= 1, found {}", cores));
  std::set<double> distinct;
  for (const auto& p : points) {
    if (!(p.cost > 0) || !std::isfinite(p.cost) || !(p.n >= 1) || !std::isfinite(p.n)) {
      return Status::InvalidArgument(
          fmt::format("contention fit: every point needs n >= 1 and a cost > 0, found n = {}, cost = {}", p.n, p.cost));
    }
    distinct.insert(p.n);
  }
  if (distinct.size() < 2) {
    return Status::InvalidArgument(
        fmt::format("contention fit: needs points at 2 or more concurrency levels, found {}", distinct.size()));
  }
  ContentionCurveFit fit;
  fit.points = static_cast<int>(points.size());
  const GridFit without = SearchGrid(points, cores, false);
  const bool beyond_cores = *distinct.rbegin() > cores;
  const GridFit with = beyond_cores ? SearchGrid(points, cores, true) : without;
  fit.rms_log_error_without_overhead = without.rms;
  fit.overhead_unconstrained = with.o;
  // The overhead is kept only when the points show it (see the header): an F-test of the extra
  // parameter at 95% against the fit without it, and the fit without it more than 1% rms off.
  size_t blocks = 0;
  BlockIndex(points, &blocks);
  const double dof = static_cast<double>(points.size()) - static_cast<double>(blocks) - 2;
  fit.overhead_f = with.sse > 0 && dof >= 1 ? (without.sse - with.sse) / (with.sse / dof)
                                            : (without.sse > with.sse ? std::numeric_limits<double>::infinity() : 0.0);
  fit.overhead_f_critical = dof >= 1 ? boost::math::quantile(boost::math::fisher_f_distribution<double>(1.0, dof), 0.95)
                                     : std::numeric_limits<double>::infinity();
  fit.overhead_kept = beyond_cores && with.o > 0 && without.rms > 0.01 &&
                      (with.sse <= 0 ? without.sse > 0 : fit.overhead_f > fit.overhead_f_critical);
  const GridFit& kept = fit.overhead_kept ? with : without;
  fit.slowdown = kept.s;
  fit.overhead = kept.o;
  fit.base_cost = std::exp(kept.log_c0);
  fit.rms_log_error = kept.rms;
  fit.note = !beyond_cores ? "no point beyond the core count: oversubscription overhead not measurable (0)"
             : fit.overhead_kept
                 ? fmt::format("oversubscription overhead kept: rms {:.2f}% with it, {:.2f}% without", 100 * with.rms,
                               100 * without.rms)
                 : fmt::format(
                       "oversubscription overhead not shown by the data (fit with it: o = {:.3f}, rms "
                       "{:.2f}%; without: {:.2f}%; F = {:.2f}, 95% critical {:.2f}): 0",
                       with.o, 100 * with.rms, 100 * without.rms, fit.overhead_f, fit.overhead_f_critical);
  return fit;
}

double ProbeForeignBusyCores(const CpuProbe& probe) {
  double sum = 0;
  int n = 0;
  for (const auto& p : probe.points) {
    if (p.workers_cpu_s < 0 || p.host_busy_cores < 0 || p.wall_s <= 0) continue;
    sum += std::max(0.0, p.host_busy_cores - (p.main_cpu_s + p.workers_cpu_s) / p.wall_s);
    ++n;
  }
  return n > 0 ? sum / n : -1;
}

double WakeDelayFit::Delay(double running, int cores) const {
  return models::WakeupDelayS(base_s, per_excess_s, running, cores);
}

nlohmann::json WakeDelayFit::ToJson() const {
  return {{"base_s", base_s}, {"per_excess_s", per_excess_s}, {"rms_s", rms_s}, {"points", points}};
}

Result<WakeDelayFit> FitWakeDelay(const CpuProbe& probe) {
  std::vector<std::pair<double, double>> xy;  // (excess runnable threads, delay)
  if (probe.baseline_wake_delay_s >= 0) xy.push_back({0.0, probe.baseline_wake_delay_s});
  for (const auto& p : probe.points) {
    if (p.wake_delay_s >= 0) xy.push_back({std::max(0.0, p.workers + 1.0 - probe.cores), p.wake_delay_s});
  }
  std::set<double> distinct;
  for (const auto& [x, y] : xy) distinct.insert(x);
  if (distinct.size() < 2) {
    return Status::InvalidArgument(
        fmt::format("{}: wake-up delay recorded at {} distinct excess value(s) (points beyond C - 1 workers and the "
                    "baseline): not fitted",
                    probe.file, distinct.size()));
  }
  double mx = 0, my = 0;
  for (const auto& [x, y] : xy) {
    mx += x;
    my += y;
  }
  mx /= static_cast<double>(xy.size());
  my /= static_cast<double>(xy.size());
  double sxy = 0, sxx = 0;
  for (const auto& [x, y] : xy) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) * (x - mx);
  }
  WakeDelayFit fit;
  fit.points = static_cast<int>(xy.size());
  fit.per_excess_s = std::max(0.0, sxy / sxx);
  fit.base_s = std::max(0.0, my - fit.per_excess_s * mx);
  double sse = 0;
  for (const auto& [x, y] : xy) {
    const double r = y - (fit.base_s + fit.per_excess_s * x);
    sse += r * r;
  }
  fit.rms_s = std::sqrt(sse / static_cast<double>(xy.size()));
  return fit;
}

std::vector<double> ProbeFaultFactors(const CpuProbe& probe, double no_fault_cpu_s, double fault_cost_s,
                                      double reference_faults) {
  std::vector<double> factors;
  for (const auto& p : probe.points) {
    const double own = no_fault_cpu_s + fault_cost_s * p.minflt_per_sample;
    const double reference = no_fault_cpu_s + fault_cost_s * reference_faults;
    factors.push_back(p.minflt_per_sample >= 0 && own > 0 && reference > 0 ? reference / own : 1.0);
  }
  return factors;
}

namespace {
double FactorOf(const std::vector<double>& factors, size_t i) { return factors.empty() ? 1.0 : factors.at(i); }
}  // namespace

std::vector<CurvePoint> ThroughputCostPoints(const CpuProbe& probe, const std::vector<double>& factors) {
  std::vector<CurvePoint> out;
  for (size_t i = 0; i < probe.points.size(); ++i) {
    const auto& p = probe.points[i];
    if (p.throughput_samples_per_s <= 0 || p.wall_s <= 0) continue;
    const double main_cores = std::clamp(p.main_cpu_s / p.wall_s, 0.0, 1.0);
    const double usable = std::min<double>(p.workers, std::max(1e-3, probe.cores - main_cores));
    out.push_back(
        {static_cast<double>(p.workers), usable / p.throughput_samples_per_s * FactorOf(factors, i), p.round});
  }
  return out;
}

std::vector<CurvePoint> ThreadCpuPoints(const CpuProbe& probe, const std::vector<double>& factors) {
  std::vector<CurvePoint> out;
  for (size_t i = 0; i < probe.points.size(); ++i) {
    const auto& p = probe.points[i];
    if (p.getitem_cpu_s > 0)
      out.push_back({static_cast<double>(p.workers), p.getitem_cpu_s * FactorOf(factors, i), p.round});
  }
  return out;
}

Result<CpuProbe> ReadCpuProbeFile(const std::string& path) {
  auto json = ReadJsonFile(path);
  if (!json.ok()) return json.status();
  const nlohmann::json& j = *json;
  if (!j.is_object()) return FieldError(path, "(document)", "a JSON object", j.type_name());
  if (!j.contains("schema") || !j["schema"].is_string() || j["schema"] != kCpuProbeSchema) {
    return FieldError(path, "schema", std::string("\"") + kCpuProbeSchema + "\"", j.value("schema", nlohmann::json()));
  }
  CpuProbe probe;
  probe.file = path;
  if (!j.contains("host") || !j["host"].is_object())
    return FieldError(path, "host", "an object", j.value("host", nlohmann::json()));
  const auto& cores = j["host"].value("cores", nlohmann::json());
  if (!cores.is_number_integer() || cores.get<int64_t>() < 1 || cores.get<int64_t>() > 4096) {
    return FieldError(path, "host.cores", "an integer in [1, 4096]", cores);
  }
  probe.cores = cores.get<int>();
  if (!j.contains("points") || !j["points"].is_array() || j["points"].empty()) {
    return FieldError(path, "points", "a non-empty array", j.value("points", nlohmann::json()));
  }
  for (size_t i = 0; i < j["points"].size(); ++i) {
    const auto& p = j["points"][i];
    const std::string where = fmt::format("points[{}]", i);
    if (!p.is_object()) return FieldError(path, where, "an object", p);
    CpuProbePoint point;
    const auto& workers = p.value("workers", nlohmann::json());
    if (!workers.is_number_integer() || workers.get<int64_t>() < 1 || workers.get<int64_t>() > 65536) {
      return FieldError(path, where + ".workers", "an integer in [1, 65536]", workers);
    }
    point.workers = workers.get<int>();
    SIMREPLAY_RETURN_IF_ERROR(ReadNumber(path, p, where, "wall_s", true, &point.wall_s));
    SIMREPLAY_RETURN_IF_ERROR(
        ReadNumber(path, p, where, "throughput_samples_per_s", true, &point.throughput_samples_per_s));
    SIMREPLAY_RETURN_IF_ERROR(ReadNumber(path, p, where, "getitem_cpu_s_mean", false, &point.getitem_cpu_s));
    SIMREPLAY_RETURN_IF_ERROR(ReadNumber(path, p, where, "getitem_wall_s_mean", false, &point.getitem_wall_s));
    SIMREPLAY_RETURN_IF_ERROR(ReadNumber(path, p, where, "main_cpu_s", false, &point.main_cpu_s));
    if (p.contains("round") && p["round"].is_number_integer()) point.round = p["round"].get<int>();
    for (auto [key, out] :
         {std::pair{"workers_cpu_s", &point.workers_cpu_s}, std::pair{"host_busy_cores", &point.host_busy_cores},
          std::pair{"wake_delay_s_mean", &point.wake_delay_s},
          std::pair{"minflt_per_sample_mean", &point.minflt_per_sample}}) {
      if (p.contains(key)) SIMREPLAY_RETURN_IF_ERROR(ReadNumber(path, p, where, key, false, out));
    }
    if (point.wake_delay_s > kMaxWakeDelayS) {
      return FieldError(path, where + ".wake_delay_s_mean", "a delay in [0, 60] s", p["wake_delay_s_mean"]);
    }
    if (p.contains("loadavg_1m") && p["loadavg_1m"].is_array() && !p["loadavg_1m"].empty() &&
        p["loadavg_1m"][0].is_number()) {
      point.loadavg_1m = p["loadavg_1m"][0].get<double>();
    }
    probe.points.push_back(point);
  }
  if (j.contains("baseline_wake")) {
    const auto& b = j["baseline_wake"];
    if (!b.is_object()) return FieldError(path, "baseline_wake", "an object", b);
    SIMREPLAY_RETURN_IF_ERROR(
        ReadNumber(path, b, "baseline_wake", "delay_s_mean", false, &probe.baseline_wake_delay_s));
    if (probe.baseline_wake_delay_s > kMaxWakeDelayS) {
      return FieldError(path, "baseline_wake.delay_s_mean", "a delay in [0, 60] s", b["delay_s_mean"]);
    }
  }
  if (j.contains("inline")) {
    const auto& p = j["inline"];
    if (!p.is_object()) return FieldError(path, "inline", "an object", p);
    CpuProbeInline point;
    SIMREPLAY_RETURN_IF_ERROR(
        ReadNumber(path, p, "inline", "throughput_samples_per_s", true, &point.throughput_samples_per_s));
    SIMREPLAY_RETURN_IF_ERROR(ReadNumber(path, p, "inline", "getitem_cpu_s_mean", false, &point.getitem_cpu_s));
    if (p.contains("minflt_per_sample_mean")) {
      SIMREPLAY_RETURN_IF_ERROR(
          ReadNumber(path, p, "inline", "minflt_per_sample_mean", false, &point.minflt_per_sample));
    }
    probe.inline_point = point;
  }
  return probe;
}

}  // namespace simreplay::calibrate
