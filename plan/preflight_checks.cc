#include "plan/preflight_checks.h"

#include <cmath>

#include <fmt/format.h>

#include "common/json_fields.h"
#include "replay/manifest.h"

namespace simreplay::plan {

namespace {

using nlohmann::json;

// "NVIDIA H100 80GB HBM3 (h100-sxm in the catalogue)" or "... (not in the catalogue)".
std::string DescribeDevice(const std::string& name, const models::AcceleratorCatalogue* catalogue) {
  const models::Accelerator* found = catalogue != nullptr ? catalogue->FindByDeviceName(name) : nullptr;
  return fmt::format("'{}' ({})", name, found != nullptr ? found->name + " in the catalogue" : "not in the catalogue");
}

void CheckAccelerator(const PreflightInputs& pf, const PlanShape& plan, PreflightCheck* out) {
  if (pf.device != "cuda" || plan.measured_on == nullptr) return;  // a CPU step is never used as a GPU's
  const models::Accelerator& want = *plan.measured_on;
  const std::string stack = pf.rocm ? "rocm" : "cuda";
  if (stack != want.software_stack) {
    out->accelerator_mismatch = true;
    out->mismatches.push_back(fmt::format(
        "accelerator: the pilot ran on a {} build of torch{}, the plan's measured_on {} is a {} accelerator", stack,
        pf.device_name.empty() ? "" : " on " + DescribeDevice(pf.device_name, plan.catalogue), want.name,
        want.software_stack));
    return;
  }
  if (pf.device_name.empty()) {
    out->unchecked.push_back(
        fmt::format("accelerator: the preflight records no device name (manifest.hardware.gpus), so it is not checked "
                    "that it ran on {}",
                    want.name));
    return;
  }
  if (!want.MatchesDeviceName(pf.device_name)) {
    out->accelerator_mismatch = true;
    out->mismatches.push_back(fmt::format("accelerator: the pilot ran on {}, the plan's measured_on is {} ({})",
                                          DescribeDevice(pf.device_name, plan.catalogue), want.name,
                                          want.description));
  }
}

}  // namespace

PreflightCheck CheckPreflightAgainstPlan(const PreflightInputs& pf, const PlanShape& plan) {
  PreflightCheck out;
  // Micro-batch: a step time and a peak are of one micro-batch size; a smaller pilot hides memory.
  if (!pf.micro_batch_samples) {
    out.unchecked.push_back("micro-batch: the preflight records no micro_batch_samples");
  } else if (plan.micro_batch_samples > 0 && *pf.micro_batch_samples != plan.micro_batch_samples) {
    out.mismatches.push_back(fmt::format(
        "micro-batch: the pilot ran {:g} samples per rank, the plan's scenario {} ({}: its step time and peak "
        "memory are not the plan's)",
        *pf.micro_batch_samples, plan.micro_batch_samples,
        *pf.micro_batch_samples < plan.micro_batch_samples ? "smaller" : "larger"));
  }
  // Sequence length: a shorter pilot hides the memory problem it is meant to find.
  if (plan.sequence_length > 0) {
    if (!pf.sequence_length) {
      out.mismatches.push_back(fmt::format(
          "sequence length: the pilot declares none (its entry's description.sequence_length), the plan's is {:g} "
          "tokens",
          plan.sequence_length));
    } else if (*pf.sequence_length < plan.sequence_length) {
      out.mismatches.push_back(fmt::format(
          "sequence length: the pilot ran {:g} tokens, shorter than the plan's {:g} (it hides the memory and attention "
          "time of the long run)",
          *pf.sequence_length, plan.sequence_length));
    }
  }
  // World size: the preflight's ranks share one node; a candidate node holds gpus_per_node of them.
  if (pf.world_size > plan.gpus_per_node) {
    out.mismatches.push_back(fmt::format(
        "world size: the pilot ran {} ranks on one node, more than the plan's {} GPUs per node", pf.world_size,
        plan.gpus_per_node));
  }
  CheckAccelerator(pf, plan, &out);
  return out;
}

Result<std::vector<std::pair<std::string, json>>> ScenarioCaptureManifests(const std::string& model_path,
                                                                           const std::string& trace_path) {
  std::vector<std::pair<std::string, json>> out;
  if (!model_path.empty()) {
    auto model = ReadJsonFile(model_path);
    if (!model.ok()) return model.status();
    const json provenance = model->is_object() ? model->value("provenance", json::object()) : json::object();
    const json traces = provenance.is_object() ? provenance.value("traces", json::array()) : json::array();
    if (traces.is_array()) {
      for (size_t i = 0; i < traces.size(); ++i) {
        if (!traces[i].is_object() || !traces[i].value("manifest", json()).is_object()) continue;
        out.emplace_back(fmt::format("{} (provenance.traces[{}])", model_path, i), traces[i]["manifest"]);
      }
    }
  }
  if (!trace_path.empty()) {
    auto manifest = replay::LoadRunManifest(trace_path);
    if (!manifest.ok()) return manifest.status();
    out.emplace_back(trace_path, *manifest);
  }
  return out;
}

std::vector<std::string> PreflightManifestDifferences(const PreflightInputs& pf,
                                                      const std::vector<std::pair<std::string, json>>& captures) {
  std::vector<std::string> out;
  if (!pf.manifest.is_object()) return out;
  for (const auto& [label, manifest] : captures) {
    const replay::ManifestDiff diff = replay::DiffManifests(pf.manifest, manifest, replay::ManifestScope::kSoftware);
    if (!diff.matters()) continue;
    out.push_back(fmt::format("the preflight's software differs from the capture {}: {}", label,
                              diff.MattersSummary()));
  }
  return out;
}

namespace {
std::string JoinSentences(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : "; ") + s;
  return out;
}
}  // namespace

Result<PreflightVerdict> JudgePreflight(const PreflightInputs& pf, const PlanShape& plan, const PreflightUse& use,
                                        const std::vector<std::pair<std::string, json>>& captures) {
  PreflightVerdict v;
  auto row = [&](const std::string& input, const std::string& value, const std::string& status,
                 const std::string& source) {
    v.assumptions.push_back({{"input", input}, {"value", value}, {"status", status}, {"source", source}});
  };
  const bool cuda = pf.device == "cuda";
  PreflightCheck check = CheckPreflightAgainstPlan(pf, plan);
  if (!cuda) {
    // A CPU step time and host memory are never used as a GPU's, so the pilot's shape cannot mislead
    // them: only the world size (it shapes the measured restart) is held against the plan.
    std::vector<std::string> kept;
    for (const auto& m : check.mismatches) {
      if (m.rfind("world size", 0) == 0) kept.push_back(m);
    }
    check.mismatches = kept;
    row("preflight.step_time_s", pf.step_time_s ? fmt::format("{:.6g}", *pf.step_time_s) : "none", "not used",
        fmt::format("{}: the preflight ran on the CPU; a CPU step time never replaces a GPU step time (the plan keeps "
                    "its own); its checkpoint and restart figures are used",
                    pf.path));
  }
  if (!check.mismatches.empty()) {
    if (!use.allow_mismatch) {
      return Status::InvalidArgument(fmt::format(
          "{}: the preflight does not match the plan: {} (run the pilot with the plan's settings, or pass "
          "--allow-preflight-mismatch to use it anyway; the override is recorded in plan.json)",
          pf.path, JoinSentences(check.mismatches)));
    }
    for (const auto& m : check.mismatches) row("preflight_check", m, "overridden", "--allow-preflight-mismatch");
  }
  for (const auto& u : check.unchecked) row("preflight_check", u, "unchecked", pf.path);
  const auto differences = PreflightManifestDifferences(pf, captures);
  if (!differences.empty()) {
    if (!use.allow_manifest_diff) {
      return Status::InvalidArgument(fmt::format(
          "{}: {} (simreplay diff-manifest --scope software shows every difference; pass --allow-manifest-diff to "
          "combine them anyway; the override is recorded in plan.json)",
          pf.path, JoinSentences(differences)));
    }
    for (const auto& d : differences) row("manifest_check", d, "overridden", "--allow-manifest-diff");
  } else if (!pf.manifest.is_object()) {
    row("manifest_check", "the preflight records no manifest", "unchecked", pf.path);
  }
  v.gpu_figures_used = cuda;
  v.gpu_figures_measured = cuda && check.mismatches.empty();
  if (cuda && !check.mismatches.empty()) {
    v.why_not_measured = "its pilot does not match the plan (overridden: " + JoinSentences(check.mismatches) + ")";
  }
  if (pf.rocm) {
    row("rocm_stack", pf.rocm_stack, "measured", pf.path + ": the preflight ran on a ROCm build of torch and passed");
  }
  return v;
}

std::string RequiredStack(const models::Accelerator& gpu, const PreflightInputs* pf) {
  if (gpu.software_stack != "rocm") return "";
  if (pf != nullptr && pf->rocm && pf->passed && pf->device == "cuda") return "";  // torch on ROCm reports "cuda"
  return fmt::format("requires a qualified ROCm stack: no ROCm preflight of this plan shows one (run the preflight "
                     "on {} with a ROCm build of torch; its manifest records the stack)",
                     gpu.name);
}

}  // namespace simreplay::plan
