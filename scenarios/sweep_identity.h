// What makes two sweep points comparable: the same sweep definition (the scenario file's JSON, sweep
// axes included), the same bytes in every input file the points read (models, traces) and the same
// simreplay version. Its SHA-256 goes into every stored point (scenarios/point_store.h), so points
// simulated from different scenarios, or from inputs that changed in between, are never merged.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "scenarios/scenario.h"

namespace simreplay::scenarios {

struct SweepIdentity {
  std::string sha256;         // 64 hex digits
  size_t point_count = 0;     // points in the whole sweep (all shards)
  std::string scenario_file;  // as given on the command line; results.json repeats it
};

// The version string hashed into every identity (the project version, from CMake).
const char* SimreplayVersion();

// The files `points` read, in first-use order without repeats: each point's model, and its trace, or
// the trace its model names (resolved against the model's directory).
Result<std::vector<std::string>> SweepInputFiles(const std::vector<SweepPoint>& points);

// `definition` is what the points were expanded from (a scenario's JSON; a plan can pass its own).
// Hashes "simreplay.sweep-identity/1", the version, definition.dump() and the SHA-256 of each input
// file's bytes in order (paths are not hashed, so a sweep directory can move between machines).
Result<SweepIdentity> IdentifySweep(const nlohmann::json& definition, const std::string& scenario_file,
                                    const std::vector<SweepPoint>& points);

}  // namespace simreplay::scenarios
