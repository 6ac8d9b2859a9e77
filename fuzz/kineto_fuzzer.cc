// Fuzz target: the Kineto (torch.profiler Chrome trace) importer. The input is one profiler file; its
// size's parity picks "derive the batch size" or --batch-size 4, so both paths run. A successful import
// is written and must read back through TraceReader without error (the importer's output is a trace).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_input.h"
#include "fuzz/trace_check.h"
#include "replay/kineto_importer.h"
#include "replay/trace_reader.h"

using simreplay::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string in_path = simreplay::fuzz::ScratchPath(".pt.trace.json");
  static const std::string out_path = simreplay::fuzz::ScratchPath(".jsonl");
  simreplay::fuzz::WriteFileOrDie(in_path, data, size);
  simreplay::replay::KinetoImportOptions options;
  options.input_paths = {in_path};
  options.batch_size = size % 2 == 0 ? 0 : 4;
  auto import = simreplay::replay::KinetoImporter::Convert(options);
  if (!import.ok()) {
    Require(import.status().message().rfind(in_path, 0) == 0,
            "error without the file name: " + import.status().message());
    return 0;
  }
  simreplay::Status written = simreplay::replay::KinetoImporter::Write(*import, out_path);
  Require(written.ok(), "an import that converted cannot be written: " + written.message());
  auto reader = simreplay::replay::TraceReader::Open(out_path);
  Require(reader.ok(), "the imported trace does not open: " + reader.status().message());
  simreplay::replay::TraceRecord record;
  while (true) {
    auto more = (*reader)->Next(&record);
    Require(more.ok(), "the imported trace does not read back: " + more.status().message());
    if (!*more) break;
  }
  Require((*reader)->warnings().empty(), "reading the imported trace back warns");
  return 0;
}
