#include "plan/planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "models/accelerator_catalogue.h"
#include "plan/candidate_sim.h"
#include "plan/recommendation.h"
#include "scenarios/scenario.h"
#include "sim/isolated_run.h"
#include "sim/point_runner.h"

namespace simreplay::plan {

namespace {

using nlohmann::json;

// The step time of one micro-batch on a GPU type and where it comes from.
struct GpuStep {
  double step_s = 0;
  bool measured = false;  // on that very GPU (a CUDA trace/model or a CUDA preflight)
  std::string source;
  std::string scenario_path;  // the scenario this GPU's candidates simulate
  json scenario_json;
  std::vector<std::string> warnings;  // from the scenario's preparation (extrapolation)
};

Result<json> LoadPlanScenario(const std::string& path) {
  auto j = scenarios::LoadScenarioJson(path);
  if (!j.ok()) return j.status();
  if (j->contains("sweep")) {
    return Status::InvalidArgument(path +
                                   ":1: the scenario of a plan must have no \"sweep\" (the plan's candidates "
                                   "are its sweep), found one");
  }
  return j;
}

// Resolves one scenario (as given) to learn its step time, dataset size and warnings.
Result<sim::PreparedPoint> PrepareBase(const json& scenario_json, const std::string& path, sim::CostCache* cache) {
  auto scenario = scenarios::ParseScenario(scenario_json, path, scenarios::DirectoryOf(path));
  if (!scenario.ok()) return scenario.status();
  return sim::PreparePoint(*scenario, cache);
}

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

void AddUnique(std::vector<std::string>* list, const std::string& s) {
  if (std::find(list->begin(), list->end(), s) == list->end()) list->push_back(s);
}

int64_t CeilDiv(double a, double b) { return static_cast<int64_t>(std::ceil(a / b - 1e-9)); }

}  // namespace

Result<PlanOutcome> RunPlan(const PlanSpec& spec_in, const PlanOptions& options) {
  PlanOutcome out;
  out.spec = spec_in;
  PlanSpec& spec = out.spec;
  if (!options.preflight_path.empty()) spec.preflight_path = options.preflight_path;

  // Catalogue and GPU names.
  models::AcceleratorCatalogue catalogue = models::AcceleratorCatalogue::Builtin();
  if (!spec.catalogue_path.empty()) {
    auto loaded = models::AcceleratorCatalogue::Load(spec.catalogue_path);
    if (!loaded.ok()) return loaded.status();
    catalogue = std::move(*loaded);
  }
  auto require_gpu = [&](const std::string& name, const std::string& key) -> Status {
    if (catalogue.Find(name) != nullptr) return Status::Ok();
    return Status::InvalidArgument(
        fmt::format("{}: {}: GPU \"{}\" is not in the accelerator catalogue (expected one "
                    "of: {})",
                    spec.path, key, name, catalogue.Names()));
  };
  SIMREPLAY_RETURN_IF_ERROR(require_gpu(spec.measured_on, "measured_on"));
  for (const auto& g : spec.candidates.gpus) SIMREPLAY_RETURN_IF_ERROR(require_gpu(g, "candidates.gpu"));
  for (const auto& [g, f] : spec.scenario_by_gpu) SIMREPLAY_RETURN_IF_ERROR(require_gpu(g, "scenario_by_gpu"));

  std::optional<PreflightInputs> preflight;
  if (!spec.preflight_path.empty()) {
    auto p = LoadPreflight(spec.preflight_path);
    if (!p.ok()) return p.status();
    preflight = std::move(*p);
  }
  const bool preflight_cuda = preflight && preflight->device == "cuda";

  // The base scenario: step time on measured_on, dataset, batch geometry.
  sim::CostCache cache;
  auto base_json = LoadPlanScenario(spec.scenario_path);
  if (!base_json.ok()) return base_json.status();
  auto base = PrepareBase(*base_json, spec.scenario_path, &cache);
  if (!base.ok()) return base.status();
  out.accelerator = base->accelerator;
  out.accelerator_note = base->accelerator_note;
  const auto& loader = base->input.scenario.loader;
  const int accum = base->input.scenario.train.grad_accum;
  const int64_t dataset = base->input.scenario.train.dataset_samples;

  std::map<std::string, GpuStep> steps;
  {
    GpuStep m;
    m.step_s = base->input.step_time_s;
    m.measured = base->accelerator == "cuda";
    m.source = fmt::format("{} ({}, {})", base->accelerator_note, base->step_time_source, spec.measured_on);
    if (preflight && preflight->step_time_s) {
      m.step_s = *preflight->step_time_s;
      m.measured = preflight_cuda;
      m.source = fmt::format("preflight {} ({} step, {})", spec.preflight_path, preflight->device,
                             preflight_cuda ? "measured on a GPU" : "measured on CPU: not a GPU step time");
    }
    m.scenario_path = spec.scenario_path;
    m.scenario_json = *base_json;
    m.warnings = base->warnings;
    steps[spec.measured_on] = m;
  }
  for (const auto& [gpu, path] : spec.scenario_by_gpu) {
    auto j = LoadPlanScenario(path);
    if (!j.ok()) return j.status();
    auto p = PrepareBase(*j, path, &cache);
    if (!p.ok()) return p.status();
    GpuStep g;
    g.step_s = p->input.step_time_s;
    g.measured = p->accelerator == "cuda";
    g.source = fmt::format("{} ({})", p->accelerator_note, path);
    g.scenario_path = path;
    g.scenario_json = *j;
    g.warnings = p->warnings;
    steps[gpu] = g;
  }
  const models::Accelerator& from = *catalogue.Find(spec.measured_on);
  for (const auto& gpu : spec.candidates.gpus) {
    if (steps.count(gpu)) continue;
    const models::Accelerator& to = *catalogue.Find(gpu);
    GpuStep g = steps[spec.measured_on];
    g.step_s = models::ScaleStepTimeS(g.step_s, from, to, spec.model.compute_bound_fraction);
    g.measured = false;
    g.source = fmt::format("scaled from {} by the roofline rule (compute-bound share {:g}): x{:.3f}", spec.measured_on,
                           spec.model.compute_bound_fraction, g.step_s / steps[spec.measured_on].step_s);
    steps[gpu] = g;
  }

  // Checkpoint, restart and memory inputs (preflight wins).
  const BytesPerParameter bpp = StateBytes(spec.model.optimizer, spec.model.precision);
  double checkpoint_bytes =
      spec.checkpoint.bytes > 0 ? spec.checkpoint.bytes : spec.model.parameters * bpp.checkpoint();
  double write_bps = spec.checkpoint.write_bytes_per_s, read_bps = spec.checkpoint.read_bytes_per_s;
  double restart_s = spec.reliability.restart_s;
  bool restart_includes_read = false;
  double peak_memory = 0;
  if (preflight) {
    if (preflight->checkpoint_bytes) checkpoint_bytes = *preflight->checkpoint_bytes;
    if (preflight->checkpoint_write_bytes_per_s) write_bps = *preflight->checkpoint_write_bytes_per_s;
    if (preflight->checkpoint_read_bytes_per_s) read_bps = *preflight->checkpoint_read_bytes_per_s;
    if (preflight->restart_s) {
      restart_s = *preflight->restart_s;
      restart_includes_read = true;
    }
    if (preflight->peak_memory_bytes && preflight_cuda) peak_memory = *preflight->peak_memory_bytes;
  }

  // The candidates, GPU by GPU, sharding by sharding, nodes ascending (scaling curves stay together).
  std::vector<int> nodes = spec.candidates.nodes;
  std::sort(nodes.begin(), nodes.end());
  const int gpn = spec.candidates.gpus_per_node;
  for (const auto& gpu : spec.candidates.gpus) {
    for (const auto& sharding : spec.candidates.sharding) {
      for (int n : nodes) {
        CandidateRow row;
        row.gpu = gpu;
        row.nodes = n;
        row.gpus_per_node = gpn;
        row.gpus = n * gpn;
        row.sharding = sharding;
        row.memory = FitMemory(spec.model, sharding == "fsdp", row.gpus, *catalogue.Find(gpu), peak_memory);
        row.step_time_s = steps[gpu].step_s;
        row.step_time_source = steps[gpu].source;
        row.samples_per_step = static_cast<double>(loader.batch_size) * accum * row.gpus;
        switch (spec.target.kind) {
          case TargetSpec::Kind::kSamples:
            row.total_steps = CeilDiv(spec.target.value, row.samples_per_step);
            break;
          case TargetSpec::Kind::kSteps:
            row.total_steps = static_cast<int64_t>(std::ceil(spec.target.value));
            break;
          case TargetSpec::Kind::kEpochs:
            row.total_steps = CeilDiv(spec.target.value * static_cast<double>(dataset), row.samples_per_step);
            break;
        }
        const double gradient_bytes = spec.model.parameters * bpp.gradients;
        row.collective = EstimateCollective(gradient_bytes, sharding == "fsdp", n, gpn, *catalogue.Find(gpu),
                                            spec.network, row.step_time_s * accum);
        if (!steps[gpu].measured) AddUnique(&row.assumed, "step_time");
        if (!row.memory.measured) AddUnique(&row.assumed, "memory");
        if (!(preflight && preflight->checkpoint_write_bytes_per_s)) AddUnique(&row.assumed, "checkpoint");
        if (!(preflight && preflight->restart_s)) AddUnique(&row.assumed, "restart");
        if (row.gpus > 1) AddUnique(&row.assumed, n > 1 ? "network" : "intra_node_link");
        for (const auto& w : steps[gpu].warnings) AddUnique(&row.warnings, w);
        if (!row.memory.fits) {
          row.bottleneck = "memory";
          row.bottleneck_evidence = row.memory.breakdown;
        }
        out.rows.push_back(std::move(row));
      }
    }
  }

  // Simulate the candidates that fit, in rounds: each round runs every pending candidate in parallel
  // (forked children, like what-if points); a candidate not yet steady runs again 4 x longer.
  out.multinode_mode =
      "one node simulated per candidate (every node alike, its share of the dataset); collectives between GPUs "
      "and nodes from alpha-beta closed forms added at each optimizer step (not simulated as flows)";
  // Without --jobs: the outputs must not depend on it.
  out.parallel_mode =
      "candidates simulated in parallel in forked processes (sim/isolated_run.h RunIsolated, --jobs at a time); "
      "the Slurm shard/merge of what-if is not used";
  std::vector<size_t> pending;
  std::vector<int64_t> length(out.rows.size(), 0);
  std::vector<CandidateSimSetup> setups(out.rows.size());
  for (size_t i = 0; i < out.rows.size(); ++i) {
    auto& row = out.rows[i];
    if (!row.memory.fits) continue;
    const GpuStep& g = steps[row.gpu];
    setups[i] = {g.scenario_json, g.scenario_path, row.gpus_per_node,       row.nodes,
                 dataset,         row.step_time_s, row.collective.exposed_s};
    length[i] = std::min(row.total_steps, spec.simulation.initial_steps);
    pending.push_back(i);
  }
  size_t done_runs = 0, total_runs = pending.size();
  std::vector<CandidateRun> runs(out.rows.size());
  std::vector<sim::PreparedPoint> points(out.rows.size());
  while (!pending.empty()) {
    std::vector<sim::IsolatedJob> jobs;
    for (size_t i : pending) {
      auto p = PrepareCandidate(setups[i], length[i], &cache);
      if (!p.ok()) return p.status();
      points[i] = std::move(*p);
    }
    for (size_t i : pending) jobs.push_back(MakeCandidateJob(points[i]));
    const size_t round_start = done_runs;
    auto results = sim::RunIsolated(jobs, options.jobs, [&](size_t done, size_t) {
      if (options.progress) options.progress("simulating", round_start + done, total_runs);
    });
    done_runs += pending.size();
    std::vector<size_t> again;
    for (size_t k = 0; k < pending.size(); ++k) {
      const size_t i = pending[k];
      auto& row = out.rows[i];
      auto run = ParseCandidateRun(results[k]);
      if (!run.ok()) {
        return Status::Internal(
            fmt::format("candidate {} x {} nodes ({}): {}", row.gpu, row.nodes, row.sharding, run.status().message()));
      }
      runs[i] = std::move(*run);
      const EpochGeometry epochs{MicroBatchesPerEpoch(points[i]), accum};
      row.steady = DetectSteadyState(runs[i].interval_s, epochs, spec.simulation.tolerance);
      row.simulated_steps = static_cast<int64_t>(runs[i].interval_s.size());
      const bool complete = row.simulated_steps >= row.total_steps;
      if (!row.steady.steady && !complete && length[i] < spec.simulation.max_steps) {
        length[i] = std::min({length[i] * 4, spec.simulation.max_steps, row.total_steps});
        again.push_back(i);
        ++total_runs;
      }
    }
    pending = std::move(again);
  }

  for (size_t i = 0; i < out.rows.size(); ++i) {
    auto& row = out.rows[i];
    if (!row.memory.fits) continue;
    row.simulated = true;
    const EpochGeometry epochs{MicroBatchesPerEpoch(points[i]), accum};
    const auto& x = runs[i].interval_s;
    row.training_s = ExtrapolateS(row.steady, x, epochs, row.total_steps);
    const bool complete = row.simulated_steps >= row.total_steps;
    row.throughput_samples_per_s =
        complete ? row.samples_per_step * row.total_steps / row.training_s : row.samples_per_step / row.steady.step_s;
    const json& metrics = runs[i].metrics;
    row.bottleneck = metrics["bottleneck"].value("stage", "");
    row.bottleneck_evidence = metrics["bottleneck"].value("evidence", "");
    if (!complete && !row.steady.steady) {
      AddUnique(&row.warnings, "not steady: " + row.steady.detail + " (estimate from the last half)");
    }
    const double steps_per_epoch = epochs.StepsPerEpoch();
    if (!complete && !row.steady.periodic && !row.steady.boundary_measured && steps_per_epoch > 0 &&
        row.total_steps > steps_per_epoch) {
      AddUnique(&row.assumed, "epoch_boundary");
    }
  }

  // Scaling efficiency: per-GPU throughput against the smallest simulated candidate of the same GPU
  // and sharding.
  for (auto& row : out.rows) {
    if (!row.simulated) continue;
    const CandidateRow* ref = nullptr;
    for (const auto& r : out.rows) {
      if (r.simulated && r.gpu == row.gpu && r.sharding == row.sharding && (ref == nullptr || r.gpus < ref->gpus))
        ref = &r;
    }
    row.scaling_efficiency = (row.throughput_samples_per_s / row.gpus) / (ref->throughput_samples_per_s / ref->gpus);
  }

  // Goodput, budget, interval, cost.
  for (auto& row : out.rows) {
    if (!row.simulated) continue;
    // Interval multipliers on training time (docs/planning.md, "Uncertainty").
    double low = 1 + spec.uncertainty.error_low, high = 1 + spec.uncertainty.error_high;
    int extrapolations = 0;
    for (const auto& w : row.warnings) {
      if (StartsWith(w, "extrapolating")) ++extrapolations;
    }
    extrapolations = std::min(extrapolations, 5);
    high += 0.05 * extrapolations;
    low -= 0.02 * extrapolations;
    if (!row.steady.steady && row.simulated_steps < row.total_steps) {
      high += 0.05;
      low -= 0.05;
    }
    const bool step_assumed = std::find(row.assumed.begin(), row.assumed.end(), "step_time") != row.assumed.end();
    if (step_assumed) {
      high += 0.25;
      low -= 0.20;
    }
    if (row.nodes > 1) high += 0.05;  // collectives between nodes from a closed form, not simulated
    row.interval_low = std::max(0.1, low);
    row.interval_high = high;

    const int64_t evals = spec.eval.every_steps > 0 ? row.total_steps / spec.eval.every_steps : 0;
    const double eval_s = static_cast<double>(evals) * spec.eval.duration_s;
    auto make_budget = [&](double training_s, Goodput* goodput_out) {
      GoodputInput in;
      in.work_s = training_s + eval_s;
      in.training_s = training_s;
      in.gpus = row.gpus;
      in.nodes = row.nodes;
      in.gpu_mtbf_h = spec.reliability.gpu_mtbf_h;
      in.node_mtbf_h = spec.reliability.node_mtbf_h;
      in.checkpoint_bytes = checkpoint_bytes;
      in.write_bytes_per_s = write_bps;
      in.read_bytes_per_s = restart_includes_read ? std::numeric_limits<double>::infinity() : read_bps;
      in.auto_interval = spec.checkpoint.auto_interval;
      in.every_s = spec.checkpoint.every_s;
      in.restart_s = restart_s;
      Goodput g = ComputeGoodput(in);
      Budget b;
      const auto& ph = spec.phases;
      b.download_s = ph.download_bytes > 0 ? ph.download_bytes / ph.download_bytes_per_s : 0;
      b.preprocess_s = ph.preprocess_s;
      b.training_s = training_s;
      b.eval_s = eval_s;
      b.checkpoint_s = g.checkpoint_s;
      b.failures_s = g.feasible ? g.lost_work_s + g.restart_total_s : std::numeric_limits<double>::infinity();
      b.export_s = ph.export_s;
      b.copy_out_s = ph.copy_out_bytes > 0 ? ph.copy_out_bytes / ph.copy_out_bytes_per_s : 0;
      b.buffer_s = spec.reservation.buffer * b.total_s();
      if (goodput_out != nullptr) *goodput_out = g;
      return b;
    };
    row.budget = make_budget(row.training_s, &row.goodput);
    row.budget_low = make_budget(row.training_s * row.interval_low, nullptr);
    row.budget_high = make_budget(row.training_s * row.interval_high, nullptr);
    row.gpu_hours = row.budget.total_s() / 3600.0 * row.gpus;
    row.cost = row.gpu_hours * spec.prices_per_gpu_hour.at(row.gpu);
    for (double days : spec.reservation.days) {
      row.fits_slot.push_back(row.goodput.feasible && row.budget_high.total_s() <= days * 86400.0);
    }
  }
  for (auto& row : out.rows) {
    if (row.fits_slot.empty()) row.fits_slot.assign(spec.reservation.days.size(), false);
  }

  out.provisional = false;
  for (const auto& gpu : spec.candidates.gpus) out.provisional = out.provisional || !steps[gpu].measured;

  // Assumptions table.
  auto add = [&](const std::string& input, const std::string& value, const std::string& status,
                 const std::string& source) {
    out.assumptions.push_back({{"input", input}, {"value", value}, {"status", status}, {"source", source}});
  };
  out.assumptions = json::array();
  for (const auto& gpu : spec.candidates.gpus) {
    const auto& g = steps[gpu];
    add("step_time_s[" + gpu + "]", fmt::format("{:.6g}", g.step_s), g.measured ? "measured" : "assumed", g.source);
  }
  add("compute_bound_fraction", fmt::format("{:g}", spec.model.compute_bound_fraction),
      spec.model.compute_bound_given ? "input" : "assumed",
      "roofline rule for GPUs without their own measurement (docs/planning.md)");
  add("activation_bytes_per_gpu", fmt::format("{:.4g}", spec.model.activation_bytes_per_gpu),
      peak_memory > 0               ? "measured"
      : spec.model.activation_given ? "input"
                                    : "assumed",
      peak_memory > 0               ? "preflight peak memory " + fmt::format("{:.4g} B", peak_memory)
      : spec.model.activation_given ? "plan file"
                                    : "not given: 0 assumed");
  add("memory_headroom_fraction", fmt::format("{:g}", spec.model.memory_headroom_fraction), "assumed",
      "device memory kept free for the CUDA context and allocator fragmentation");
  add("checkpoint_bytes", fmt::format("{:.4g}", checkpoint_bytes),
      preflight && preflight->checkpoint_bytes ? "measured"
      : spec.checkpoint.bytes > 0              ? "input"
                                               : "assumed",
      preflight && preflight->checkpoint_bytes
          ? "preflight"
          : fmt::format("{:g} B/parameter (weights, optimizer state, master copy; no gradients)", bpp.checkpoint()));
  add("checkpoint_write_bytes_per_s", fmt::format("{:.4g}", write_bps),
      preflight && preflight->checkpoint_write_bytes_per_s ? "measured" : "input",
      preflight && preflight->checkpoint_write_bytes_per_s ? "preflight" : "plan file");
  add("checkpoint_read_bytes_per_s", fmt::format("{:.4g}", read_bps),
      preflight && preflight->checkpoint_read_bytes_per_s ? "measured" : "input",
      preflight && preflight->checkpoint_read_bytes_per_s ? "preflight" : "plan file");
  add("restart_s", fmt::format("{:g}", restart_s), preflight && preflight->restart_s ? "measured" : "input",
      preflight && preflight->restart_s ? "preflight (restore + first step, includes the checkpoint read)"
                                        : "plan file (the checkpoint read is added)");
  add("gpu_mtbf_h", fmt::format("{:g}", spec.reliability.gpu_mtbf_h), "input",
      "plan file (MLPerf Storage v2.0 uses 50,000 h per GPU)");
  add("network.nic_bytes_per_s", fmt::format("{:.4g}", spec.network.nic_bytes_per_s),
      spec.network.given ? "input" : "assumed", spec.network.given ? "plan file" : "default: 100 GB/s per node");
  add("network.overlap", fmt::format("{:g}", spec.network.overlap), spec.network.given ? "input" : "assumed",
      "fraction of the step that hides communication");
  add("collectives", "alpha-beta", "assumed", out.multinode_mode);
  add("prediction_error_band",
      fmt::format("{:+.1f}% .. {:+.1f}%", 100 * spec.uncertainty.error_low, 100 * spec.uncertainty.error_high),
      "measured", spec.uncertainty.source);
  add("prices_per_gpu_hour", "", "input", "plan file");
  add("accelerator", out.accelerator, out.accelerator == "cuda" ? "measured" : "emulated", out.accelerator_note);

  out.recommendation = Recommend(spec, out.rows, out.provisional);
  return out;
}

}  // namespace simreplay::plan
