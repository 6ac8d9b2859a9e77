// What `simreplay plan --preflight` checks before it combines a preflight with a plan
// (docs/planning.md, "Preflight checks"): the pilot must have run the plan's micro-batch, a sequence
// length at least the plan's, no more ranks than a candidate node holds, and on the accelerator the
// plan says its step was measured on; and the preflight's software stack must be the one the plan's
// capture ran (docs/manifest.md, "What matters"). A mismatch refuses the plan in one line (exit 3)
// unless overridden (--allow-preflight-mismatch, --allow-manifest-diff), and an override is recorded
// in plan.json's assumptions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "models/accelerator_catalogue.h"
#include "plan/preflight_input.h"

namespace simreplay::plan {

// How the preflight is used and which checks the user overrode (command-line flags).
struct PreflightUse {
  std::string path;                 // overrides the plan file's "preflight"
  bool allow_mismatch = false;      // --allow-preflight-mismatch
  bool allow_manifest_diff = false;  // --allow-manifest-diff
};

// What the plan runs, to check the pilot against.
struct PlanShape {
  int micro_batch_samples = 0;  // the scenario's loader.batch_size (per rank)
  double sequence_length = 0;   // job.sequence.length (0: none)
  int gpus_per_node = 1;
  const models::Accelerator* measured_on = nullptr;
  const models::AcceleratorCatalogue* catalogue = nullptr;
};

struct PreflightCheck {
  std::vector<std::string> mismatches;  // one sentence each; empty: the pilot matches the plan
  std::vector<std::string> unchecked;   // what the preflight did not record (not a mismatch)
  bool accelerator_mismatch = false;    // its step time and memory are not measured_on's
};

PreflightCheck CheckPreflightAgainstPlan(const PreflightInputs& preflight, const PlanShape& plan);

// The manifests of the captures behind a scenario: its model's provenance.traces[].manifest and its
// trace's header (resolved paths; "" when the scenario has none). Each {label, manifest}.
Result<std::vector<std::pair<std::string, nlohmann::json>>> ScenarioCaptureManifests(const std::string& model_path,
                                                                                      const std::string& trace_path);

// The preflight's manifest against each capture's, counting the software stack and the revisions
// (replay::ManifestScope::kSoftware). One sentence per capture that differs in what matters.
std::vector<std::string> PreflightManifestDifferences(
    const PreflightInputs& preflight, const std::vector<std::pair<std::string, nlohmann::json>>& captures);

// The verdict on one preflight: whether its GPU figures (step time, peak memory) stand for the plan's
// measured_on GPU, and the rows it adds to plan.json's assumptions (overrides, what was not checked,
// what was not used and why).
struct PreflightVerdict {
  bool gpu_figures_used = false;      // a CUDA pilot that matches the plan, or whose mismatch was overridden
  bool gpu_figures_measured = false;  // used and matching: labelled measured
  std::string why_not_measured;       // when used but not measured
  nlohmann::json assumptions = nlohmann::json::array();  // {"input","value","status","source"}
};

// Checks the preflight against the plan and the captures behind the plan's scenario. Errors (one line,
// kInvalidArgument: exit 3) name the preflight and every mismatch, and the flag that overrides them.
Result<PreflightVerdict> JudgePreflight(const PreflightInputs& preflight, const PlanShape& plan,
                                        const PreflightUse& use,
                                        const std::vector<std::pair<std::string, nlohmann::json>>& captures);

// Whether a candidate of `gpu` needs a qualified software stack the plan has not seen: a ROCm
// accelerator is qualified only by a ROCm preflight that passed. "" when nothing is required.
std::string RequiredStack(const models::Accelerator& gpu, const PreflightInputs* preflight);

}  // namespace simreplay::plan
