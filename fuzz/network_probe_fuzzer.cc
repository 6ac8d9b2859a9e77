// Fuzz target: the network probe document (probe-network.json, "simreplay.probe-network/1") as
// calibrate reads it (calibrate/network_fit.h). Built only when that parser is in the tree.
#include <cstddef>
#include <cstdint>

#include "calibrate/network_fit.h"
#include "fuzz/fuzz_input.h"

using simreplay::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = simreplay::fuzz::ScratchPath(".probe-network.json");
  simreplay::fuzz::WriteFileOrDie(path, data, size);
  auto probe = simreplay::calibrate::LoadNetworkProbe(path);
  if (!probe.ok()) {
    Require(probe.status().message().rfind(path, 0) == 0, "error without the file name: " + probe.status().message());
    return 0;
  }
  Require(probe->world_size > 0 && probe->nodes > 0, "accepted a probe without ranks or nodes");
  return 0;
}
