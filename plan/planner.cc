#include "plan/planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/random.h"
#include "common/sha256.h"
#include "models/accelerator_catalogue.h"
#include "plan/candidate_sim.h"
#include "plan/pilot_planning.h"
#include "plan/recommendation.h"
#include "plan/units.h"
#include "scenarios/memory_limit.h"
#include "scenarios/scenario.h"
#include "sim/isolated_run.h"
#include "sim/point_runner.h"
#include "sim/simulation.h"

namespace simreplay::plan {

namespace {

using nlohmann::json;

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

void AddUnique(std::vector<std::string>* list, const std::string& s) {
  if (std::find(list->begin(), list->end(), s) == list->end()) list->push_back(s);
}

int64_t CeilDiv(double a, double b) { return static_cast<int64_t>(std::ceil(a / b - 1e-9)); }

// The plan's network and the GPU's link as the candidate simulation's cluster keys.
CandidateNetwork CandidateNetworkOf(const NetworkSpec& network, const models::Accelerator& gpu) {
  CandidateNetwork n;
  n.nic_bytes_per_s = network.nic_bytes_per_s;
  n.nic_latency_s = network.latency_s;
  n.intra_node_bytes_per_s = gpu.intra_node_bytes_per_s / 2;  // datasheets state both directions
  n.intra_node_latency_s = network.intra_latency_s;
  n.overlap = network.overlap;
  return n;
}

// Per optimizer step and rank, from the simulation of `steps` steps: the time inside collectives
// (barrier waits included) and the part not hidden under backward. The intra/inter split stays the
// closed form's (the simulation does not separate them).
void SimulatedCommunication(const CandidateRun& run, int gpus, size_t steps, CollectiveEstimate* c) {
  if (steps == 0 || gpus <= 1) return;
  const double rank_steps = static_cast<double>(steps) * gpus;
  c->total_s = run.collective_s / rank_steps;
  c->exposed_s = run.exposed_comm_s / rank_steps;
}

bool FailureModelAssumed(const FailureModelSpec& f) {
  bool assumed = f.gpu_mtbf_h.status == "assumed" || f.node_mtbf_h.status == "assumed" ||
                 f.network_mtbf_h.status == "assumed";
  if (f.floor.enabled) {
    assumed = assumed || f.floor.job_mttf_h.status == "assumed" || f.floor.reference_gpus.status == "assumed" ||
              f.floor.reference_gpus_per_node.status == "assumed" || f.floor.exponent.status == "assumed";
  }
  return assumed;
}

// Where the checkpoint read time of one restore comes from: bytes and read bandwidth.
SourcedValue CheckpointRead(double bytes, double read_bytes_per_s, bool bytes_assumed, bool bandwidth_measured,
                            bool bytes_measured) {
  const std::string status = bytes_assumed                           ? "assumed"
                             : bandwidth_measured && bytes_measured ? "measured"
                                                                     : "input";
  return {bytes / read_bytes_per_s, status,
          fmt::format("checkpoint bytes {:.4g} / read bandwidth {:.4g} B/s", bytes, read_bytes_per_s)};
}

// Samples to reach the target at a candidate's global batch (docs/planning.md, "Global batch").
struct TargetSamples {
  double samples = 0;     // samples or epochs x dataset, scaled by the rule when given
  double multiplier = 1;  // the rule's factor (1 without it)
  std::string warning;    // no rule and a batch far above the reference
};

TargetSamples SamplesToTarget(const PlanSpec& spec, int64_t dataset, double reference_batch, double global_batch) {
  TargetSamples t;
  if (spec.target.kind == TargetSpec::Kind::kSteps) return t;  // steps are taken as stated
  const double stated = spec.target.kind == TargetSpec::Kind::kSamples
                            ? spec.target.value
                            : spec.target.value * static_cast<double>(dataset);
  const double critical = spec.global_batch.critical_batch_samples;
  if (critical > 0) {
    t.multiplier = (1 + global_batch / critical) / (1 + reference_batch / critical);
  } else if (global_batch > kGlobalBatchWarningFactor * reference_batch) {
    t.warning = fmt::format(
        "global batch {:g} samples is {:.3g}x the reference {:g} (more than {:g}x): the samples to target are taken "
        "as independent of the global batch, which larger batches usually break; give "
        "job.global_batch.critical_batch_samples",
        global_batch, global_batch / reference_batch, reference_batch, kGlobalBatchWarningFactor);
  }
  t.samples = stated * t.multiplier;
  return t;
}

// Where a scenario's step time stands for `gpu` (GpuStep::status): measured on that GPU, exactly the step
// the emulated accelerator runs, or an assumption (an emulated step standing for a real GPU).
void SetStepStatus(const std::string& scenario_accelerator, const models::Accelerator& gpu, GpuStep* step) {
  step->status = gpu.emulated() ? "input" : scenario_accelerator == "cuda" ? "measured" : "assumed";
  if (gpu.emulated()) step->source += ": the emulated accelerator runs exactly this step";
}

// The emulated accelerator plans the emulated job itself: no step time is carried between it and a real
// GPU, and a step measured on a GPU is not an emulated one.
Status CheckEmulatedCandidates(const PlanSpec& spec, const models::AcceleratorCatalogue& catalogue,
                               const std::string& scenario_accelerator) {
  std::vector<std::pair<std::string, std::string>> named = {{"measured_on", spec.measured_on}};  // key, GPU
  for (const auto& g : spec.candidates.gpus) named.emplace_back("candidates.gpu", g);
  for (const auto& [g, path] : spec.scenario_by_gpu) named.emplace_back("scenario_by_gpu", g);
  auto emulated = [&](const auto& key_gpu) { return catalogue.Find(key_gpu.second)->emulated(); };
  if (std::none_of(named.begin(), named.end(), emulated)) return Status::Ok();
  for (const auto& key_gpu : named) {
    if (!emulated(key_gpu)) {
      return Status::InvalidArgument(fmt::format(
          "{}: {}: \"{}\" is a real GPU beside the emulated accelerator: no step time is carried between them "
          "(plan the emulated job alone, or a GPU from its own scenario)",
          spec.path, key_gpu.first, key_gpu.second));
    }
  }
  if (scenario_accelerator == "cuda") {
    return Status::InvalidArgument(fmt::format(
        "{}: measured_on: the emulated accelerator needs an emulated scenario, but {} was measured on a GPU",
        spec.path, spec.scenario_path));
  }
  return Status::Ok();
}

// A value of the assumptions table; infinity (a component not counted) reads "none".
std::string Fmt(double v) { return std::isfinite(v) ? fmt::format("{:g}", v) : "none"; }

}  // namespace

Result<PlanSetup> PreparePlan(const PlanSpec& spec_in, const PreflightUse& preflight_use) {
  const std::string& preflight_override = preflight_use.path;
  PlanSetup setup;
  setup.cache = std::make_shared<sim::CostCache>();
  PlanOutcome& out = setup.out;
  out.spec = spec_in;
  PlanSpec& spec = out.spec;
  if (!preflight_override.empty()) spec.preflight_path = preflight_override;

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

  std::optional<PreflightInputs>& preflight = setup.preflight;
  if (!spec.preflight_path.empty()) {
    auto p = LoadPreflight(spec.preflight_path);
    if (!p.ok()) return p.status();
    preflight = std::move(*p);
  }

  // The base scenario: step time on measured_on, dataset, batch geometry.
  sim::CostCache& cache = *setup.cache;
  auto base_json = LoadPlanScenario(spec.scenario_path);
  if (!base_json.ok()) return base_json.status();
  auto base = PrepareBase(*base_json, spec.scenario_path, &cache);
  if (!base.ok()) return base.status();
  out.accelerator = base->accelerator;
  out.accelerator_note = base->accelerator_note;
  SIMREPLAY_RETURN_IF_ERROR(CheckEmulatedCandidates(spec, catalogue, base->accelerator));
  const auto& loader = base->input.scenario.loader;
  const int accum = base->input.scenario.train.grad_accum;
  const int64_t dataset = base->input.scenario.train.dataset_samples;

  setup.grad_accum = accum;
  setup.dataset_samples = dataset;
  // The global batch the target was set at: the plan file's, else the measured scenario's.
  const double measured_batch =
      static_cast<double>(loader.batch_size) * accum * static_cast<double>(base->input.scenario.cluster.Ranks());
  const double reference_batch =
      spec.global_batch.reference_samples > 0 ? spec.global_batch.reference_samples : measured_batch;
  setup.reference_global_batch = reference_batch;
  // The preflight against the plan (plan/preflight_checks.h): a mismatch refuses the plan unless
  // overridden; a CPU preflight's step time and memory are never used.
  if (preflight) {
    PlanShape shape{loader.batch_size, spec.sequence.length, spec.candidates.gpus_per_node,
                    catalogue.Find(spec.measured_on), &catalogue};
    auto captures =
        ScenarioCaptureManifests(base->input.scenario.model_path, base->input.scenario.trace_path);
    if (!captures.ok()) return captures.status();
    auto verdict = JudgePreflight(*preflight, shape, preflight_use, *captures);
    if (!verdict.ok()) return verdict.status();
    setup.preflight_verdict = std::move(*verdict);
    for (const auto& a : setup.preflight_verdict.assumptions) setup.pilot_assumptions.push_back(a);
  }
  const bool preflight_gpu = preflight && setup.preflight_verdict.gpu_figures_used;
  std::map<std::string, GpuStep>& steps = setup.steps;
  {
    GpuStep m;
    m.step_s = base->input.step_time_s;
    m.source = fmt::format("{} ({}, {})", base->accelerator_note, base->step_time_source, spec.measured_on);
    SetStepStatus(base->accelerator, *catalogue.Find(spec.measured_on), &m);
    if (preflight_gpu && preflight->step_time_s) {
      UsePreflightStep(*preflight, setup.preflight_verdict, spec, &m, &setup.pilot_assumptions);
    }
    m.scenario_path = spec.scenario_path;
    m.scenario_json = *base_json;
    m.warnings = base->warnings;
    m.extrapolated = base->extrapolated;
    steps[spec.measured_on] = m;
  }
  for (const auto& [gpu, path] : spec.scenario_by_gpu) {
    auto j = LoadPlanScenario(path);
    if (!j.ok()) return j.status();
    auto p = PrepareBase(*j, path, &cache);
    if (!p.ok()) return p.status();
    GpuStep g;
    g.step_s = p->input.step_time_s;
    g.source = fmt::format("{} ({})", p->accelerator_note, path);
    SetStepStatus(p->accelerator, *catalogue.Find(gpu), &g);
    g.scenario_path = path;
    g.scenario_json = *j;
    g.warnings = p->warnings;
    g.extrapolated = p->extrapolated;
    steps[gpu] = g;
  }
  // The plan's shape (plan/pilot_planning.h): the step times above moved to the plan's sequence length
  // before the roofline rule carries them to other GPUs; activation checkpointing per candidate below.
  PilotShape pilot = PreparePilotShape(spec, preflight ? &*preflight : nullptr, preflight_gpu, &steps,
                                       &setup.pilot_assumptions);
  pilot.gpu_figures_overridden = preflight_gpu && !setup.preflight_verdict.gpu_figures_measured;
  const models::Accelerator& from = *catalogue.Find(spec.measured_on);
  for (const auto& gpu : spec.candidates.gpus) {
    if (steps.count(gpu)) continue;
    const models::Accelerator& to = *catalogue.Find(gpu);
    GpuStep g = steps[spec.measured_on];
    g.step_s = models::ScaleStepTimeS(g.step_s, from, to, spec.model.compute_bound_fraction);
    g.status = "assumed";
    g.source = fmt::format("scaled from {} by the roofline rule (compute-bound share {:g}): x{:.3f}", spec.measured_on,
                           spec.model.compute_bound_fraction, g.step_s / steps[spec.measured_on].step_s);
    steps[gpu] = g;
  }

  // Checkpoint, restart and memory inputs (preflight wins).
  const BytesPerParameter bpp = StateBytes(spec.model.optimizer, spec.model.precision);
  double& checkpoint_bytes = setup.checkpoint_bytes;
  checkpoint_bytes = spec.checkpoint.bytes > 0 ? spec.checkpoint.bytes : spec.model.parameters * bpp.checkpoint();
  double& write_bps = setup.write_bytes_per_s;
  double& read_bps = setup.read_bytes_per_s;
  write_bps = spec.checkpoint.write_bytes_per_s;
  read_bps = spec.checkpoint.read_bytes_per_s;
  double& peak_memory = setup.peak_memory_bytes;
  if (preflight) {
    if (preflight->checkpoint_bytes) checkpoint_bytes = *preflight->checkpoint_bytes;
    if (preflight->checkpoint_write_bytes_per_s) write_bps = *preflight->checkpoint_write_bytes_per_s;
    if (preflight->checkpoint_read_bytes_per_s) read_bps = *preflight->checkpoint_read_bytes_per_s;
    if (preflight->restart_s) {
      setup.measured_restart = MeasuredRestart{*preflight->restart_s, preflight->world_size,
                                               "preflight " + spec.preflight_path};
    }
    if (preflight->peak_memory_bytes && preflight_gpu) peak_memory = *preflight->peak_memory_bytes;
  }
  {
    CheckpointInputs& ck = setup.checkpoint_inputs;
    ck.bytes = checkpoint_bytes;
    ck.write_bytes_per_s = write_bps;
    ck.mode = spec.checkpoint.mode;
    ck.snapshot_bytes_per_s =
        spec.checkpoint.snapshot_given ? spec.checkpoint.snapshot_bytes_per_s : kDefaultSnapshotBytesPerS;
    ck.ddp_writers = spec.checkpoint.ddp_writers;
  }
  // The evaluation pass: the plan file's when stated, else what a GPU preflight timed (a CPU
  // preflight's evaluation time says nothing about the GPU's, like its step time).
  setup.eval_duration_s = spec.eval.duration_s;
  if (!spec.eval.duration_given && preflight && preflight->eval_s && preflight_gpu) {
    setup.eval_duration_s = *preflight->eval_s;
    setup.eval_from_preflight = true;
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
        row.memory = FitMemory(spec.model, sharding == "fsdp", row.gpus, *catalogue.Find(gpu), peak_memory, accum);
        row.step_time_s = steps[gpu].step_s;
        row.step_time_source = steps[gpu].source;
        ApplyPilotShape(pilot, *catalogue.Find(gpu), preflight ? &*preflight : nullptr, &row);
        row.samples_per_step = static_cast<double>(loader.batch_size) * accum * row.gpus;
        row.compute_s_per_step = row.step_time_s * accum;
        const TargetSamples target = SamplesToTarget(spec, dataset, reference_batch, row.samples_per_step);
        row.samples_to_target_multiplier = target.multiplier;
        if (!target.warning.empty()) AddUnique(&row.warnings, target.warning);
        row.total_steps = spec.target.kind == TargetSpec::Kind::kSteps
                              ? static_cast<int64_t>(std::ceil(spec.target.value))
                              : CeilDiv(target.samples, row.samples_per_step);
        const double gradient_bytes = spec.model.parameters * bpp.gradients;
        row.collective = EstimateCollective(gradient_bytes, sharding == "fsdp", n, gpn, *catalogue.Find(gpu),
                                            spec.network, row.step_time_s * accum);
        if (!steps[gpu].known()) AddUnique(&row.assumed, "step_time");
        if (!row.memory.measured) AddUnique(&row.assumed, "memory");
        if (!(preflight && preflight->checkpoint_write_bytes_per_s)) AddUnique(&row.assumed, "checkpoint");
        if (!ComputeRestart(spec.reliability.restart, row.gpus, n, {}, setup.measured_restart).measured())
          AddUnique(&row.assumed, "restart");
        if (FailureModelAssumed(spec.reliability.failures)) AddUnique(&row.assumed, "failure_rate");
        if (row.gpus > 1) AddUnique(&row.assumed, n > 1 ? "network" : "intra_node_link");
        if (row.memory.fits) {
          CandidateSimSetup candidate;
          candidate.scenario_json = steps[gpu].scenario_json;
          candidate.scenario_path = steps[gpu].scenario_path;
          candidate.gpus_per_node = gpn;
          candidate.nodes = n;
          candidate.dataset_samples = dataset;
          candidate.step_time_s = row.step_time_s;
          candidate.gradient_bytes = gradient_bytes;
          candidate.fsdp = sharding == "fsdp";
          candidate.network = CandidateNetworkOf(spec.network, *catalogue.Find(gpu));
          row.checkpoint_layout = LayOutCheckpoint(setup.checkpoint_inputs, steps[gpu].scenario_json,
                                                   sharding == "fsdp", n, gpn, row.compute_s_per_step);
          candidate.checkpoint = row.checkpoint_layout.sim;
          // A cluster the simulator cannot hold is bad input now, in one line, not a failed point later.
          auto held = CandidateScenario(candidate, std::min(row.total_steps, spec.simulation.max_steps));
          if (!held.ok()) {
            return Status::InvalidArgument(fmt::format("{}: candidate {} x {} node{} ({}) cannot be simulated: {}",
                                                       spec.path, gpu, n, n == 1 ? "" : "s", sharding,
                                                       held.status().message()));
          }
          if (candidate.checkpoint.simulate) {
            auto window = CheckpointWindowScenario(candidate);
            if (!window.ok()) {
              return Status::InvalidArgument(
                  fmt::format("{}: candidate {} x {} node{} ({}): its checkpoint saves cannot be simulated: {}",
                              spec.path, gpu, n, n == 1 ? "" : "s", sharding, window.status().message()));
            }
          }
          setup.point_rows.push_back(out.rows.size());
          setup.sims.push_back(std::move(candidate));
          setup.point_labels.push_back(fmt::format("{} x {} node{} ({})", gpu, n, n == 1 ? "" : "s", sharding));
        }
        for (const auto& w : steps[gpu].warnings) AddUnique(&row.warnings, w);
        for (const auto& what : steps[gpu].extrapolated) {
          row.extrapolations.push_back({ExtrapolationKind::kScenarioParameter, what});
        }
        if (!steps[gpu].known()) {
          row.extrapolations.push_back({ExtrapolationKind::kStepTimeAssumed, "step_time_s[" + gpu + "]"});
        }
        if (n > kValidatedClusterNodes) {
          // The cluster model is validated at 2-4 nodes (the multi-node suite, docs/validation.md).
          row.extrapolations.push_back(
              {ExtrapolationKind::kBeyondValidatedNodes, fmt::format("{} nodes > {}", n, kValidatedClusterNodes)});
        }
        if (!row.memory.fits) {
          row.bottleneck = "memory";
          row.bottleneck_evidence = row.memory.breakdown;
        }
        out.rows.push_back(std::move(row));
      }
    }
  }
  out.multinode_mode =
      "every candidate simulated as its whole cluster (cluster.nodes x cluster.gpus_per_node ranks, one "
      "DataLoader each); gradients reduced every optimizer step as SimGrid flows (hierarchical all-reduce for "
      "DDP, reduce-scatter + all-gather for FSDP) over the plan's network";
  out.parallel_mode =
      "candidates are points of a sweep directory (DIR/points/, as what-if's): simulated in parallel in forked "
      "processes, resumable (--resume), divisible across processes or a Slurm array (--shard, --slurm) and "
      "joined by --merge";
  return setup;
}

Result<PlanOutcome> FinishPlan(PlanSetup setup, const std::vector<CandidateRun>& runs) {
  if (runs.size() != setup.point_rows.size()) {
    return Status::Internal(
        fmt::format("plan: {} candidate runs for {} candidates", runs.size(), setup.point_rows.size()));
  }
  PlanOutcome& out = setup.out;
  const PlanSpec& spec = out.spec;
  auto& steps = setup.steps;
  const auto& preflight = setup.preflight;
  const int accum = setup.grad_accum;
  const double checkpoint_bytes = setup.checkpoint_bytes, write_bps = setup.write_bytes_per_s,
               read_bps = setup.read_bytes_per_s, peak_memory = setup.peak_memory_bytes;
  const SourcedValue checkpoint_read =
      CheckpointRead(checkpoint_bytes, read_bps, !(preflight && preflight->checkpoint_bytes) && spec.checkpoint.bytes <= 0,
                     preflight && preflight->checkpoint_read_bytes_per_s, preflight && preflight->checkpoint_bytes);
  sim::CostCache& cache = *setup.cache;
  const BytesPerParameter bpp = StateBytes(spec.model.optimizer, spec.model.precision);

  for (size_t p = 0; p < setup.point_rows.size(); ++p) {
    auto& row = out.rows[setup.point_rows[p]];
    const CandidateRun& run = runs[p];
    // The geometry of the simulation that produced the run (its length does not change it).
    auto point = PrepareCandidate(setup.sims[p], 1, &cache);
    if (!point.ok()) return point.status();
    const EpochGeometry epochs{MicroBatchesPerEpoch(*point), accum};
    row.steady = DetectSteadyState(run.interval_s, epochs, spec.simulation.tolerance);
    row.simulated_steps = static_cast<int64_t>(run.interval_s.size());
    row.simulated = true;
    const auto& x = run.interval_s;
    row.training_s = ExtrapolateS(row.steady, x, epochs, row.total_steps);
    const bool complete = row.simulated_steps >= row.total_steps;
    row.throughput_samples_per_s =
        complete ? row.samples_per_step * row.total_steps / row.training_s : row.samples_per_step / row.steady.step_s;
    SimulatedCommunication(run, row.gpus, x.size(), &row.collective);
    row.checkpoint = StallOf(row.checkpoint_layout, run.checkpoint);
    // What limits the candidate, from its own simulated step (plan/recommendation.h), not the
    // utilisation signal.
    const StepAttribution limit = AttributeStep(row);
    row.bottleneck = limit.limiting == "none" ? "none (compute)" : limit.limiting;
    row.bottleneck_evidence = fmt::format(
        "simulated step {:.4g} s: compute {:.4g} s, exposed communication {:.4g} s, data loading and host {:.4g} s; "
        "removing the largest non-compute part would buy at most {:+.1f}%",
        limit.step_s, limit.compute_s, limit.exposed_comm_s, limit.data_host_s, 100 * limit.at_most_gain);
    if (!complete && !row.steady.steady) {
      AddUnique(&row.warnings, "not steady: " + row.steady.detail + " (estimate from the last half)");
      row.extrapolations.push_back({ExtrapolationKind::kNotSteady, "steady_step_s"});
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
    // Interval multipliers on training time, from the typed list (docs/planning.md, "Uncertainty").
    const IntervalMultipliers interval = WidenBand(spec.uncertainty, row.extrapolations);
    row.interval_low = interval.low;
    row.interval_high = interval.high;

    const int64_t evals = spec.eval.every_steps > 0 ? row.total_steps / spec.eval.every_steps : 0;
    const double eval_s = static_cast<double>(evals) * setup.eval_duration_s;
    row.failure_rate = ComputeJobFailureRate(spec.reliability.failures, row.gpus, row.nodes);
    if (auto note = FloorContradictedByGivenRates(spec.reliability.failures)) AddUnique(&row.warnings, *note);
    row.restart = ComputeRestart(spec.reliability.restart, row.gpus, row.nodes, checkpoint_read, setup.measured_restart);
    const auto& ph = spec.phases;
    const double download_s = ph.download_bytes > 0 ? ph.download_bytes / ph.download_bytes_per_s : 0;
    const double copy_out_s = ph.copy_out_bytes > 0 ? ph.copy_out_bytes / ph.copy_out_bytes_per_s : 0;
    // Saves every K steps: the work between two saves is K steps and the evaluations among them.
    const int64_t save_every_steps = spec.checkpoint.every_steps;
    auto step_s = [&](double training_s) {
      return training_s / static_cast<double>(std::max<int64_t>(1, row.total_steps));
    };
    auto work_between_saves_s = [&](double training_s) {
      const double evals = spec.eval.every_steps > 0
                               ? static_cast<double>(save_every_steps) / static_cast<double>(spec.eval.every_steps)
                               : 0;
      return static_cast<double>(save_every_steps) * step_s(training_s) + evals * setup.eval_duration_s;
    };
    auto make_goodput = [&](double training_s) {
      GoodputInput in;
      in.work_s = training_s + eval_s;
      in.training_s = training_s;
      in.job_mtbf_s = row.failure_rate.mtbf_s();
      in.checkpoint_write_s = row.checkpoint.per_save.value;
      in.min_interval_s = row.checkpoint.min_interval_s;
      in.restart_s = row.restart.total_s();
      in.auto_interval = spec.checkpoint.auto_interval;
      in.every_s = save_every_steps > 0 ? work_between_saves_s(training_s) : spec.checkpoint.every_s;
      return ComputeGoodput(in);
    };
    auto make_budget = [&](double training_s, const Goodput& g) {
      Budget b;
      b.download_s = download_s;
      b.preprocess_s = ph.preprocess_s;
      b.training_s = training_s;
      b.eval_s = eval_s;
      b.checkpoint_s = g.checkpoint_s;
      b.failures_s = g.feasible ? g.lost_work_s + g.restart_total_s : std::numeric_limits<double>::infinity();
      b.export_s = ph.export_s;
      b.copy_out_s = copy_out_s;
      b.buffer_s = spec.reservation.buffer * b.total_s();
      return b;
    };
    // The reservation replayed K times (same draws at both ends: only the training time differs).
    const uint64_t seed = Rng::DeriveSeed(spec.monte_carlo.seed, &row - out.rows.data());
    auto replay = [&](double training_s, const Goodput& g) {
      ReplayInput in;
      in.work_s = training_s + eval_s;
      in.checkpoint_interval_s = g.checkpoint_interval_s;
      in.checkpoint_write_s = g.checkpoint_write_s;
      in.restart_s = g.restart_s;
      in.job_mtbf_s = g.job_mtbf_s;
      in.fixed_s = download_s + ph.preprocess_s + ph.export_s + copy_out_s;
      in.buffer_fraction = spec.reservation.buffer;
      // A known failure schedule counts from the job's start; the replay's clock from training's.
      const ReliabilitySpec& rel = spec.reliability;
      in.known_schedule = rel.known_failures_given;
      for (double t : rel.known_failures_s) in.known_failures_s.push_back(t - download_s - ph.preprocess_s);
      // Each timed launch as its offset from the figure the budget uses (parsing requires the fixed restart).
      for (double t : rel.launch_preprocess_s) in.start_offsets_s.push_back(t - ph.preprocess_s);
      for (double t : rel.launch_restart_s) in.restart_offsets_s.push_back(t - rel.restart.fixed_s->value);
      // Saves by step, unless the interval had to be raised (an asynchronous write longer than K steps).
      if (save_every_steps > 0 && !g.interval_bounded) {
        in.checkpoint_every_steps = save_every_steps;
        in.steps = row.total_steps;
        in.step_s = step_s(training_s);
        in.eval_every_steps = spec.eval.every_steps;
        in.eval_s = setup.eval_duration_s;
      }
      ReplayOptions options;
      options.trials = spec.monte_carlo.trials;
      options.seed = seed;
      if (!g.feasible) {
        ReservationDistribution none;
        none.p_within.assign(spec.reservation.days.size(), 0);
        none.note = "infeasible: not replayed";
        return none;
      }
      return SimulateReservation(in, spec.reservation.days, options);
    };
    // The expected row at the band's measured bias (0 unless the plan file gives one); the ends stay
    // where the band puts them around the simulated training time.
    const double expected_training_s = row.training_s * (1 + spec.training_bias);
    row.goodput = make_goodput(expected_training_s);
    row.budget = make_budget(expected_training_s, row.goodput);
    row.budget_low = make_budget(row.training_s * row.interval_low, make_goodput(row.training_s * row.interval_low));
    const Goodput goodput_high = make_goodput(row.training_s * row.interval_high);
    row.budget_high = make_budget(row.training_s * row.interval_high, goodput_high);
    row.reservation = replay(expected_training_s, row.goodput);
    row.reservation_high = replay(row.training_s * row.interval_high, goodput_high);
    row.reservation_low = replay(row.training_s * row.interval_low, make_goodput(row.training_s * row.interval_low));
    row.gpu_hours = row.budget.total_s() / 3600.0 * row.gpus;
    row.cost = row.gpu_hours * spec.prices_per_gpu_hour.at(row.gpu);
    for (size_t s = 0; s < spec.reservation.days.size(); ++s) {
      row.fits_slot.push_back(row.goodput.feasible && row.reservation_high.trials > 0 &&
                              row.reservation_high.p_within[s] >= spec.reservation.probability);
    }
  }
  for (auto& row : out.rows) {
    if (row.fits_slot.empty()) row.fits_slot.assign(spec.reservation.days.size(), false);
  }

  out.provisional = false;
  for (const auto& gpu : spec.candidates.gpus) out.provisional = out.provisional || !steps[gpu].known();

  // Assumptions table.
  auto add = [&](const std::string& input, const std::string& value, const std::string& status,
                 const std::string& source) {
    out.assumptions.push_back({{"input", input}, {"value", value}, {"status", status}, {"source", source}});
  };
  out.assumptions = json::array();
  for (const auto& gpu : spec.candidates.gpus) {
    const auto& g = steps[gpu];
    add("step_time_s[" + gpu + "]", fmt::format("{:.6g}", g.step_s), g.status, g.source);
  }
  add("compute_bound_fraction", fmt::format("{:g}", spec.model.compute_bound_fraction),
      spec.model.compute_bound_given ? "input" : "assumed",
      "roofline rule for GPUs without their own measurement (docs/planning.md)");
  add("activation_bytes_per_gpu", fmt::format("{:.4g}", spec.model.activation_bytes_per_gpu),
      peak_memory > 0               ? (setup.preflight_verdict.gpu_figures_measured ? "measured" : "assumed")
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
  {
    const bool from_preflight = setup.eval_from_preflight;
    add("eval.duration_s", fmt::format("{:.4g}", setup.eval_duration_s),
        from_preflight ? "measured" : spec.eval.duration_given ? "input" : "assumed",
        from_preflight ? "preflight (evaluation callable timed on the GPU)"
        : spec.eval.duration_given
            ? "plan file"
            : (preflight && preflight->eval_s ? "not given: 0 (the preflight's evaluation ran on the CPU: not used)"
                                              : "not given: 0"));
  }
  add("checkpoint_write_bytes_per_s", fmt::format("{:.4g}", write_bps),
      preflight && preflight->checkpoint_write_bytes_per_s ? "measured" : "input",
      preflight && preflight->checkpoint_write_bytes_per_s ? "preflight" : "plan file");
  add("checkpoint.mode", spec.checkpoint.mode, spec.checkpoint.mode_given ? "input" : "assumed",
      spec.checkpoint.mode_given ? "plan file" : "default: synchronous saves (training waits for the write)");
  if (spec.checkpoint.mode == "async") {
    add("checkpoint.snapshot_bytes_per_s", fmt::format("{:.4g}", setup.checkpoint_inputs.snapshot_bytes_per_s),
        spec.checkpoint.snapshot_given ? "input" : "assumed",
        spec.checkpoint.snapshot_given ? "plan file: device-to-host snapshot rate per writer" : kDefaultSnapshotSource);
  }
  add("checkpoint.writers", spec.checkpoint.ddp_writers + " (ddp); all_ranks (fsdp)",
      spec.checkpoint.writers_given ? "input" : "assumed",
      "DDP saves the replicated state from rank 0 (or one rank per node); FSDP every rank its shard "
      "(torch.distributed.checkpoint)");
  add("checkpoint_read_bytes_per_s", fmt::format("{:.4g}", read_bps),
      preflight && preflight->checkpoint_read_bytes_per_s ? "measured" : "input",
      preflight && preflight->checkpoint_read_bytes_per_s ? "preflight" : "plan file");
  auto add_sourced = [&](const std::string& input, const SourcedValue& v) {
    add(input, Fmt(v.value), v.status, v.source);
  };
  const RestartSpec& rs = spec.reliability.restart;
  if (setup.measured_restart) {
    add("restart_s", fmt::format("{:g}", setup.measured_restart->restart_s), "measured",
        fmt::format("{} (process start to the first step after a restore, checkpoint read included, {} rank{} on one "
                    "node); candidates of another size: extrapolated (their restart_parts)",
                    setup.measured_restart->source, setup.measured_restart->world_size,
                    setup.measured_restart->world_size == 1 ? "" : "s"));
  }
  if (rs.fixed_s) {
    add_sourced(setup.measured_restart ? "restart.detection_rescheduling_init_s" : "restart_s", *rs.fixed_s);
  } else {
    add_sourced("restart.detection_s", rs.detection_s);
    add_sourced("restart.rescheduling_s", rs.rescheduling_s);
    add_sourced("restart.process_group_init_s", rs.init_s);
    add_sourced("restart.process_group_init_reference_ranks", rs.init_reference_ranks);
    add_sourced("restart.process_group_init_exponent", rs.init_exponent);
  }
  const FailureModelSpec& fm = spec.reliability.failures;
  add_sourced("gpu_mtbf_h", fm.gpu_mtbf_h);
  add_sourced("node_mtbf_h", fm.node_mtbf_h);
  add_sourced("network_mtbf_h", fm.network_mtbf_h);
  if (fm.floor.enabled) {
    add_sourced("small_job_floor.job_mttf_h", fm.floor.job_mttf_h);
    add_sourced("small_job_floor.reference_gpus", fm.floor.reference_gpus);
    add_sourced("small_job_floor.reference_gpus_per_node", fm.floor.reference_gpus_per_node);
    add_sourced("small_job_floor.exponent", fm.floor.exponent);
  } else {
    add("small_job_floor", "none", "input", "plan file: no floor, the component rates alone");
  }
  add("reservation.probability", fmt::format("{:g}", spec.reservation.probability),
      spec.reservation.probability_given ? "input" : "assumed",
      spec.reservation.probability_given ? "plan file" : "default: a slot fits when 9 trials in 10 finish within it");
  add("monte_carlo.trials", fmt::format("{}", spec.monte_carlo.trials), spec.monte_carlo.given ? "input" : "assumed",
      spec.monte_carlo.given ? "plan file" : "default (binomial standard error of P = 0.9: 0.0067)");
  const ReliabilitySpec& rel = spec.reliability;
  if (rel.known_failures_given) {
    add("reliability.known_failures", fmt::format("[{}]", fmt::join(rel.known_failures_s, ", ")), "input",
        rel.launch_preprocess_s.empty() && rel.launch_restart_s.empty()
            ? "plan file: failure times (s since the job's start) replayed instead of drawn, one deterministic trial"
            : "plan file: failure times (s since the job's start) replayed instead of drawn, over the launch spread");
  }
  auto add_launches = [&](const std::string& input, const std::vector<double>& launches, const char* stands_for) {
    if (launches.empty()) return;
    add(input, fmt::format("[{}]", fmt::join(launches, ", ")), "input",
        fmt::format("plan file: {} launches timed separately, each a value of {}; every trial draws one per launch",
                    launches.size(), stands_for));
  };
  add_launches("reliability.launch_spread.preprocess_s", rel.launch_preprocess_s, "job.phases.preprocess_s");
  add_launches("reliability.launch_spread.restart_s", rel.launch_restart_s, "reliability.restart_s");
  add("network.nic_bytes_per_s", fmt::format("{:.4g}", spec.network.nic_bytes_per_s),
      spec.network.given ? "input" : "assumed", spec.network.given ? "plan file" : "default: 100 GB/s per node");
  add("network.overlap", fmt::format("{:g}", spec.network.overlap), spec.network.overlap_given ? "input" : "assumed",
      spec.network.overlap_given
          ? "plan file: fraction of the step that hides communication"
          : "default: backward ~ 2/3 of the step (training FLOPs 2N forward + 4N backward, Kaplan et al. 2020, "
            "arXiv 2001.08361), during which PyTorch DDP's bucketed all-reduces run (its default)");
  if (spec.global_batch.critical_batch_samples > 0) {
    add("job.global_batch.critical_batch_samples", fmt::format("{:g}", spec.global_batch.critical_batch_samples),
        "input", "plan file: samples to target x (1 + B / B_c) / (1 + B_ref / B_c) (McCandlish et al. 2018)");
  }
  add("job.global_batch.reference_samples", fmt::format("{:g}", setup.reference_global_batch),
      spec.global_batch.reference_samples > 0 ? "input" : "measured",
      spec.global_batch.reference_samples > 0 ? "plan file: the global batch the target was set at"
                                              : "the measured scenario's global batch (batch_size x grad_accum x ranks)");
  add("collectives", "simulated", "assumed", out.multinode_mode);
  add("prediction_error_band",
      fmt::format("{:+.1f}% .. {:+.1f}%", 100 * spec.uncertainty.error_low, 100 * spec.uncertainty.error_high),
      spec.uncertainty_given ? "input" : "measured",
      spec.uncertainty_given ? spec.uncertainty.source
                             : fmt::format("{}; scope: {}", spec.uncertainty.source, spec.uncertainty.scope));
  if (spec.training_bias != 0) {
    add("uncertainty.bias", fmt::format("{:+.2f}%", 100 * spec.training_bias), "input",
        "plan file: the mean training-time error of the band's cases; the expected row plans training x (1 + bias)");
  }
  add("prices_per_gpu_hour", "", "input", "plan file");
  add("accelerator", out.accelerator, out.accelerator == "cuda" ? "measured" : "emulated", out.accelerator_note);
  for (const auto& a : setup.pilot_assumptions) out.assumptions.push_back(a);

  out.recommendation = Recommend(spec, out.rows, out.provisional);
  return out;
}

std::vector<std::pair<std::string, json>> PlanSetup::PointAxes(size_t point) const {
  const auto& row = out.rows[point_rows[point]];
  return {{"gpu", row.gpu}, {"nodes", row.nodes}, {"sharding", row.sharding}};
}

Result<scenarios::SweepIdentity> IdentifyPlan(const PlanSetup& setup) {
  const PlanSpec& spec = setup.out.spec;
  json definition = {{"schema", "simreplay.plan-identity/1"}, {"plan", spec.document}};
  // Every scenario the candidates simulate, as read, and the files that change step times or GPUs.
  std::vector<scenarios::SweepPoint> inputs;
  json scenario_docs = json::object();
  for (const auto& [gpu, step] : setup.steps) {
    if (scenario_docs.contains(step.scenario_path)) continue;
    scenario_docs[step.scenario_path] = step.scenario_json;
    auto scenario =
        scenarios::ParseScenario(step.scenario_json, step.scenario_path, scenarios::DirectoryOf(step.scenario_path));
    if (!scenario.ok()) return scenario.status();
    inputs.push_back({{}, std::move(*scenario)});
  }
  definition["scenarios"] = scenario_docs;
  for (const auto& [key, path] :
       {std::pair<std::string, std::string>{"preflight", spec.preflight_path}, {"catalogue", spec.catalogue_path}}) {
    if (path.empty()) continue;
    auto digest = Sha256OfFile(path);
    if (!digest.ok()) return digest.status();
    definition[key + "_sha256"] = *digest;
  }
  definition["candidates"] = setup.point_labels;
  auto identity = scenarios::IdentifySweep(definition, spec.path, inputs);
  if (!identity.ok()) return identity.status();
  identity->point_count = setup.point_rows.size();
  return identity;
}

Result<CandidateRunSummary> SimulateCandidates(const PlanSetup& setup, const CandidateRunOptions& options) {
  const PlanSpec& spec = setup.out.spec;
  const size_t points = setup.point_rows.size();
  CandidateRunSummary summary;
  summary.runs.resize(points);
  std::vector<bool> finished(points, false);
  if (options.store != nullptr) {
    SIMREPLAY_RETURN_IF_ERROR(options.store->Prepare());
    options.store->RemoveStaleTemporaries();
    if (options.resume) {
      auto f = options.store->Finished();
      if (!f.ok()) return f.status();
      finished = std::move(*f);
    }
  }
  // Rounds: every pending point runs in parallel; one not yet steady runs again 4 x longer.
  std::vector<size_t> pending;
  std::vector<int64_t> length(points, 0);
  for (size_t p = 0; p < points; ++p) {
    if (!options.shard.Owns(p)) continue;
    ++summary.owned;
    if (finished[p]) {
      ++summary.reused;
      continue;
    }
    length[p] = std::min(setup.out.rows[setup.point_rows[p]].total_steps, spec.simulation.initial_steps);
    pending.push_back(p);
  }
  size_t done_runs = 0, total_runs = pending.size();
  std::vector<sim::PreparedPoint> prepared(points);
  // Each point's checkpoint window runs once, beside its first round (plan/checkpoint_stall.h).
  std::vector<sim::PreparedPoint> windows(points);
  std::vector<CandidateCheckpointRun> checkpoint_runs(points);
  std::vector<bool> window_failed(points, false);
  bool first_round = true;
  auto fail = [&](size_t p, const Status& status) -> Status {
    const Status why = status.WithPrefix(setup.point_labels[p] + ": ");
    if (options.store != nullptr) SIMREPLAY_RETURN_IF_ERROR(options.store->SaveFailure(p, setup.PointAxes(p), why));
    summary.failures.emplace_back(p, why);
    return Status::Ok();
  };
  sim::IsolatedRunOptions isolation;
  isolation.parallel = options.jobs;
  // The children alive at once share the machine's memory (scenarios/simulation_budget.h): a large
  // candidate runs beside fewer others, and one that cannot fit on its own is refused with its estimate.
  isolation.memory_budget_bytes = scenarios::SimulationMemoryLimitBytes();
  while (!pending.empty()) {
    std::vector<sim::IsolatedJob> jobs;
    isolation.job_bytes.clear();
    std::vector<size_t> running;  // the pending points that fit, in job order
    for (size_t p : pending) {
      auto prepared_point = PrepareCandidate(setup.sims[p], length[p], setup.cache.get());
      if (!prepared_point.ok()) return prepared_point.status();
      prepared[p] = std::move(*prepared_point);
      if (Status fits = sim::CheckSimulationFits(prepared[p].input); !fits.ok()) {
        SIMREPLAY_RETURN_IF_ERROR(fail(p, fits));
        continue;
      }
      jobs.push_back(MakeCandidateJob(prepared[p]));
      isolation.job_bytes.push_back(sim::EstimatedBytesAsSimulated(prepared[p].input));
      running.push_back(p);
    }
    total_runs -= pending.size() - running.size();
    std::vector<size_t> window_points;
    if (first_round) {
      for (size_t p : running) {
        if (!setup.sims[p].checkpoint.simulate) continue;
        auto window = PrepareCheckpointWindow(setup.sims[p], setup.cache.get());
        if (!window.ok()) return window.status();
        windows[p] = std::move(*window);
        jobs.push_back(MakeCheckpointWindowJob(windows[p]));
        isolation.job_bytes.push_back(sim::EstimatedBytesAsSimulated(windows[p].input));
        window_points.push_back(p);
      }
      total_runs += window_points.size();
    }
    const size_t round_runs = jobs.size();
    const size_t round_start = done_runs;
    size_t round_done = 0;
    isolation.on_result = [&](size_t, const Result<std::string>&) {
      if (options.progress) options.progress(round_start + ++round_done, total_runs);
      return true;
    };
    auto results = sim::RunIsolated(jobs, isolation);
    done_runs += round_runs;
    for (size_t w = 0; w < window_points.size(); ++w) {
      const size_t p = window_points[w];
      auto checkpoint = ParseCheckpointWindowRun(results[running.size() + w]);
      if (!checkpoint.ok()) {
        SIMREPLAY_RETURN_IF_ERROR(fail(p, checkpoint.status()));
        window_failed[p] = true;
        continue;
      }
      checkpoint_runs[p] = *checkpoint;
    }
    first_round = false;
    std::vector<size_t> again;
    for (size_t k = 0; k < running.size(); ++k) {
      const size_t p = running[k];
      if (window_failed[p]) continue;
      const auto& row = setup.out.rows[setup.point_rows[p]];
      auto run = ParseCandidateRun(results[k]);
      if (!run.ok()) {
        SIMREPLAY_RETURN_IF_ERROR(fail(p, run.status()));
        continue;
      }
      const EpochGeometry epochs{MicroBatchesPerEpoch(prepared[p]), setup.grad_accum};
      const SteadyState steady = DetectSteadyState(run->interval_s, epochs, spec.simulation.tolerance);
      const bool complete = static_cast<int64_t>(run->interval_s.size()) >= row.total_steps;
      if (!steady.steady && !complete && length[p] < spec.simulation.max_steps) {
        length[p] = std::min({length[p] * 4, spec.simulation.max_steps, row.total_steps});
        again.push_back(p);
        ++total_runs;
        continue;
      }
      run->checkpoint = checkpoint_runs[p];
      if (options.store != nullptr) {
        SIMREPLAY_RETURN_IF_ERROR(options.store->Save(p, {setup.PointAxes(p), CandidateRunJson(*run)}));
      }
      summary.runs[p] = std::move(*run);
      ++summary.simulated;
    }
    pending = std::move(again);
  }
  return summary;
}

Result<std::vector<CandidateRun>> LoadCandidateRuns(const PlanSetup& setup, const scenarios::SweepIdentity& identity,
                                                    const std::vector<std::string>& dirs) {
  if (setup.point_rows.empty()) return std::vector<CandidateRun>{};  // no candidate fits: nothing was simulated
  auto loaded = scenarios::LoadSweepDirectories(dirs);
  if (!loaded.ok()) return loaded.status();
  if (loaded->identity.sha256 != identity.sha256) {
    return Status::InvalidArgument(fmt::format(
        "{}: the candidate points were simulated from another plan, scenario, preflight or input files (identity "
        "{} there, {} for {}): simulate them again",
        dirs.front(), loaded->identity.sha256.substr(0, 12), identity.sha256.substr(0, 12), setup.out.spec.path));
  }
  if (!loaded->Missing().empty()) return Status::NotFound(scenarios::DescribeMissing(*loaded));
  std::vector<CandidateRun> runs;
  for (size_t p = 0; p < loaded->points.size(); ++p) {
    auto run = CandidateRunFromJson(loaded->points[p]->result);
    if (!run.ok()) {
      return run.status().WithPrefix(fmt::format("{}/points/{}: ", dirs.front(), scenarios::PointFileName(p)));
    }
    runs.push_back(std::move(*run));
  }
  return runs;
}

Result<PlanOutcome> RunPlan(const PlanSpec& spec, const PlanOptions& options) {
  auto setup = PreparePlan(spec, PreflightUse{options.preflight_path});
  if (!setup.ok()) return setup.status();
  CandidateRunOptions run_options;
  run_options.jobs = options.jobs;
  run_options.progress = [&](size_t done, size_t total) {
    if (options.progress) options.progress("simulating", done, total);
  };
  auto summary = SimulateCandidates(*setup, run_options);
  if (!summary.ok()) return summary.status();
  if (!summary->failures.empty()) return summary->failures.front().second;
  std::vector<CandidateRun> runs;
  for (auto& run : summary->runs) runs.push_back(std::move(*run));
  return FinishPlan(std::move(*setup), runs);
}

}  // namespace simreplay::plan
