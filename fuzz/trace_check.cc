#include "fuzz/trace_check.h"

#include <variant>

#include "fuzz/fuzz_input.h"
#include "replay/trace_reader.h"

namespace simreplay::fuzz {

void ReadWholeTrace(const std::string& path) {
  auto reader = replay::TraceReader::Open(path);
  if (!reader.ok()) {
    Require(reader.status().message().rfind(path, 0) == 0, "error without the file name: " + reader.status().message());
    return;
  }
  replay::TraceRecord record;
  while (true) {
    auto more = (*reader)->Next(&record);
    if (!more.ok()) {
      Require(more.status().message().rfind(path + ":", 0) == 0, "error without FILE:LINE: " + more.status().message());
      return;
    }
    if (!*more) break;
    const std::string line = replay::ToJson(record).dump();
    if (!std::holds_alternative<replay::OtherRecord>(record)) {
      auto again = replay::ParseRecordLine(line, "roundtrip");
      Require(again.ok(), "a record read does not parse after ToJson: " + line + ": " + again.status().message());
      Require(replay::ToJson(*again).dump() == line, "a record changes in a ToJson round trip: " + line);
    }
  }
  for (const auto& w : (*reader)->warnings()) Require(w.rfind(path, 0) == 0, "warning without the file name: " + w);
}

}  // namespace simreplay::fuzz
