#include "plan/pilot_planning.h"

#include <algorithm>

#include <fmt/format.h>

#include "plan/preflight_checks.h"

namespace simreplay::plan {

namespace {

using nlohmann::json;

void AddPilotRow(json* rows, const std::string& input, const std::string& value, const std::string& status,
                 const std::string& source) {
  rows->push_back({{"input", input}, {"value", value}, {"status", status}, {"source", source}});
}

void AddOnce(std::vector<std::string>* list, const std::string& s) {
  if (std::find(list->begin(), list->end(), s) == list->end()) list->push_back(s);
}

}  // namespace

void UsePreflightStep(const PreflightInputs& pf, const PreflightVerdict& verdict, const PlanSpec& spec, GpuStep* step,
                      json* assumptions) {
  const std::optional<double> precision_step = MeasuredPrecisionStepS(pf, spec.model.precision);
  step->step_s = precision_step ? *precision_step : *pf.step_time_s;
  step->status = verdict.gpu_figures_measured ? "measured" : "assumed";
  step->source = precision_step
                     ? fmt::format("preflight {} (GPU step in {}, its precision phase)", pf.path, spec.model.precision)
                     : fmt::format("preflight {} (GPU step, measured on a GPU)", pf.path);
  if (!verdict.gpu_figures_measured) step->source += "; not a measurement of this plan: " + verdict.why_not_measured;
  if (precision_step) {
    AddPilotRow(assumptions, "precision_step_time_s", fmt::format("{:.6g}", *precision_step), "measured",
                fmt::format("preflight {}: {} step of its precision phase (the plan's precision); the main steps' "
                            "compute_s was {:.6g}",
                            pf.path, spec.model.precision, *pf.step_time_s));
  } else if (!pf.precision_low.empty()) {
    AddPilotRow(assumptions, "precision_step_time_s", "not used", "input",
                fmt::format("preflight {} measured fp32 and {}, the plan runs {}: the main steps' compute_s is used",
                            pf.path, pf.precision_low, spec.model.precision));
  }
}

PilotShape PreparePilotShape(const PlanSpec& spec, const PreflightInputs* pf, bool preflight_gpu,
                             std::map<std::string, GpuStep>* steps, json* assumptions) {
  PilotShape shape;
  const SequenceSpec& seq = spec.sequence;
  const bool step_from_preflight = preflight_gpu && pf->step_time_s;
  const bool memory_from_preflight = preflight_gpu && pf->peak_memory_bytes;
  if (seq.length > 0) {
    AddPilotRow(assumptions, "sequence.length", fmt::format("{:g}", seq.length), "input", "plan file");
    const double scenario_length = seq.measured_length > 0 ? seq.measured_length : seq.length;
    const double pilot_length = pf != nullptr && pf->sequence_length ? *pf->sequence_length : 0;
    for (auto& [gpu, step] : *steps) {
      const bool from_preflight = step_from_preflight && gpu == spec.measured_on;
      const double from = from_preflight ? pilot_length : scenario_length;
      const SequenceScaling s = ScaleSequence(seq, from, preflight_gpu ? pf : nullptr);  // a CPU time share is no GPU's
      if (from <= 0) {
        AddPilotRow(assumptions, "sequence_scaling[" + gpu + "]", "none", "assumed",
                    "the pilot's sequence length is not recorded: its step time is taken as the plan's");
        continue;
      }
      if (!s.applies()) continue;
      step.step_s *= s.step_factor;
      step.source += "; " + s.Describe();
      if (s.share_time.status != "measured") {
        step.status = "assumed";
        AddOnce(&step.warnings, fmt::format("extrapolating the step from {:g} to {:g} tokens with an {} attention share",
                                            from, seq.length, s.share_time.status));
      }
      AddPilotRow(assumptions, "sequence_scaling[" + gpu + "]", fmt::format("x{:.4g}", s.step_factor),
                  s.share_time.status, s.Describe());
    }
    const double memory_from = memory_from_preflight ? pilot_length : scenario_length;
    const SequenceScaling m = ScaleSequence(seq, memory_from, pf);
    if (m.applies()) {
      shape.activation_factor = m.memory_factor;
      shape.activation_share_measured = m.share_memory.status == "measured";
      shape.activation_why = fmt::format("{:g} -> {:g} tokens, attention share {:.3g} ({})", m.from_length,
                                         m.to_length, m.share_memory.value, m.share_memory.status);
      AddPilotRow(assumptions, "sequence_scaling.activation_memory", fmt::format("x{:.4g}", m.memory_factor),
                  m.share_memory.status, m.Describe());
    }
  }
  const ActivationCheckpointingSpec& ac = spec.activation_checkpointing;
  shape.checkpointing_use = ac.use;
  shape.checkpointing = CheckpointingCostOf(ac, pf, preflight_gpu ? pf : nullptr);
  if (ac.use != "off") {
    const CheckpointingCost& c = shape.checkpointing;
    AddPilotRow(assumptions, "activation_checkpointing", ac.use, "input",
                ac.use == "on" ? "plan file: every candidate"
                               : "plan file: only candidates that do not fit in memory without it");
    AddPilotRow(assumptions, "activation_checkpointing.memory_saved_fraction",
                fmt::format("{:.4g}", c.memory_saved_fraction.value), c.memory_saved_fraction.status,
                c.memory_saved_fraction.source);
    AddPilotRow(assumptions, "activation_checkpointing.recompute_fraction",
                fmt::format("{:.4g}", c.recompute_fraction.value), c.recompute_fraction.status,
                c.recompute_fraction.source);
  }
  return shape;
}

void ApplyPilotShape(const PilotShape& shape, const models::Accelerator& gpu, const PreflightInputs* pf,
                     CandidateRow* row) {
  if (shape.activation_factor != 1) {
    row->memory = WithActivationFactor(row->memory, shape.activation_factor, shape.activation_why);
    if (!shape.activation_share_measured) row->memory.measured = false;
  }
  if (shape.gpu_figures_overridden) row->memory.measured = false;  // a peak of another configuration
  const std::string& use = shape.checkpointing_use;
  if (use == "on" || (use == "auto" && !row->memory.fits)) {
    const MemoryFit with = WithActivationCheckpointing(row->memory, shape.checkpointing);
    if (use == "auto" && !with.fits) {
      row->memory.breakdown += fmt::format("; does not fit with activation checkpointing either: {:.1f} GB",
                                           with.total_bytes / 1e9);
    } else {
      const CheckpointingCost& c = shape.checkpointing;
      if (use == "auto") {
        AddOnce(&row->warnings,
                fmt::format("fits only with activation checkpointing: {:.1f} GB without, {:.1f} GB with ({:.1f} GB "
                            "usable); its recompute adds {:.0f}% to the step ({})",
                            row->memory.total_bytes / 1e9, with.total_bytes / 1e9, with.usable_bytes / 1e9,
                            100 * c.recompute_fraction.value, c.recompute_fraction.status));
      }
      row->memory = with;
      row->activation_checkpointing = true;
      row->step_time_s *= 1 + c.recompute_fraction.value;
      row->step_time_source += fmt::format("; x{:.3f} for the recompute of activation checkpointing ({})",
                                           1 + c.recompute_fraction.value, c.recompute_fraction.status);
      if (c.recompute_fraction.status == "assumed" || c.memory_saved_fraction.status == "assumed") {
        AddOnce(&row->assumed, "activation_checkpointing");
      }
    }
  }
  const std::string need = RequiredStack(gpu, pf);
  if (!need.empty()) {
    AddOnce(&row->needs, need);
    AddOnce(&row->warnings, need);
    AddOnce(&row->assumed, "rocm_stack");
  }
}

}  // namespace simreplay::plan
