// The observed findings beyond the loop breakdown and the stage table, as diagnosis.json fields and as
// terminal lines (docs/advice.md: "observed" keys). Each finding carries its provenance (`from`).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "advise/observations.h"

namespace simreplay::advise {

nlohmann::json StageJson(const StageDistribution& s);
nlohmann::json ProvenanceJson(const Provenance& p);

// The keys this module adds to diagnosis.json's `observed` object, merged into `observed`.
void AddObservedFindingsJson(const Observations& o, nlohmann::json* observed);

// One line per finding, in words with its numbers and records ("  worker CPU: ..."), for the terminal.
std::vector<std::string> ObservedFindingLines(const Observations& o);

}  // namespace simreplay::advise
