// The pilot rules (plan/pilot_rules.h) applied to a plan's steps and candidates: which step time the
// preflight gives (its precision phase when it measured the plan's precision), the sequence-length
// scaling of the step times and activations, activation checkpointing per candidate, and the ROCm
// qualification. Every choice adds a row to plan.json's assumptions or a note to the candidate.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "models/accelerator_catalogue.h"
#include "plan/pilot_rules.h"
#include "plan/planner.h"

namespace simreplay::plan {

// The preflight's GPU step replaces `step` (measured_on's): the plan precision's step time from the
// precision phase when measured, else the step callable's (compute_s).
void UsePreflightStep(const PreflightInputs& preflight, const PreflightVerdict& verdict, const PlanSpec& spec,
                      GpuStep* step, nlohmann::json* assumptions);

// What every candidate of a plan shares.
struct PilotShape {
  double activation_factor = 1;  // sequence-length scaling of the activation memory
  std::string activation_why;
  bool activation_share_measured = true;  // the scaling's memory share was measured (or nothing scaled)
  bool gpu_figures_overridden = false;    // the preflight's peak is used under --allow-preflight-mismatch
  std::string checkpointing_use = "off";  // off | on | auto
  CheckpointingCost checkpointing;
};

// Scales the step times in `steps` (measured_on and scenario_by_gpu) to the plan's sequence length and
// decides the activation scaling and checkpointing cost. `preflight_gpu`: measured_on's step and the
// peak memory are the preflight's.
PilotShape PreparePilotShape(const PlanSpec& spec, const PreflightInputs* preflight, bool preflight_gpu,
                             std::map<std::string, GpuStep>* steps, nlohmann::json* assumptions);

// One candidate: activations scaled, checkpointing on where the plan asks for it (or, with "auto", where
// the candidate fits only with it: said in its warnings), and a ROCm candidate's qualification.
void ApplyPilotShape(const PilotShape& shape, const models::Accelerator& gpu, const PreflightInputs* preflight,
                     CandidateRow* row);

}  // namespace simreplay::plan
