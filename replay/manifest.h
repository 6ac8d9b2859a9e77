// Typed lookups in a trace manifest (docs/trace-format.md, "header"): the manifest is free-form, so
// every lookup has a fallback for a missing section, key or a value of another type.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace simreplay::replay {

// manifest[section][key] as an int, or `fallback`.
int ManifestInt(const nlohmann::json& manifest, const char* section, const char* key, int fallback);
// manifest[section][key] when it is true; false otherwise.
bool ManifestBool(const nlohmann::json& manifest, const char* section, const char* key);
// manifest[section][key] as a number, or `fallback`.
double ManifestDouble(const nlohmann::json& manifest, const char* section, const char* key, double fallback);
// The storage container a trace was captured in: data.format ("files", "tar", "lmdb", "hdf5"),
// falling back to notes.format; "files" when neither is given.
std::string ContainerOfManifest(const nlohmann::json& manifest);

// ---- Comparing two runs' manifests (docs/manifest.md, "What matters") ----
// The same rule as `python3 -m simreplay_capture.diff_manifest`: manifests are flattened to dotted
// paths and compared value by value. A difference under a field that matters makes the runs'
// figures incomparable; the rest is informational; a field that matters but is recorded in only one
// manifest (an older writer) is unknown, never a difference.

struct ManifestDifference {
  std::string field;  // dotted path, e.g. "versions.torch", "packages.numpy"
  nlohmann::json a, b;  // null when absent on that side
  bool matters = false;
};

struct ManifestDiff {
  std::vector<ManifestDifference> differences;  // sorted: those that matter first, then by field
  std::vector<std::string> unknown;
  int matters_count = 0, info_count = 0;
  bool matters() const { return matters_count > 0; }
  // "versions.torch: 2.3.0 -> 2.4.1; packages.numpy: 1.26.4 -> 2.0.0" (those that matter, at most
  // `limit`, then "... and N more").
  std::string MattersSummary(size_t limit = 3) const;
};

// What a comparison counts as mattering (docs/manifest.md, "What matters"):
// - kRuns: the software stack, the model and data revisions, and the hardware. Repetitions of one
//   configuration (diff-manifest's default; validate's repetitions of one case).
// - kAcrossCases: the same without the data revisions: the cases of an A/B experiment read other
//   data on purpose (another format, another mix) but must share the software and the machine.
// - kSoftware: the software stack and the model revision only: a plan combines a preflight with a
//   capture from other hardware (the plan models the hardware) and maybe a sample of the data.
enum class ManifestScope { kRuns, kAcrossCases, kSoftware };

ManifestDiff DiffManifests(const nlohmann::json& a, const nlohmann::json& b, ManifestScope scope = ManifestScope::kRuns);

// The lines `simreplay diff-manifest` prints ("MATTERS f: a -> b", "info    ...", "unknown ...", verdict).
std::string ManifestDiffText(const ManifestDiff& diff, const std::string& a_name, const std::string& b_name);
nlohmann::json ManifestDiffJson(const ManifestDiff& diff, const std::string& a_name, const std::string& b_name);

// The manifest of a trace (.jsonl / .jsonl.gz: its header's), a preflight output (preflight.json or
// its directory: its "manifest"), or a bare manifest JSON file. Errors: "PATH: expected ..., found ...".
Result<nlohmann::json> LoadRunManifest(const std::string& path);

}  // namespace simreplay::replay
