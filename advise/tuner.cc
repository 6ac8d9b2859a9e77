#include "advise/tuner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "replay/manifest.h"
#include "sim/isolated_run.h"

namespace simreplay::advise {

namespace {

constexpr double kInfeasible = -std::numeric_limits<double>::infinity();

// One searchable axis: its name, the relief that seeds its rank, and how it sets and shows a value.
struct Axis {
  std::string name;
  std::string relief;  // the causal profile's relief for this knob ("" = none)
  std::vector<Knobs> (*values)(const Knobs& at, const TuneOptions& o, int cores);
  std::string (*show)(const Knobs& k);
};

std::vector<Knobs> WorkerValues(const Knobs& at, const TuneOptions&, int) {
  std::vector<Knobs> out;
  for (int w : {0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64}) {
    Knobs k = at;
    k.num_workers = w;
    if (w == 0) k.persistent_workers = false;  // PyTorch rejects persistent workers without workers
    out.push_back(k);
  }
  return out;
}
std::vector<Knobs> PrefetchValues(const Knobs& at, const TuneOptions&, int) {
  if (at.num_workers == 0) return {};
  std::vector<Knobs> out;
  for (int p : {1, 2, 4, 8}) {
    Knobs k = at;
    k.prefetch_factor = p;
    out.push_back(k);
  }
  return out;
}
std::vector<Knobs> PersistentValues(const Knobs& at, const TuneOptions&, int) {
  if (at.num_workers == 0) return {};
  Knobs off = at, on = at;
  off.persistent_workers = false;
  on.persistent_workers = true;
  return {off, on};
}
std::vector<Knobs> PinValues(const Knobs& at, const TuneOptions&, int) {
  Knobs off = at, on = at;
  off.pin_memory = false;
  on.pin_memory = true;
  return {off, on};
}
std::vector<Knobs> FormatValues(const Knobs& at, const TuneOptions&, int) {
  std::vector<Knobs> out;
  for (const char* f : {"files", "tar", "lmdb", "hdf5"}) {
    Knobs k = at;
    k.format = f;
    out.push_back(k);
  }
  return out;
}
std::vector<Knobs> CoreValues(const Knobs& at, const TuneOptions& o, int cores) {
  if (o.objective != TuneObjective::kCost) return {};
  std::vector<Knobs> out;
  for (int c : {cores / 2, cores, 2 * cores, 4 * cores}) {
    if (c < 1) continue;
    Knobs k = at;
    k.cpu_cores = c;
    out.push_back(k);
  }
  return out;
}

const std::vector<Axis>& Axes() {
  static const std::vector<Axis> axes = {
      {"num_workers", "num_workers", WorkerValues, [](const Knobs& k) { return std::to_string(k.num_workers); }},
      {"prefetch_factor", "prefetch_factor", PrefetchValues,
       [](const Knobs& k) { return std::to_string(k.prefetch_factor); }},
      {"persistent_workers", "persistent_workers", PersistentValues,
       [](const Knobs& k) { return std::string(k.persistent_workers ? "true" : "false"); }},
      {"pin_memory", "pin_memory", PinValues, [](const Knobs& k) { return std::string(k.pin_memory ? "true" : "false"); }},
      {"data.format", "", FormatValues, [](const Knobs& k) { return k.format; }},
      {"hardware.cpu_cores", "cpu_cores", CoreValues, [](const Knobs& k) { return std::to_string(k.cpu_cores); }},
  };
  return axes;
}

// `captured_format`: the container the trace was captured with (the scenario then names none, so the
// costs replay as recorded rather than through the format model).
scenarios::Scenario WithKnobs(const scenarios::Scenario& base, const Knobs& k, const std::string& captured_format) {
  scenarios::Scenario s = base;
  s.loader.num_workers = k.num_workers;
  s.loader.prefetch_factor = k.prefetch_factor;
  s.loader.pin_memory = k.pin_memory;
  s.loader.persistent_workers = k.persistent_workers;
  s.data_format = k.format == captured_format ? std::string() : k.format;
  s.hardware.cpu_cores = k.cpu_cores;
  return s;
}

// The search's state: the scenario, its limits, and every configuration simulated so far.
class Search {
 public:
  Search(const scenarios::Scenario& scenario, std::string captured_format, const TuneOptions& options,
         sim::CostCache* cache, int gpus_per_node, int ranks, double memory_limit_bytes)
      : scenario_(scenario),
        captured_format_(std::move(captured_format)),
        options_(options),
        cache_(cache),
        gpus_per_node_(gpus_per_node),
        ranks_(ranks),
        memory_limit_bytes_(memory_limit_bytes) {}

  // Simulates the configurations not simulated yet (in parallel), at most what the budget leaves. A
  // configuration over the core limit is not simulated, unless `reference` (the current one, which
  // every gain is measured from, is simulated whatever limit it breaks).
  Status Evaluate(const std::vector<Knobs>& wanted, bool reference = false) {
    std::vector<Knobs> todo;
    for (const auto& k : wanted) {
      if (memo_.count(k) || std::find(todo.begin(), todo.end(), k) != todo.end()) continue;
      std::string why = CoreLimit(k);
      if (!why.empty() && !reference) {
        memo_[k] = Evaluated{k, {}, kInfeasible, false, why};
        continue;
      }
      if (configurations_ + static_cast<int>(todo.size()) >= options_.budget) {
        budget_exhausted_ = true;
        break;
      }
      todo.push_back(k);
    }
    if (todo.empty()) return Status::Ok();
    std::vector<sim::PreparedPoint> points;
    std::vector<Knobs> prepared;
    for (const auto& k : todo) {
      auto p = sim::PreparePoint(WithKnobs(scenario_, k, captured_format_), cache_);
      if (!p.ok()) {
        // A value the models cannot simulate (a container with no format model) is not a failure of
        // the search; a current configuration that cannot be prepared fails earlier, in Tune().
        memo_[k] = Evaluated{k, {}, kInfeasible, false, "cannot be simulated: " + p.status().message()};
        continue;
      }
      points.push_back(std::move(*p));
      prepared.push_back(k);
    }
    todo = std::move(prepared);
    if (todo.empty()) return Status::Ok();
    std::vector<sim::IsolatedJob> jobs;
    for (const auto& p : points) {
      for (auto& j : sim::MakeJobs(p, "")) jobs.push_back(std::move(j));
    }
    if (options_.on_progress) {
      options_.on_progress(fmt::format("{} configurations ({} simulated so far)", todo.size(), configurations_));
    }
    auto results = sim::RunIsolated(jobs, std::max(1, options_.jobs));
    simulations_ += static_cast<int>(jobs.size());
    for (size_t i = 0; i < todo.size(); ++i) {
      auto runs = sim::DecodePointRuns(results[2 * i], results[2 * i + 1]);
      if (!runs.ok()) return runs.status().WithPrefix(DescribeKnobs(todo[i]) + ": ");
      Evaluated e;
      e.knobs = todo[i];
      e.metrics = MetricsOf(points[i], *runs);
      e.objective = Objective(e.metrics, points[i].input.cpu_cores);
      e.infeasible_because = CoreLimit(todo[i]);
      e.feasible = e.infeasible_because.empty();
      if (e.feasible && memory_limit_bytes_ > 0 && e.metrics.peak_host_memory_bytes > memory_limit_bytes_) {
        e.feasible = false;
        e.infeasible_because = fmt::format("memory: predicted peak {:.2f} GiB > limit {:.2f} GiB",
                                           e.metrics.peak_host_memory_bytes / (1 << 30), memory_limit_bytes_ / (1 << 30));
      }
      memo_[todo[i]] = e;
      ++configurations_;
    }
    return Status::Ok();
  }

  const Evaluated* Find(const Knobs& k) const {
    auto it = memo_.find(k);
    return it == memo_.end() ? nullptr : &it->second;
  }
  static double Score(const Evaluated& e) { return e.feasible ? e.objective : kInfeasible; }

  const std::map<Knobs, Evaluated>& memo() const { return memo_; }
  int configurations() const { return configurations_; }
  int simulations() const { return simulations_; }
  bool budget_exhausted() const { return budget_exhausted_; }

 private:
  std::string CoreLimit(const Knobs& k) const {
    const int cores = k.cpu_cores;
    const double limit = cores * options_.max_workers_per_core;
    if (static_cast<double>(k.num_workers) * gpus_per_node_ <= limit + 1e-9) return "";
    return fmt::format("cores: {} workers x {} ranks per node > {} cores x {:g} workers per core",
                       k.num_workers, gpus_per_node_, cores, options_.max_workers_per_core);
  }

  double Objective(const PointMetrics& m, int cores) const {
    if (options_.objective == TuneObjective::kThroughput) return m.train_samples_per_s;
    // Samples per unit of price: GPUs and the nodes' cores, per hour.
    const double price_per_hour =
        options_.gpu_hour_price * ranks_ + options_.core_hour_price * cores * (ranks_ / gpus_per_node_);
    return m.train_samples_per_s * 3600 / price_per_hour;
  }

  const scenarios::Scenario& scenario_;
  const std::string captured_format_;
  const TuneOptions& options_;
  sim::CostCache* cache_;
  int gpus_per_node_, ranks_;
  double memory_limit_bytes_;
  std::map<Knobs, Evaluated> memo_;
  int configurations_ = 0, simulations_ = 0;
  bool budget_exhausted_ = false;
};

// Why the search did not take `value` on an axis where it took `chosen`.
std::string RejectionReason(const Evaluated& value, const Evaluated& chosen, const scenarios::Scenario& s,
                            int gpus_per_node) {
  if (!value.feasible) return value.infeasible_because;
  const double ratio = chosen.objective > 0 ? value.objective / chosen.objective - 1 : 0;
  for (const auto& t : s.storage.tiers) {
    if (t.max_streams > 0 && value.knobs.num_workers * gpus_per_node >= t.max_streams &&
        value.knobs.num_workers > chosen.knobs.num_workers) {
      return fmt::format("storage streams: {} workers per node already fill the tier's {} streams ({:+.1f}%)",
                         value.knobs.num_workers * gpus_per_node, t.max_streams, 100 * ratio);
    }
  }
  if (ratio > 0) return fmt::format("buys only {:+.1f}% (< {:.0f}% needed to move)", 100 * ratio, 100 * kMoveThreshold);
  return fmt::format("{:+.1f}% against the chosen value", 100 * ratio);
}

// How many settings `a` changes from `b`.
int Changes(const Knobs& a, const Knobs& b) {
  return (a.num_workers != b.num_workers) + (a.prefetch_factor != b.prefetch_factor) + (a.pin_memory != b.pin_memory) +
         (a.persistent_workers != b.persistent_workers) + (a.format != b.format) + (a.cpu_cores != b.cpu_cores);
}

}  // namespace

bool Knobs::operator<(const Knobs& o) const {
  return std::tie(num_workers, prefetch_factor, pin_memory, persistent_workers, format, cpu_cores) <
         std::tie(o.num_workers, o.prefetch_factor, o.pin_memory, o.persistent_workers, o.format, o.cpu_cores);
}
bool Knobs::operator==(const Knobs& o) const { return !(*this < o) && !(o < *this); }

std::string DescribeKnobs(const Knobs& k) {
  return fmt::format("num_workers={} prefetch_factor={} pin_memory={} persistent_workers={} format={} cpu_cores={}",
                     k.num_workers, k.prefetch_factor, k.pin_memory, k.persistent_workers, k.format, k.cpu_cores);
}

Result<TuneResult> Tune(const scenarios::Scenario& scenario, const TuneOptions& options, sim::CostCache* cache) {
  if (options.objective == TuneObjective::kCost && (options.gpu_hour_price <= 0 || options.core_hour_price < 0)) {
    return Status::InvalidArgument("tune --objective cost needs --gpu-hour-price > 0 (and --core-hour-price >= 0)");
  }
  auto base = sim::PreparePoint(scenario, cache);
  if (!base.ok()) return base.status();
  const auto& model = base->input.model;
  const int gpus_per_node = scenario.hardware.gpus;
  const int ranks = gpus_per_node * scenario.cluster.nodes;
  const double capacity = options.memory_bytes > 0 ? options.memory_bytes : model.memory.capacity_bytes;
  const double memory_limit = capacity * (1 - options.memory_headroom);
  // The main processes alone need their base memory: a limit below it can hold for no configuration.
  if (capacity > 0 && memory_limit < model.memory.main_base_bytes * gpus_per_node) {
    return Status::InvalidArgument(fmt::format(
        "impossible constraints: host memory limit {:.2f} GiB ({:.0f}% headroom of {:.2f} GiB) is below the {:.2f} "
        "GiB the {} main process(es) need before loading anything",
        memory_limit / (1 << 30), 100 * options.memory_headroom, capacity / (1 << 30),
        model.memory.main_base_bytes * gpus_per_node / (1 << 30), gpus_per_node));
  }

  TuneResult result;
  result.memory_limit_bytes = capacity > 0 ? memory_limit : 0;
  ProfileOptions popts;
  popts.jobs = options.jobs;
  popts.band = options.band;
  auto profile = ProfileScenario(scenario, popts, cache);
  if (!profile.ok()) return profile.status();
  result.profile = std::move(*profile);

  Knobs current;
  current.num_workers = scenario.loader.num_workers;
  current.prefetch_factor = scenario.loader.prefetch_factor;
  current.pin_memory = scenario.loader.pin_memory;
  current.persistent_workers = scenario.loader.persistent_workers;
  current.format = scenario.data_format.empty() ? replay::ContainerOfManifest(base->costs->manifest) : scenario.data_format;
  current.cpu_cores = base->input.cpu_cores;

  result.constraints.push_back(
      capacity > 0 ? fmt::format("host memory: predicted peak <= {:.2f} GiB ({:.0f}% headroom of {:.2f} GiB, {})",
                                 memory_limit / (1 << 30), 100 * options.memory_headroom, capacity / (1 << 30),
                                 options.memory_bytes > 0 ? "--memory-bytes" : "the model's memory.capacity_bytes")
                   : "host memory: unknown (no --memory-bytes and no memory.capacity_bytes in the model): not checked");
  result.constraints.push_back(fmt::format(
      "cores: workers x {} ranks per node <= cores x {:g} (PyTorch's DataLoader warns above one per core; "
      "--max-workers-per-core)",
      gpus_per_node, options.max_workers_per_core));
  for (const auto& t : scenario.storage.tiers) {
    if (t.max_streams > 0) {
      result.constraints.push_back(fmt::format(
          "storage: {} streams per node on the {} tier (simulated: requests beyond it queue)", t.max_streams,
          models::TierKindName(t.kind)));
    }
  }

  // Axis order: by the profile's gain for the axis's knob, largest first; the rest keep their order.
  std::vector<const Axis*> axes;
  std::vector<double> axis_gain;  // -inf: the knob has no relief in the profile
  for (const auto& a : Axes()) {
    if (a.values(current, options, current.cpu_cores).empty() && a.name == "hardware.cpu_cores") continue;
    double gain = kInfeasible;
    for (const auto& r : result.profile.reliefs) {
      if (!a.relief.empty() && r.relief.name == a.relief) gain = r.gain;
    }
    axes.push_back(&a);
    axis_gain.push_back(gain);
  }
  std::vector<size_t> order(axes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return axis_gain[x] > axis_gain[y]; });
  for (size_t i : order) {
    result.axis_order.push_back(std::isfinite(axis_gain[i])
                                    ? fmt::format("{} (relief {:+.1f}%)", axes[i]->name, 100 * axis_gain[i])
                                    : axes[i]->name + " (no relief in the profile: after the ranked axes)");
  }

  Search search(scenario, current.format, options, cache, gpus_per_node, ranks, capacity > 0 ? memory_limit : 0);
  SIMREPLAY_RETURN_IF_ERROR(search.Evaluate({current}, /*reference=*/true));
  if (search.Find(current) == nullptr || search.Find(current)->metrics.train_samples_per_s <= 0) {
    return Status::InvalidArgument("the scenario's own configuration cannot be simulated: " +
                                   (search.Find(current) ? search.Find(current)->infeasible_because : std::string("?")));
  }
  Knobs best = current;
  std::map<std::string, std::vector<Rejection>> rejections;
  while (true) {
    ++result.passes;
    bool moved = false;
    for (size_t i : order) {
      const Axis& axis = *axes[i];
      const std::vector<Knobs> values = axis.values(best, options, current.cpu_cores);
      if (values.empty()) continue;
      SIMREPLAY_RETURN_IF_ERROR(search.Evaluate(values));
      // The axis's best feasible value (ties keep the earlier one); move only when it buys enough.
      const Evaluated* top = nullptr;
      for (const auto& v : values) {
        const Evaluated* e = search.Find(v);
        if (e != nullptr && e->feasible && (top == nullptr || e->objective > top->objective)) top = e;
      }
      const Evaluated& here = *search.Find(best);
      if (top != nullptr && !(top->knobs == best) &&
          (!here.feasible || top->objective > here.objective * (1 + kMoveThreshold))) {
        best = top->knobs;
        moved = true;
      }
      auto& list = rejections[axis.name];
      list.clear();
      const Evaluated& taken = *search.Find(best);
      for (const auto& v : values) {
        const Evaluated* e = search.Find(v);
        if (e == nullptr || v == best) continue;
        list.push_back({axis.name, axis.show(v), RejectionReason(*e, taken, scenario, gpus_per_node)});
      }
      if (search.budget_exhausted()) break;
    }
    if (!moved || search.budget_exhausted()) break;
  }

  // The answer. Differences under kMoveThreshold are not meaningful, so among the feasible
  // configurations within it of the best simulated one, the one changing the fewest settings wins
  // (then the higher objective, then the earlier in knob order). It must buy kMinRecommendedGain over
  // the current configuration, as every recommendation must; otherwise the current one stays.
  result.current = *search.Find(current);
  double top = kInfeasible;
  for (const auto& [k, e] : search.memo()) top = std::max(top, Search::Score(e));
  const Evaluated* answer = nullptr;
  for (const auto& [k, e] : search.memo()) {
    if (!e.feasible || e.objective < top / (1 + kMoveThreshold)) continue;
    if (answer == nullptr || Changes(k, current) < Changes(answer->knobs, current) ||
        (Changes(k, current) == Changes(answer->knobs, current) && e.objective > answer->objective)) {
      answer = &e;
    }
  }
  best = answer != nullptr ? answer->knobs : current;
  if (result.current.feasible && search.Find(best)->objective < result.current.objective * (1 + kMinRecommendedGain)) {
    best = current;
  }
  result.best = *search.Find(best);
  if (!result.best.feasible) {
    return Status::InvalidArgument("impossible constraints: no configuration searched satisfies them (current: " +
                                   result.current.infeasible_because + ")");
  }
  const double c = std::max(result.current.objective, 1e-12);
  result.gain = result.best.objective / c - 1;
  GainInterval(options.band, result.current.objective, result.best.objective, &result.gain_low, &result.gain_high);
  std::vector<Evaluated> feasible;
  for (const auto& [k, e] : search.memo()) {
    if (e.feasible && !(k == best)) feasible.push_back(e);
  }
  std::stable_sort(feasible.begin(), feasible.end(),
                   [](const Evaluated& a, const Evaluated& b) { return a.objective > b.objective; });
  for (size_t i = 0; i < feasible.size() && i < 3; ++i) result.runners_up.push_back(feasible[i]);
  for (size_t i : order) {
    for (auto& r : rejections[axes[i]->name]) result.rejections.push_back(std::move(r));
  }
  result.configurations = search.configurations();
  result.simulations = search.simulations() + result.profile.simulations;
  result.budget_exhausted = search.budget_exhausted();
  return result;
}

}  // namespace simreplay::advise
