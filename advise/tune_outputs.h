// What `simreplay tune` writes: tune.json (schema simreplay.tune/1, docs/advice.md), a terminal
// summary, and the experiment matrix for the user's own job: a single-factor A/B (or suite) spec in
// simreplay.experiment/1 (docs/validation-format.md) that `simreplay validate` runs with the user's
// command, with the rollout and rollback criteria for adopting the change.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "advise/tuner.h"

namespace simreplay::advise {

inline constexpr const char* kTuneSchema = "simreplay.tune/1";

struct ExperimentRequest {
  std::vector<std::string> command;  // the user's command, argv, with {placeholders}; empty = no spec
  int batch_size = 1;
  int64_t steps = 60;
  uint64_t seed = 0;
  double memory_limit_bytes = 0;  // 0 = unknown
};

nlohmann::json TuneJson(const std::string& scenario_path, const TuneResult& r, const TuneOptions& o);
std::string TuneText(const TuneResult& r);
// The factors the best configuration changes, as experiment-spec factor names and values.
nlohmann::json ChangedFactors(const TuneResult& r);
// REQUIRES: !request.command.empty(). "ab" when one factor changes, else "suite" with one case per factor.
nlohmann::json ExperimentSpec(const std::string& scenario_path, const TuneResult& r, const ExperimentRequest& request);

// Splits a command template on blanks, honouring single and double quotes. Fails on an unclosed quote.
Result<std::vector<std::string>> SplitCommand(const std::string& text);

}  // namespace simreplay::advise
