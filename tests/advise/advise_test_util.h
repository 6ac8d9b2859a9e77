// Scenarios for the advice tests: the bundled quickstart (a real capture: 2 workers, batch 8, 2 cores,
// emulated 20 ms step) with some keys replaced.
#pragma once

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "scenarios/scenario.h"

namespace simreplay::advise::testing {

inline std::string QuickstartDir() { return std::string(SIMREPLAY_SOURCE_DIR) + "/examples/quickstart"; }

// The quickstart scenario without its sweep, `patch` merged in (RFC 7386 merge patch).
inline scenarios::Scenario Quickstart(const nlohmann::json& patch = nlohmann::json::object()) {
  const std::string path = QuickstartDir() + "/scenario.json";
  auto json = scenarios::LoadScenarioJson(path);
  EXPECT_TRUE(json.ok()) << json.status().message();
  json->erase("sweep");
  json->merge_patch(patch);
  auto s = scenarios::ParseScenario(*json, path, QuickstartDir());
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

}  // namespace simreplay::advise::testing
