// Validation combines the repetitions of a case (medians) and compares cases (a model calibrated on
// one case predicts another): both need runs of one software stack on one machine. This checks the
// trace manifests of the measured runs (docs/manifest.md, "What matters"): repetitions of a case
// against its first run in everything that matters (replay::ManifestScope::kRuns), each case's first
// run against the first case's without the data revisions (kAcrossCases: cases read other data on
// purpose). `simreplay validate` refuses differences unless --allow-manifest-diff.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "validation/measurement.h"
#include "validation/runner.h"

namespace simreplay::validation {

// One sentence per run whose manifest differs in what matters ("run A vs run B: versions.torch: x -> y").
// Runs without a trace manifest are not compared.
std::vector<std::string> RunManifestDifferences(const std::vector<RunRecord>& runs,
                                                const std::map<std::string, TraceFacts>& facts);

}  // namespace simreplay::validation
