// Fuzz target: the scenario loader with sweep expansion (every point is parsed and validated).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_input.h"
#include "scenarios/scenario.h"

using simreplay::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = simreplay::fuzz::ScratchPath(".scenario.json");
  simreplay::fuzz::WriteFileOrDie(path, data, size);
  auto json = simreplay::scenarios::LoadScenarioJson(path);
  if (!json.ok()) {
    Require(json.status().message().rfind(path + ":", 0) == 0, "error without FILE:LINE: " + json.status().message());
    return 0;
  }
  auto points = simreplay::scenarios::ExpandSweep(*json, path, simreplay::scenarios::DirectoryOf(path));
  if (!points.ok()) {
    Require(points.status().message().rfind(path, 0) == 0, "error without the file name: " + points.status().message());
    return 0;
  }
  Require(!points->empty(), "a valid scenario expands to no point");
  return 0;
}
