// Writer of trace format v1. Writes to a temporary beside the target and renames it into place on
// Close(), so a failed writer never leaves a half-written trace under the final name. A path ending in
// ".gz" is gzip-compressed.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "replay/trace_records.h"

namespace simreplay::replay {

class TraceWriter {
 public:
  // Creates the temporary and writes the header line.
  static Result<std::unique_ptr<TraceWriter>> Create(const std::string& path, const TraceHeader& header);
  ~TraceWriter();  // without Close(): removes the temporary

  Status Write(const TraceRecord& record);
  // Writes a footer with the record count, flushes and renames into place.
  Status Close();

 private:
  struct Impl;
  explicit TraceWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace simreplay::replay
