// Fuzz target: a storage probe document (docs/probe-format.md) as the calibrator reads it.
#include <cstddef>
#include <cstdint>

#include "calibrate/storage_probe.h"
#include "fuzz/fuzz_input.h"

using simreplay::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = simreplay::fuzz::ScratchPath(".probe.json");
  simreplay::fuzz::WriteFileOrDie(path, data, size);
  auto doc = simreplay::calibrate::ReadProbeFile(path);
  if (!doc.ok()) {
    Require(doc.status().message().rfind(path, 0) == 0, "error without the file name: " + doc.status().message());
    return 0;
  }
  for (const auto* fit : {&doc->sequential, &doc->random, &doc->page_cache}) {
    if (!*fit) continue;
    Require((*fit)->latency_s >= 0, "negative latency accepted");
    if ((*fit)->max_useful_concurrency) {
      Require(*(*fit)->max_useful_concurrency >= 1 && *(*fit)->max_useful_concurrency <= 64, "concurrency out of range");
    }
  }
  return 0;
}
