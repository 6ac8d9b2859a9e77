// Fuzz target: the plan file (docs/plan-format.md) as `simreplay plan` reads it (plan/plan_spec.h).
// Properties beyond "no crash": an error names the file, and a plan that loads has candidates to try.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_input.h"
#include "plan/plan_spec.h"

using simreplay::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = simreplay::fuzz::ScratchPath(".plan.json");
  simreplay::fuzz::WriteFileOrDie(path, data, size);
  auto plan = simreplay::plan::LoadPlanFile(path);
  if (!plan.ok()) {
    Require(plan.status().message().rfind(path, 0) == 0, "error without the file name: " + plan.status().message());
    return 0;
  }
  Require(!plan->scenario_path.empty(), "accepted a plan without a scenario");
  return 0;
}
