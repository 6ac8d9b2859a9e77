// The plan file (docs/plan-format.md): the job to plan (target, model size, eval, checkpoints, the
// phases around training), the scenario whose data pipeline it runs, the candidate clusters, the
// reliability, the reservation slots and the prices. One validating loader; errors point at
// FILE:LINE of the offending value; relative paths resolve against the plan file's directory.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "models/error_band.h"
#include "plan/failure_model.h"
#include "plan/restart_model.h"

namespace simreplay::plan {

inline constexpr const char* kPlanSchema = "simreplay.plan-input/1";

struct TargetSpec {
  enum class Kind { kSamples, kEpochs, kSteps };
  Kind kind = Kind::kSamples;
  double value = 0;  // samples, epochs or optimizer steps (> 0)
};

struct ModelSpec {
  double parameters = 0;                // model parameters (count)
  std::string optimizer = "adam";       // adam | adamw | sgd (with momentum)
  std::string precision = "bf16";       // bf16 | fp16 (mixed precision with fp32 master weights) | fp32
  double activation_bytes_per_gpu = 0;  // activations and workspace of one micro-batch on one GPU
  bool activation_given = false;        // false: 0 was assumed
  // Share of the step limited by the BF16 peak (the rest by HBM bandwidth): the roofline rule that
  // moves a step time to another GPU (docs/planning.md). Default 0.5, assumed.
  double compute_bound_fraction = 0.5;
  bool compute_bound_given = false;
  double memory_headroom_fraction = 0.1;  // of device memory kept free (CUDA context, fragmentation)
};

// How the samples to target depend on the global batch (docs/planning.md, "Global batch"). With a
// critical batch B_c the samples-vs-batch rule of McCandlish et al. 2018 ("An Empirical Model of
// Large-Batch Training", arXiv 1812.06162: samples to a given loss E(B) = E_min (1 + B / B_c)) scales
// a samples or epochs target set at the reference global batch B_ref to a candidate's batch B:
//   target x (1 + B / B_c) / (1 + B_ref / B_c).
// Without it the target is taken as independent of the batch, and every candidate whose global batch
// is more than kGlobalBatchWarningFactor x B_ref carries a warning saying so.
inline constexpr double kGlobalBatchWarningFactor = 4;
struct GlobalBatchSpec {
  double critical_batch_samples = 0;  // B_c; 0: not given (no rule)
  double reference_samples = 0;       // B_ref; 0: the measured scenario's global batch
};

// The long run's sequence length and the two-part rule that moves a step time and activation memory
// measured at another length to it (docs/planning.md, "Sequence length"): per micro-batch
// f(L) = a*L + b*L^2, the quadratic part being attention; the attention share is b*L^2 / f(L) at the
// length it was measured at. Absent (length 0): no sequence length, nothing scaled.
struct SequenceSpec {
  double length = 0;           // tokens per sample of the long run (job.sequence.length)
  double measured_length = 0;  // the length of the scenario's step time and activation_bytes_per_gpu (0: = length)
  // Attention shares at measured_length (negative: not given; the preflight's, else the default).
  double attention_share_time = -1, attention_share_memory = -1;
};

// Activation checkpointing as a plan choice (docs/planning.md, "Activation checkpointing"): "off", "on"
// (every candidate), or "auto" (a candidate uses it only when it does not fit in memory without it).
// Saved memory and recompute time: the preflight's measurement, else these fractions (negative: the
// labelled defaults).
struct ActivationCheckpointingSpec {
  std::string use = "off";
  double memory_saved_fraction = -1;  // of the activation memory
  double recompute_fraction = -1;     // of the step time, added
};

struct EvalSpec {
  int64_t every_steps = 0;  // 0: no evaluation
  double duration_s = 0;    // one evaluation pass, training stalled
  bool duration_given = false;  // the plan file states duration_s (else a GPU preflight's eval_s is used)
};

struct CheckpointSpec {
  bool auto_interval = true;  // "every_s": "auto" = Young/Daly
  double every_s = 0;         // when not auto
  // Saves every this many optimizer steps instead ("every_steps"; 0: by time, every_s): the replay
  // then places saves and evaluations at their steps (docs/planning.md, "Monte Carlo reservation").
  int64_t every_steps = 0;
  double write_bytes_per_s = 0;
  double read_bytes_per_s = 0;
  double bytes = 0;  // 0: parameters x (state bytes per parameter without gradients)
  // How a save runs (docs/planning.md, "Checkpoint stall"): "sync" (training waits for the write) or
  // "async" (training waits for a device-to-host snapshot at snapshot_bytes_per_s per writer, the
  // write runs behind it, as torch.distributed.checkpoint.async_save).
  std::string mode = "sync";
  bool mode_given = false;
  double snapshot_bytes_per_s = 0;  // 0: kDefaultSnapshotBytesPerS (assumed)
  bool snapshot_given = false;
  // Who writes a DDP (replicated) checkpoint: "rank0" (default) or "per_node"; FSDP: every rank its shard.
  std::string ddp_writers = "rank0";
  bool writers_given = false;
};

// The default device-to-host snapshot rate of one writer for asynchronous saves, assumed:
// torch.distributed.checkpoint.async_save first copies (stages) the state to CPU memory, over the GPU's
// PCIe link; PCIe Gen4 x16 carries 32 GB/s per direction nominal (PCI-SIG), and a node's 8 GPUs
// staging at once share the host's memory bandwidth, so a third of the nominal rate is taken.
inline constexpr double kDefaultSnapshotBytesPerS = 10e9;
inline constexpr const char* kDefaultSnapshotSource =
    "default: torch.distributed.checkpoint.async_save stages the state to CPU memory over PCIe (Gen4 x16: 32 GB/s "
    "per direction nominal, PCI-SIG); a third of it assumed for 8 GPUs staging at once into pageable host memory";

struct PhasesSpec {
  double download_bytes = 0, download_bytes_per_s = 0;
  double preprocess_s = 0;
  double export_s = 0;
  double copy_out_bytes = 0, copy_out_bytes_per_s = 0;
};

struct CandidatesSpec {
  std::vector<std::string> gpus;
  std::vector<int> nodes;
  int gpus_per_node = 8;
  std::vector<std::string> sharding;  // ddp | fsdp
};

// Failure rates and the restart, each value labelled `input` (plan file) or `assumed` (a default
// with its source): docs/planning.md, "Failures" and "Restart".
struct ReliabilitySpec {
  FailureModelSpec failures = DefaultFailureModel();
  RestartSpec restart = DefaultRestart();
  // reliability.known_failures: a failure schedule, seconds since the job's start (the start of its
  // first phase), ascending; every one after the phases before training (download, preprocess).
  // Given (even empty): the Monte Carlo replays exactly these failures (one deterministic trial) instead of
  // drawing them (docs/planning.md, "Checked against real jobs").
  std::vector<double> known_failures_s;
  bool known_failures_given = false;  // the plan file has the key (an empty list: no failure at all)
  // reliability.launch_spread: the same job's launches timed separately, fresh (`preprocess_s`, each a
  // value of job.phases.preprocess_s) and resumed (`restart_s`, each a value of reliability.restart_s).
  // Given: every Monte Carlo trial draws its start-up and each restart's from them, so a known
  // schedule is replayed over the launch-to-launch spread instead of at one figure (docs/planning.md,
  // "Launch spread"). Empty: not given.
  std::vector<double> launch_preprocess_s;
  std::vector<double> launch_restart_s;
};

struct ReservationSpec {
  std::vector<double> days = {7, 30};
  double buffer = 0.15;        // operational buffer, fraction of the planned time added on top
  double knee_fraction = 0.5;  // an added node that buys less than this fraction of linear is past the knee
  // A candidate fits a slot when at least this fraction of Monte Carlo trials finish within it.
  double probability = 0.9;
  bool probability_given = false;
};

// The Monte Carlo reservation (plan/reservation_monte_carlo.h).
struct MonteCarloSpec {
  int64_t trials = 2000;  // binomial standard error of P = 0.9: sqrt(0.09 / 2000) = 0.0067
  uint64_t seed = 0;
  bool given = false;
};

// The default share of the step that is backward, during which PyTorch DDP's bucketed all-reduces
// (and FSDP's prefetched all-gathers and reduce-scatters) run: a backward pass costs about twice the
// forward (training FLOPs ~ 6 N per token, 2 N forward and 4 N backward: Kaplan et al. 2020, "Scaling
// Laws for Neural Language Models", arXiv 2001.08361), so backward ~ 2/3 of forward + backward; the
// optimizer update is neglected. Assumed, labelled so; a plan file's network.overlap replaces it.
inline constexpr double kDefaultBackwardShareOfStep = 2.0 / 3.0;

// Inter-node network of one node (docs/planning.md; defaults are assumptions, flagged).
struct NetworkSpec {
  double nic_bytes_per_s = 100e9;  // per node, all NICs together
  double latency_s = 5e-6;         // per message hop between nodes
  double intra_latency_s = 2e-6;   // per message hop inside a node
  double overlap = kDefaultBackwardShareOfStep;  // fraction of the step that can hide communication
  bool given = false;                            // the plan file has a "network" object
  bool overlap_given = false;                    // ... with "overlap" in it
};

// Relative errors of predicted training throughput, (predicted - measured) / measured, from the
// validation history (models/error_band.h); overridable in the plan file.
using UncertaintySpec = models::ErrorBand;

// How long candidates are simulated before extrapolating (docs/planning.md, "Steady state").
struct SimulationSpec {
  int64_t initial_steps = 240;
  int64_t max_steps = 3840;
  double tolerance = 0.005;
  int jobs = 0;  // parallel simulations; 0: CPU count (the command line may override)
};

struct PlanSpec {
  std::string path;           // the plan file
  std::string scenario_path;  // resolved
  TargetSpec target;
  GlobalBatchSpec global_batch;
  ModelSpec model;
  SequenceSpec sequence;
  ActivationCheckpointingSpec activation_checkpointing;
  EvalSpec eval;
  CheckpointSpec checkpoint;
  PhasesSpec phases;
  std::string measured_on;
  std::map<std::string, std::string> scenario_by_gpu;  // a scenario whose step time was measured on that GPU
  CandidatesSpec candidates;
  ReliabilitySpec reliability;
  ReservationSpec reservation;
  MonteCarloSpec monte_carlo;
  NetworkSpec network;
  UncertaintySpec uncertainty;
  bool uncertainty_given = false;  // the band is the plan file's (labelled input), not the validated one
  // uncertainty.bias: the mean of the training-time errors the band was measured from ((real - predicted)
  // / predicted), within the band. The expected row plans training x (1 + bias); the interval's ends
  // stay at training x (1 + error_low) and x (1 + error_high), where the band put them (docs/planning.md,
  // "Uncertainty"). 0 when not given.
  double training_bias = 0;
  SimulationSpec simulation;
  std::map<std::string, double> prices_per_gpu_hour;
  std::string preflight_path;  // resolved; may be empty
  std::string catalogue_path;  // resolved; empty = built-in catalogue
  nlohmann::json document;     // the plan file as parsed (hashed into the identity of its candidate runs)
};

// Loads and validates a plan file. Error messages: "FILE:LINE: what was expected, what was found".
Result<PlanSpec> LoadPlanFile(const std::string& path);
// Parses a plan from its JSON text (for tests); `path` names it in errors and resolves relative paths.
Result<PlanSpec> ParsePlan(const std::string& text, const std::string& path);

// State bytes per parameter (weights, gradients, optimizer state, master copy) and gradient bytes per
// parameter for an optimizer and precision (docs/planning.md, "Memory").
struct BytesPerParameter {
  double weights = 0, gradients = 0, optimizer = 0, master = 0;
  double total() const { return weights + gradients + optimizer + master; }
  double checkpoint() const { return weights + optimizer + master; }  // gradients are not saved
};
BytesPerParameter StateBytes(const std::string& optimizer, const std::string& precision);

}  // namespace simreplay::plan
