// Fuzz target: the validation experiment spec (docs/validation-format.md).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_input.h"
#include "validation/experiment_spec.h"

using simreplay::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = "spec.json";
  auto spec = simreplay::validation::ParseExperimentSpec(std::string(reinterpret_cast<const char*>(data), size), path);
  if (!spec.ok()) {
    Require(spec.status().message().rfind(path + ":", 0) == 0, "error without FILE:LINE: " + spec.status().message());
  }
  return 0;
}
