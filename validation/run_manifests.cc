#include "validation/run_manifests.h"

#include <fmt/format.h>

#include "replay/manifest.h"

namespace simreplay::validation {

std::vector<std::string> RunManifestDifferences(const std::vector<RunRecord>& runs,
                                                const std::map<std::string, TraceFacts>& facts) {
  std::vector<std::string> out;
  std::map<std::string, const RunRecord*> first_of_case;
  const RunRecord* first_case = nullptr;
  auto manifest_of = [&](const RunRecord& r) -> const nlohmann::json* {
    auto it = facts.find(r.plan.id);
    if (it == facts.end() || !it->second.manifest.is_object() || it->second.manifest.empty()) return nullptr;
    return &it->second.manifest;
  };
  auto compare = [&](const RunRecord& a, const RunRecord& b, replay::ManifestScope scope) {
    const replay::ManifestDiff diff = replay::DiffManifests(*manifest_of(a), *manifest_of(b), scope);
    if (diff.matters()) out.push_back(fmt::format("run {} vs {}: {}", a.plan.id, b.plan.id, diff.MattersSummary()));
  };
  for (const auto& run : runs) {
    if (manifest_of(run) == nullptr) continue;
    auto [it, first] = first_of_case.emplace(run.plan.case_name, &run);
    if (!first) {
      compare(*it->second, run, replay::ManifestScope::kRuns);
    } else if (first_case == nullptr) {
      first_case = &run;
    } else {
      compare(*first_case, run, replay::ManifestScope::kAcrossCases);
    }
  }
  return out;
}

}  // namespace simreplay::validation
