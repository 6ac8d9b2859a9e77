// Fuzz target: the model file loader. A model that loads must also survive its own serialisation:
// ModelToJson of it parses again to the same JSON (calibrate writes models that simulate reads).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_input.h"
#include "models/model_params.h"

using simreplay::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = simreplay::fuzz::ScratchPath(".model.json");
  simreplay::fuzz::WriteFileOrDie(path, data, size);
  auto model = simreplay::models::LoadModelFile(path);
  if (!model.ok()) {
    Require(model.status().message().rfind(path, 0) == 0, "error without the file name: " + model.status().message());
    return 0;
  }
  const nlohmann::json written = simreplay::models::ModelToJson(*model);
  auto again = simreplay::models::ParseModel(written, "roundtrip");
  Require(again.ok(), "ModelToJson output does not load: " + again.status().message());
  Require(simreplay::models::ModelToJson(*again) == written, "a model changes in a ModelToJson round trip");
  return 0;
}
