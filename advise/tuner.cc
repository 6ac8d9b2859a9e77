#include "advise/tuner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "models/format_model.h"
#include "replay/manifest.h"
#include "sim/isolated_run.h"

namespace simreplay::advise {

namespace {

constexpr double kInfeasible = -std::numeric_limits<double>::infinity();
constexpr double kMiB = 1024.0 * 1024.0;

// What the axes need to know about the scenario beyond the knobs.
struct AxisContext {
  const TuneOptions* options = nullptr;
  int cores = 0;
  bool communicates = false;       // ranks > 1 that exchange gradients
  double gradient_bytes = 0;
  double current_overlap = 0;
  double current_bucket_bytes = 0;
  bool cache_applies = false;      // the data lives on a remote tier with no cache in front of it
  bool decode_tool_listed = false; // the compatibility table has a tool simulated as decode.device=gpu
  bool has_media = false;          // the trace records per-media samples (GPU decoding has work to move)
};

// One searchable axis: its name, the relief that seeds its rank, how it lists and shows a value, and
// how it copies its value from one configuration to another (for the joint neighbourhood).
struct Axis {
  std::string name;
  std::string relief;  // the causal profile's relief for this knob ("" = none)
  std::vector<Knobs> (*values)(const Knobs& at, const AxisContext& c);
  std::string (*show)(const Knobs& k);
  void (*copy)(const Knobs& from, Knobs* to);
};

std::vector<Knobs> WorkerValues(const Knobs& at, const AxisContext&) {
  std::vector<Knobs> out;
  for (int w : {0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64}) {
    Knobs k = at;
    k.num_workers = w;
    if (w == 0) k.persistent_workers = false;  // PyTorch rejects persistent workers without workers
    out.push_back(k);
  }
  return out;
}
std::vector<Knobs> PrefetchValues(const Knobs& at, const AxisContext&) {
  if (at.num_workers == 0) return {};
  std::vector<Knobs> out;
  for (int p : {1, 2, 4, 8}) {
    Knobs k = at;
    k.prefetch_factor = p;
    out.push_back(k);
  }
  return out;
}
std::vector<Knobs> PersistentValues(const Knobs& at, const AxisContext&) {
  if (at.num_workers == 0) return {};
  Knobs off = at, on = at;
  off.persistent_workers = false;
  on.persistent_workers = true;
  return {off, on};
}
std::vector<Knobs> PinValues(const Knobs& at, const AxisContext&) {
  Knobs off = at, on = at;
  off.pin_memory = false;
  on.pin_memory = true;
  return {off, on};
}
std::vector<Knobs> FormatValues(const Knobs& at, const AxisContext&) {
  std::vector<Knobs> out;
  for (const char* f : {"files", "tar", "lmdb", "hdf5"}) {
    Knobs k = at;
    k.format = f;
    out.push_back(k);
  }
  return out;
}
std::vector<Knobs> AccessValues(const Knobs& at, const AxisContext&) {
  Knobs random = at, sequential = at;
  random.sequential = false;
  sequential.sequential = true;
  return {random, sequential};
}
std::vector<Knobs> CacheValues(const Knobs& at, const AxisContext& c) {
  if (!c.cache_applies) return {};
  std::vector<Knobs> out;
  for (const char* tier : {"", "nvme_cache", "page_cache"}) {
    Knobs k = at;
    k.cache = tier;
    out.push_back(k);
  }
  return out;
}
std::vector<Knobs> BucketValues(const Knobs& at, const AxisContext& c) {
  if (!c.communicates || c.gradient_bytes <= 0) return {};
  std::vector<double> sizes = {0, 1 * kMiB, 5 * kMiB, 25 * kMiB, 100 * kMiB};
  if (std::find(sizes.begin(), sizes.end(), c.current_bucket_bytes) == sizes.end()) {
    sizes.push_back(c.current_bucket_bytes);
    std::sort(sizes.begin(), sizes.end());
  }
  std::vector<Knobs> out;
  for (double b : sizes) {
    // A bucket as large as the gradients is one bucket: the same configuration as 0.
    if (b >= c.gradient_bytes && b != c.current_bucket_bytes) continue;
    Knobs k = at;
    k.bucket_bytes = b;
    out.push_back(k);
  }
  return out;
}
std::vector<Knobs> OverlapValues(const Knobs& at, const AxisContext& c) {
  if (!c.communicates) return {};
  std::vector<double> shares = {0, c.options->backward_share};
  if (std::find(shares.begin(), shares.end(), c.current_overlap) == shares.end()) shares.push_back(c.current_overlap);
  std::sort(shares.begin(), shares.end());
  std::vector<Knobs> out;
  for (double o : shares) {
    Knobs k = at;
    k.overlap = o;
    out.push_back(k);
  }
  return out;
}
std::vector<Knobs> DecodeValues(const Knobs& at, const AxisContext& c) {
  if (!c.decode_tool_listed || !c.has_media) return {};
  Knobs cpu = at, gpu = at;
  cpu.gpu_decode = false;
  gpu.gpu_decode = true;
  return {cpu, gpu};
}
std::vector<Knobs> CoreValues(const Knobs& at, const AxisContext& c) {
  if (c.options->objective != TuneObjective::kCost) return {};
  std::vector<Knobs> out;
  for (int n : {c.cores / 2, c.cores, 2 * c.cores, 4 * c.cores}) {
    if (n < 1) continue;
    Knobs k = at;
    k.cpu_cores = n;
    out.push_back(k);
  }
  return out;
}

std::string ShowBytes(double b) { return b <= 0 ? std::string("one bucket") : fmt::format("{:g} MiB", b / kMiB); }

const std::vector<Axis>& Axes() {
  static const std::vector<Axis> axes = {
      {"num_workers", "num_workers", WorkerValues, [](const Knobs& k) { return std::to_string(k.num_workers); },
       [](const Knobs& f, Knobs* t) {
         t->num_workers = f.num_workers;
         if (t->num_workers == 0) t->persistent_workers = false;
       }},
      {"prefetch_factor", "prefetch_factor", PrefetchValues,
       [](const Knobs& k) { return std::to_string(k.prefetch_factor); },
       [](const Knobs& f, Knobs* t) { t->prefetch_factor = f.prefetch_factor; }},
      {"persistent_workers", "persistent_workers", PersistentValues,
       [](const Knobs& k) { return std::string(k.persistent_workers ? "true" : "false"); },
       [](const Knobs& f, Knobs* t) { t->persistent_workers = f.persistent_workers && t->num_workers > 0; }},
      {"pin_memory", "pin_memory", PinValues, [](const Knobs& k) { return std::string(k.pin_memory ? "true" : "false"); },
       [](const Knobs& f, Knobs* t) { t->pin_memory = f.pin_memory; }},
      {"data.format", "", FormatValues, [](const Knobs& k) { return k.format; },
       [](const Knobs& f, Knobs* t) { t->format = f.format; }},
      {"data.access", "", AccessValues, [](const Knobs& k) { return std::string(k.sequential ? "sequential" : "random"); },
       [](const Knobs& f, Knobs* t) { t->sequential = f.sequential; }},
      {"storage.cache", "", CacheValues, [](const Knobs& k) { return k.cache.empty() ? std::string("none") : k.cache; },
       [](const Knobs& f, Knobs* t) { t->cache = f.cache; }},
      {"collective.bucket_bytes", "", BucketValues, [](const Knobs& k) { return ShowBytes(k.bucket_bytes); },
       [](const Knobs& f, Knobs* t) { t->bucket_bytes = f.bucket_bytes; }},
      {"collective.overlap", "collective_overlap", OverlapValues, [](const Knobs& k) { return fmt::format("{:.3g}", k.overlap); },
       [](const Knobs& f, Knobs* t) { t->overlap = f.overlap; }},
      {"decode.device", "", DecodeValues, [](const Knobs& k) { return std::string(k.gpu_decode ? "gpu" : "cpu"); },
       [](const Knobs& f, Knobs* t) { t->gpu_decode = f.gpu_decode; }},
      {"hardware.cpu_cores", "cpu_cores", CoreValues, [](const Knobs& k) { return std::to_string(k.cpu_cores); },
       [](const Knobs& f, Knobs* t) { t->cpu_cores = f.cpu_cores; }},
  };
  return axes;
}

bool IsRemoteTier(models::TierKind k) {
  return k == models::TierKind::kParallelFs || k == models::TierKind::kObjectStore;
}

// Batches one rank loads per epoch.
int64_t EpochBatches(const scenarios::Scenario& s) {
  const int64_t ranks = std::max(1, s.cluster.Ranks());
  const int64_t per_rank = (std::max<int64_t>(s.train.dataset_samples, 1) + ranks - 1) / ranks;
  const int64_t batch = std::max(1, s.loader.batch_size);
  return s.loader.drop_last ? per_rank / batch : (per_rank + batch - 1) / batch;
}

// Optimizer steps in one epoch of a rank (at least 1).
int64_t EpochSteps(const scenarios::Scenario& s) {
  return std::max<int64_t>(1, EpochBatches(s) / std::max(1, s.train.grad_accum));
}

// The optimizer steps a scenario runs (its steps, else its epochs over the prepared dataset size).
int64_t FullSteps(const sim::PreparedPoint& p) {
  const auto& s = p.input.scenario;
  if (s.train.steps > 0) return s.train.steps;
  return std::max<int64_t>(1, s.train.epochs * EpochBatches(s) / std::max(1, s.train.grad_accum));
}

// The search's state: the scenario, its limits, and every configuration simulated so far.
class Search {
 public:
  Search(const scenarios::Scenario& scenario, const sim::PreparedPoint& base, std::string captured_format,
         const TuneOptions& options, sim::CostCache* cache, double memory_limit_bytes,
         const std::vector<ToolCheck>& tools)
      : scenario_(scenario),
        base_(base),
        captured_format_(std::move(captured_format)),
        options_(options),
        cache_(cache),
        gpus_per_node_(scenario.hardware.gpus),
        ranks_(scenario.hardware.gpus * scenario.cluster.nodes),
        memory_limit_bytes_(memory_limit_bytes),
        tools_(tools) {}

  // The RAM cache's size: the memory the current configuration leaves under the limit (0 = none).
  void SetRamCacheBytes(double bytes) { ram_cache_bytes_ = std::max(0.0, bytes); }
  double ram_cache_bytes() const { return ram_cache_bytes_; }

  // The scenario with `k` applied. `steps` > 0: a short run of that many optimizer steps.
  scenarios::Scenario WithKnobs(const Knobs& k, int64_t steps = 0) const {
    scenarios::Scenario s = scenario_;
    s.loader.num_workers = k.num_workers;
    s.loader.prefetch_factor = k.prefetch_factor;
    s.loader.pin_memory = k.pin_memory;
    s.loader.persistent_workers = k.persistent_workers;
    // The captured container replays as recorded (no format transform) unless its access changes.
    s.data_format = k.format == captured_format_ ? std::string() : k.format;
    s.data_sequential = k.sequential;
    s.hardware.cpu_cores = k.cpu_cores;
    s.collective.bucket_bytes = k.bucket_bytes;
    s.collective.overlap = k.overlap;
    s.decode_on_gpu = k.gpu_decode;
    if (!k.cache.empty() && !s.storage.tiers.empty()) {
      models::StorageTier t;
      const auto& storage = base_.input.model.storage;
      if (k.cache == "nvme_cache") {
        t.kind = models::TierKind::kNvmeCache;
        t.capacity_bytes = options_.cache_bytes;
        t.latency_s = storage.latency_s;
        t.bytes_per_s_per_stream = storage.bandwidth_bytes_per_s;
      } else {
        t.kind = models::TierKind::kPageCache;
        t.capacity_bytes = ram_cache_bytes_;
        t.latency_s = 0;
        t.bytes_per_s_per_stream = storage.page_cache_bytes_per_s;
      }
      // Fastest first: a RAM cache in front of everything, an NVMe cache behind any RAM cache.
      auto at = s.storage.tiers.begin();
      if (t.kind == models::TierKind::kNvmeCache) {
        while (at != s.storage.tiers.end() && at->kind == models::TierKind::kPageCache) ++at;
      }
      s.storage.tiers.insert(at, t);
    }
    if (steps > 0) {
      s.train.steps = steps;
      s.train.epochs = 0;
    }
    return s;
  }

  // Why `k` cannot run on this machine or job, before any simulation ("" = it can).
  std::string StaticLimit(const Knobs& k) const {
    const double limit = k.cpu_cores * options_.max_workers_per_core;
    if (static_cast<double>(k.num_workers) * gpus_per_node_ > limit + 1e-9) {
      return fmt::format("cores: {} workers x {} ranks per node > {} cores x {:g} workers per core", k.num_workers,
                         gpus_per_node_, k.cpu_cores, options_.max_workers_per_core);
    }
    if (k.sequential) {
      const auto formats = models::CatalogueFormats();
      auto it = formats.containers.find(k.format);
      if (it == formats.containers.end() || !it->second.sequential) {
        return fmt::format("access: '{}' has no streaming order (a streaming pass reads tar, tfrecord or parquet shards)",
                           k.format);
      }
      if (Shuffled() && !options_.allow_streaming) {
        return "access: the job shuffles (loader.shuffle); a streaming pass replaces its global shuffle by shard and "
               "buffer shuffling (WebDataset-style), a change to what it trains on: --allow-streaming to search it";
      }
    }
    if (k.cache == "nvme_cache" && options_.cache_bytes <= 0) {
      return "cache: no --cache-bytes (the local disk space a cache may take per node): an NVMe cache is not searched";
    }
    if (k.cache == "page_cache" && ram_cache_bytes_ <= 0) {
      return memory_limit_bytes_ > 0 ? "memory: the current configuration leaves no host memory under the limit for a RAM cache"
                                     : "memory: host memory unknown (--memory-bytes): a RAM cache cannot be sized";
    }
    if (k.gpu_decode) {
      for (const auto& t : tools_) {
        if (t.simulated_as != "decode.device=gpu" || t.compatible) continue;
        std::string why;
        for (const auto& r : t.incompatible) why += (why.empty() ? "" : "; ") + r;
        return "compatibility: " + t.name + " " + why;
      }
    }
    return "";
  }

  // Simulates the configurations not simulated yet (in parallel), at most what the budget leaves. A
  // configuration over a static limit is not simulated, unless `reference` (the current one, which
  // every gain is measured from, is simulated whatever limit it breaks). `beyond_budget`: the answer's
  // single-setting reverts, at most one per setting it changes, which the budget must not refuse.
  Status Evaluate(const std::vector<Knobs>& wanted, bool reference = false, bool beyond_budget = false) {
    std::vector<Knobs> todo;
    for (const auto& k : wanted) {
      if (memo_.count(k) || std::find(todo.begin(), todo.end(), k) != todo.end()) continue;
      std::string why = StaticLimit(k);
      if (!why.empty() && !reference) {
        memo_[k] = Evaluated{k, {}, kInfeasible, false, why};
        continue;
      }
      if (!beyond_budget && configurations_ + static_cast<int>(todo.size()) >= options_.budget) {
        budget_exhausted_ = true;
        break;
      }
      todo.push_back(k);
    }
    auto evaluated = Simulate(todo, 0);
    if (!evaluated.ok()) return evaluated.status();
    for (auto& e : *evaluated) {
      if (e.simulated) ++(beyond_budget ? revert_configurations_ : configurations_);
      memo_[e.knobs] = std::move(e);
    }
    return Status::Ok();
  }

  // Short runs of `steps` optimizer steps: their objectives, in the order given (not memoised).
  Result<std::vector<Evaluated>> EvaluateShort(const std::vector<Knobs>& knobs, int64_t steps) {
    return Simulate(knobs, steps);
  }

  const Evaluated* Find(const Knobs& k) const {
    auto it = memo_.find(k);
    return it == memo_.end() ? nullptr : &it->second;
  }
  static double Score(const Evaluated& e) { return e.feasible ? e.objective : kInfeasible; }

  const std::map<Knobs, Evaluated>& memo() const { return memo_; }
  int configurations() const { return configurations_; }
  int revert_configurations() const { return revert_configurations_; }
  int simulations() const { return simulations_; }
  bool budget_exhausted() const { return budget_exhausted_; }
  int budget_left() const { return options_.budget - configurations_; }

 private:
  bool Shuffled() const {
    return scenario_.loader.shuffle || replay::ManifestBool(base_.costs->manifest, "loader", "shuffle");
  }

  // Prepares and simulates `todo` (steps > 0: short runs), in parallel; a value the models cannot
  // simulate (a container with no format model) is an infeasible result, not a failure of the search.
  Result<std::vector<Evaluated>> Simulate(const std::vector<Knobs>& todo_in, int64_t steps) {
    std::vector<Evaluated> out;
    std::vector<sim::PreparedPoint> points;
    std::vector<Knobs> todo;
    for (const auto& k : todo_in) {
      auto p = sim::PreparePoint(WithKnobs(k, steps), cache_);
      if (!p.ok()) {
        out.push_back(Evaluated{k, {}, kInfeasible, false, "cannot be simulated: " + p.status().message()});
        continue;
      }
      points.push_back(std::move(*p));
      todo.push_back(k);
    }
    if (todo.empty()) return out;
    std::vector<sim::IsolatedJob> jobs;
    for (const auto& p : points) {
      for (auto& j : sim::MakeJobs(p, "")) jobs.push_back(std::move(j));
    }
    if (options_.on_progress) {
      options_.on_progress(steps > 0 ? fmt::format("{} configurations for {} steps", todo.size(), steps)
                                     : fmt::format("{} configurations ({} simulated so far)", todo.size(), configurations_));
    }
    auto results = sim::RunIsolated(jobs, std::max(1, options_.jobs));
    simulations_ += static_cast<int>(jobs.size());
    for (size_t i = 0; i < todo.size(); ++i) {
      auto runs = sim::DecodePointRuns(results[2 * i], results[2 * i + 1]);
      if (!runs.ok()) return runs.status().WithPrefix(DescribeKnobs(todo[i]) + ": ");
      Evaluated e;
      e.knobs = todo[i];
      e.simulated = true;
      e.metrics = MetricsOf(points[i], *runs);
      e.objective = Objective(e.metrics, points[i].input.cpu_cores);
      e.infeasible_because = StaticLimit(todo[i]);
      e.feasible = e.infeasible_because.empty();
      const double cache_bytes = todo[i].cache == "page_cache" ? ram_cache_bytes_ : 0;
      if (e.feasible && memory_limit_bytes_ > 0 && e.metrics.peak_host_memory_bytes + cache_bytes > memory_limit_bytes_) {
        e.feasible = false;
        e.infeasible_because =
            cache_bytes > 0
                ? fmt::format("memory: predicted peak {:.2f} GiB + RAM cache {:.2f} GiB > limit {:.2f} GiB",
                              e.metrics.peak_host_memory_bytes / (1 << 30), cache_bytes / (1 << 30),
                              memory_limit_bytes_ / (1 << 30))
                : fmt::format("memory: predicted peak {:.2f} GiB > limit {:.2f} GiB",
                              e.metrics.peak_host_memory_bytes / (1 << 30), memory_limit_bytes_ / (1 << 30));
      }
      out.push_back(std::move(e));
    }
    return out;
  }

  double Objective(const PointMetrics& m, int cores) const {
    if (options_.objective == TuneObjective::kThroughput) return m.train_samples_per_s;
    // Samples per unit of price: GPUs and the nodes' cores, per hour.
    const double price_per_hour =
        options_.gpu_hour_price * ranks_ + options_.core_hour_price * cores * (ranks_ / gpus_per_node_);
    return m.train_samples_per_s * 3600 / price_per_hour;
  }

  const scenarios::Scenario& scenario_;
  const sim::PreparedPoint& base_;
  const std::string captured_format_;
  const TuneOptions& options_;
  sim::CostCache* cache_;
  int gpus_per_node_, ranks_;
  double memory_limit_bytes_;
  const std::vector<ToolCheck>& tools_;
  double ram_cache_bytes_ = 0;
  std::map<Knobs, Evaluated> memo_;
  int revert_configurations_ = 0;  // simulated beyond the budget: single-setting reverts of the answer
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

int Changes(const Knobs& a, const Knobs& b);

// The full-length runs halving may still make: the first ones in order within the budget left (the
// rest are counted in `over_budget`, not simulated: the descent's budget is not exceeded).
void FitBudget(const Search& search, std::vector<Knobs>* candidates, Halving* h) {
  const size_t left = static_cast<size_t>(std::max(0, search.budget_left()));
  if (candidates->size() <= left) return;
  h->over_budget += static_cast<int>(candidates->size() - left);
  candidates->resize(left);
}

// Successive halving over the joint neighbourhood of the descent's answer `best`: per axis the values
// of its last step that came within o.contender_share of `best` (feasible ones), every combination of
// them, those not simulated at full length yet ranked on short runs (full / eta^r steps, r = R..1, none
// shorter than o.halving_min_steps nor, in a run of several epochs, than one epoch and a step; the
// best ceil(n / eta) kept each time; ties keep the earlier: fewest changes from `best`, then knob
// order), the survivors simulated at full length (within the budget) so that the answer is chosen from
// full-length runs only.
Status Halve(Search& search, const std::vector<const Axis*>& axes, const std::map<std::string, std::vector<Knobs>>& last,
             const Knobs& best, int64_t full_steps, int64_t epoch_steps, const AxisContext& context,
             const TuneOptions& o, Halving* h) {
  const Evaluated* here = search.Find(best);
  std::set<Knobs> neighbourhood = {best};
  std::vector<const Axis*> inert;  // no value at `best`
  for (const Axis* axis : axes) {
    if (axis->values(best, context).empty()) {
      inert.push_back(axis);
      continue;
    }
    auto it = last.find(axis->name);
    if (it == last.end()) continue;
    std::vector<Knobs> contenders;
    for (const auto& v : it->second) {
      const Evaluated* e = search.Find(v);
      if (e == nullptr || !e->feasible || axis->show(v) == axis->show(best)) continue;
      if (here != nullptr && here->feasible) {
        if (e->objective < here->objective * (1 - o.contender_share)) continue;
        // A value predicting exactly what the chosen one predicts adds nothing the axis did not show.
        if (std::abs(e->objective - here->objective) <= 1e-9 * std::abs(here->objective)) continue;
      }
      contenders.push_back(v);
    }
    std::set<Knobs> grown = neighbourhood;
    for (const auto& k : neighbourhood) {
      for (const auto& c : contenders) {
        Knobs x = k;
        axis->copy(c, &x);
        grown.insert(x);
      }
    }
    neighbourhood = std::move(grown);
  }
  // An axis with no value at `best` (persistent_workers at num_workers = 0) is inert there only: once the
  // others have grown the neighbourhood, it joins with every value it takes at the members (2 workers,
  // persistent). The advice validation's cpu_heavy pipeline lost that way: the descent reached 0 workers,
  // and the 2-3 persistent workers that measured best were never combined (docs/validation-log.md,
  // 2026-12-06 night).
  for (const Axis* axis : inert) {
    std::set<Knobs> grown = neighbourhood;
    for (const auto& k : neighbourhood) {
      for (const auto& v : axis->values(k, context)) grown.insert(v);
    }
    neighbourhood = std::move(grown);
  }
  h->neighbourhood = static_cast<int>(neighbourhood.size());
  std::vector<Knobs> candidates;
  for (const auto& k : neighbourhood) {
    if (search.Find(k) != nullptr || !search.StaticLimit(k).empty()) continue;
    candidates.push_back(k);
  }
  // Over the cap, those closest to the descent's answer (fewest changed settings) are kept.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const Knobs& a, const Knobs& b) { return Changes(a, best) < Changes(b, best); });
  if (static_cast<int>(candidates.size()) > o.halving_max_candidates) {
    h->dropped = static_cast<int>(candidates.size()) - o.halving_max_candidates;
    candidates.resize(static_cast<size_t>(o.halving_max_candidates));
  }
  h->candidates = static_cast<int>(candidates.size());
  if (candidates.empty()) {
    h->skipped_because = "every combination of the contenders was already simulated at full length (or breaks a limit)";
    return Status::Ok();
  }
  const int eta = std::max(2, o.halving_eta);
  // A run of several epochs pays per epoch what a shorter rung would not see (fresh workers at every
  // epoch without persistent_workers, epoch starts): every rung then crosses an epoch boundary. Ranked
  // on 20 of 60 steps (41 per epoch), 2 persistent workers lost to 0 workers at the first rung on the
  // advice validation's cpu_heavy pipeline, where they won by 6% at full length.
  const int64_t min_rung =
      full_steps > epoch_steps ? std::max<int64_t>(o.halving_min_steps, epoch_steps + 1) : o.halving_min_steps;
  int rungs = 0;
  for (int64_t d = eta; rungs < 2 && full_steps / d >= min_rung; d *= eta) ++rungs;
  if (static_cast<int>(candidates.size()) <= eta || rungs == 0) {
    h->skipped_because = rungs == 0 ? fmt::format("runs of {} steps are too short to halve (shortest rung {} steps{})",
                                                  full_steps, min_rung,
                                                  min_rung > o.halving_min_steps ? ": one epoch and a step" : "")
                                    : fmt::format("{} candidate(s), no more than eta = {}: simulated at full length",
                                                  candidates.size(), eta);
    FitBudget(search, &candidates, h);
    SIMREPLAY_RETURN_IF_ERROR(search.Evaluate(candidates));
    h->rungs.push_back({full_steps, static_cast<int>(candidates.size()), static_cast<int>(candidates.size())});
    return Status::Ok();
  }
  int64_t divisor = 1;
  for (int r = 0; r < rungs; ++r) divisor *= eta;
  for (int r = rungs; r >= 1; --r, divisor /= eta) {
    const int64_t steps = full_steps / divisor;
    const int before = search.simulations();
    auto runs = search.EvaluateShort(candidates, steps);
    if (!runs.ok()) return runs.status();
    h->short_simulations += search.simulations() - before;
    std::vector<size_t> rank(runs->size());
    for (size_t i = 0; i < rank.size(); ++i) rank[i] = i;
    std::stable_sort(rank.begin(), rank.end(),
                     [&](size_t a, size_t b) { return Search::Score((*runs)[a]) > Search::Score((*runs)[b]); });
    const size_t keep = std::max<size_t>(1, (runs->size() + static_cast<size_t>(eta) - 1) / static_cast<size_t>(eta));
    std::vector<Knobs> kept;
    for (size_t i = 0; i < keep && i < rank.size(); ++i) {
      if (Search::Score((*runs)[rank[i]]) > kInfeasible) kept.push_back((*runs)[rank[i]].knobs);
    }
    h->rungs.push_back({steps, static_cast<int>(runs->size()), static_cast<int>(kept.size())});
    candidates = std::move(kept);
    if (candidates.empty()) return Status::Ok();
  }
  FitBudget(search, &candidates, h);
  SIMREPLAY_RETURN_IF_ERROR(search.Evaluate(candidates));
  h->rungs.push_back({full_steps, static_cast<int>(candidates.size()), static_cast<int>(candidates.size())});
  return Status::Ok();
}

// Every setting `answer` changes from `current` earns its place: the one whose reverting alone costs
// least is reverted (re-simulated) while that costs under kMinSettingGain of the objective, so that a
// user never changes a setting for a difference the model does not resolve on real runs.
Status RevertUnearnedSettings(Search& search, const std::vector<const Axis*>& axes, const Knobs& current,
                              Knobs* answer, std::vector<RevertedSetting>* reverted) {
  while (true) {
    std::vector<std::pair<const Axis*, Knobs>> reverts;
    for (const Axis* axis : axes) {
      if (axis->show(*answer) == axis->show(current)) continue;
      Knobs k = *answer;
      axis->copy(current, &k);
      if (!(k == *answer)) reverts.emplace_back(axis, k);
    }
    std::vector<Knobs> wanted;
    for (const auto& r : reverts) wanted.push_back(r.second);
    SIMREPLAY_RETURN_IF_ERROR(search.Evaluate(wanted, /*reference=*/false, /*beyond_budget=*/true));
    const Evaluated* here = search.Find(*answer);
    const std::pair<const Axis*, Knobs>* cheapest = nullptr;
    double cheapest_objective = kInfeasible;
    for (const auto& r : reverts) {
      const Evaluated* e = search.Find(r.second);
      if (e == nullptr || !e->feasible || e->objective <= cheapest_objective) continue;
      cheapest = &r;
      cheapest_objective = e->objective;
    }
    if (here == nullptr || cheapest == nullptr || cheapest_objective <= 0 ||
        here->objective >= cheapest_objective * (1 + kMinSettingGain)) {
      return Status::Ok();
    }
    reverted->push_back({cheapest->first->name, cheapest->first->show(*answer), cheapest->first->show(current),
                         here->objective / cheapest_objective - 1});
    *answer = cheapest->second;
  }
}

// How many settings `a` changes from `b`.
int Changes(const Knobs& a, const Knobs& b) {
  return (a.num_workers != b.num_workers) + (a.prefetch_factor != b.prefetch_factor) + (a.pin_memory != b.pin_memory) +
         (a.persistent_workers != b.persistent_workers) + (a.format != b.format) + (a.cpu_cores != b.cpu_cores) +
         (a.sequential != b.sequential) + (a.cache != b.cache) + (a.bucket_bytes != b.bucket_bytes) +
         (a.overlap != b.overlap) + (a.gpu_decode != b.gpu_decode);
}

}  // namespace

bool Knobs::operator<(const Knobs& o) const {
  return std::tie(num_workers, prefetch_factor, pin_memory, persistent_workers, format, cpu_cores, sequential, cache,
                  bucket_bytes, overlap, gpu_decode) < std::tie(o.num_workers, o.prefetch_factor, o.pin_memory,
                                                                o.persistent_workers, o.format, o.cpu_cores, o.sequential,
                                                                o.cache, o.bucket_bytes, o.overlap, o.gpu_decode);
}
bool Knobs::operator==(const Knobs& o) const { return !(*this < o) && !(o < *this); }

std::string DescribeKnobs(const Knobs& k) {
  std::string out = fmt::format("num_workers={} prefetch_factor={} pin_memory={} persistent_workers={} format={} cpu_cores={}",
                                k.num_workers, k.prefetch_factor, k.pin_memory, k.persistent_workers, k.format, k.cpu_cores);
  // The knobs most scenarios never search are named only when set.
  if (k.sequential) out += " access=sequential";
  if (!k.cache.empty()) out += " cache=" + k.cache;
  if (k.bucket_bytes > 0) out += " bucket_bytes=" + ShowBytes(k.bucket_bytes);
  if (k.overlap > 0) out += fmt::format(" overlap={:.3g}", k.overlap);
  if (k.gpu_decode) out += " decode=gpu";
  return out;
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
  current.sequential = scenario.data_sequential;
  current.bucket_bytes = scenario.collective.bucket_bytes;
  current.overlap = scenario.collective.overlap;
  current.gpu_decode = scenario.decode_on_gpu;

  // Tools: the dated table against the trace's manifest; an incompatible one is never searched.
  auto table = BuiltinToolTable();
  if (!table.ok()) return table.status();
  result.tools = CheckTools(*table, base->costs->manifest, current.format);
  result.tools_checked = table->checked;

  AxisContext context;
  context.options = &options;
  context.cores = current.cpu_cores;
  context.gradient_bytes =
      scenario.collective.gradient_bytes >= 0 ? scenario.collective.gradient_bytes : model.collective.gradient_bytes;
  context.communicates = ranks > 1 && (context.gradient_bytes > 0 || model.collective.time_per_step_s > 0);
  context.current_overlap = current.overlap;
  context.current_bucket_bytes = current.bucket_bytes;
  const auto& tiers = scenario.storage.tiers;
  context.cache_applies = !tiers.empty() && IsRemoteTier(tiers.back().kind) &&
                          std::none_of(tiers.begin(), tiers.end(), [](const models::StorageTier& t) {
                            return t.kind == models::TierKind::kPageCache || t.kind == models::TierKind::kNvmeCache;
                          });
  for (const auto& t : result.tools) context.decode_tool_listed |= t.simulated_as == "decode.device=gpu";
  const auto& manifest = base->costs->manifest;
  context.has_media = manifest.contains("data") && manifest["data"].is_object() && manifest["data"].contains("mix") &&
                      manifest["data"]["mix"].is_object() && !manifest["data"]["mix"].empty();

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
  result.constraints.push_back(
      "access: sequential only for containers with a streaming order (tar, tfrecord, parquet), and for a shuffled job "
      "only with --allow-streaming (a streaming pass shuffles by shard and buffer, not globally)");
  if (context.cache_applies) {
    result.constraints.push_back(
        options.cache_bytes > 0
            ? fmt::format("cache: an NVMe cache of {:.2f} GiB per node (--cache-bytes) at the model's local-storage "
                          "speed ({:g} s per request, {:.3g} GB/s per stream; storage.mode {})",
                          options.cache_bytes / (1 << 30), model.storage.latency_s,
                          model.storage.bandwidth_bytes_per_s / 1e9, model.storage.mode)
            : "cache: no --cache-bytes: an NVMe cache tier is not searched");
  } else if (!tiers.empty() || scenario.storage.kind == scenarios::StorageKind::kShared) {
    result.constraints.push_back(
        scenario.storage.kind == scenarios::StorageKind::kShared
            ? "cache: not searched for storage.kind shared (its client page cache is the node's cache; storage.tiers "
              "cannot be combined with it)"
            : "cache: not searched (the storage tiers already have a cache, or the data is on a local tier)");
  }
  if (context.communicates) {
    result.constraints.push_back(fmt::format(
        "collective: bucket sizes 1-100 MiB below the {:.3g} MB of gradients (or one bucket); overlap at most the "
        "backward share of the step, {:.3g} ({})",
        context.gradient_bytes / 1e6, options.backward_share,
        options.backward_share == 2.0 / 3.0 ? "assumed: backward costs about twice the forward" : "--backward-share"));
  }
  for (const auto& t : result.tools) {
    if (t.compatible && t.simulated_as == "decode.device=gpu" && context.has_media) {
      result.constraints.push_back("tool " + t.name + ": compatible; searched as " + t.simulated_as +
                                   " with the assumed catalogue's GPU decoding costs (docs/modelling.md), never "
                                   "measured here: a recommendation of it is a hypothesis to test first");
    }
    if (!t.compatible) {
      std::string why;
      for (const auto& r : t.incompatible) why += (why.empty() ? "" : "; ") + r;
      result.constraints.push_back("tool " + t.name + ": incompatible with the trace's environment: " + why);
    }
  }

  // Axis order: by the profile's gain for the axis's knob, largest first; the rest keep their order.
  // Axes that cannot apply to this scenario at all (no cluster, no remote tier, cost axes) are left out.
  std::vector<const Axis*> axes;
  std::vector<double> axis_gain;  // -inf: the knob has no relief in the profile
  for (const auto& a : Axes()) {
    const bool knob_dependent = a.name == "prefetch_factor" || a.name == "persistent_workers";
    if (!knob_dependent && a.values(current, context).empty()) continue;
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

  Search search(scenario, *base, current.format, options, cache, capacity > 0 ? memory_limit : 0, result.tools);
  SIMREPLAY_RETURN_IF_ERROR(search.Evaluate({current}, /*reference=*/true));
  if (search.Find(current) == nullptr || search.Find(current)->metrics.train_samples_per_s <= 0) {
    return Status::InvalidArgument("the scenario's own configuration cannot be simulated: " +
                                   (search.Find(current) ? search.Find(current)->infeasible_because : std::string("?")));
  }
  if (capacity > 0) search.SetRamCacheBytes(memory_limit - search.Find(current)->metrics.peak_host_memory_bytes);
  if (context.cache_applies) {
    result.constraints.push_back(
        search.ram_cache_bytes() > 0
            ? fmt::format("cache: a RAM cache takes the {:.2f} GiB the current configuration leaves under the memory "
                          "limit, at the model's page-cache rate ({:.3g} GB/s); a configuration's peak + the cache must "
                          "stay within the limit",
                          search.ram_cache_bytes() / (1 << 30), model.storage.page_cache_bytes_per_s / 1e9)
            : "cache: no host memory left (or known) for a RAM cache");
  }
  Knobs best = current;
  std::map<std::string, std::vector<Rejection>> rejections;
  std::map<std::string, std::vector<Knobs>> last_values;  // per axis, the values of its last step
  while (true) {
    ++result.passes;
    bool moved = false;
    for (size_t i : order) {
      const Axis& axis = *axes[i];
      const std::vector<Knobs> values = axis.values(best, context);
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
      last_values[axis.name] = values;
      if (search.budget_exhausted()) break;
    }
    if (!moved || search.budget_exhausted()) break;
  }

  SIMREPLAY_RETURN_IF_ERROR(Halve(search, axes, last_values, best, FullSteps(*base), EpochSteps(base->input.scenario),
                                 context, options, &result.halving));

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
  SIMREPLAY_RETURN_IF_ERROR(RevertUnearnedSettings(search, axes, current, &best, &result.reverted));
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
  result.revert_configurations = search.revert_configurations();
  result.simulations = search.simulations() + result.profile.simulations;
  result.budget_exhausted = search.budget_exhausted();
  return result;
}

}  // namespace simreplay::advise
