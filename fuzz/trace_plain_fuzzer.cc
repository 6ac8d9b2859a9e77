// Fuzz target: the trace reader on a plain (uncompressed) trace, line by line to the end or the first
// error. Properties beyond "no crash": errors name the file, and every record read serialises back to
// a line that parses again (the writer and the reader agree).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_input.h"
#include "fuzz/trace_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = simreplay::fuzz::ScratchPath(".jsonl");
  simreplay::fuzz::WriteFileOrDie(path, data, size);
  simreplay::fuzz::ReadWholeTrace(path);
  return 0;
}
