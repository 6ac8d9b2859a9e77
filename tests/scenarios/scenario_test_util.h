// A minimal valid scenario and the error a variant of it gets, for the scenario parser's tests.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "scenarios/scenario.h"

namespace simreplay::scenarios::testing {

inline nlohmann::json Base() {
  return nlohmann::json::parse(R"({"trace":"t.jsonl.gz","loader":{"num_workers":2,"batch_size":8},
                                   "train":{"steps":10}})");
}

// "" when `j` parses, else the error message.
inline std::string ErrorOf(const nlohmann::json& j) {
  auto s = ParseScenario(j, "s.json", "/base");
  return s.ok() ? "" : s.status().message();
}

}  // namespace simreplay::scenarios::testing
