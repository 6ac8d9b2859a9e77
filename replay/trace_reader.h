// Streaming reader of trace format v1 (docs/trace-format.md). Reads one line at a time from a plain or
// gzip-compressed file, never the whole file. Validation is strict: the first problem ends the read
// with a Status whose message is "FILE:LINE: what was expected, what was found".
//
// Usage:
//   auto reader = TraceReader::Open(path);
//   if (!reader.ok()) return reader.status();
//   TraceRecord record;
//   while (true) {
//     auto more = reader->Next(&record);
//     if (!more.ok()) return more.status();
//     if (!*more) break;
//     ...
//   }
// Not thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "replay/trace_records.h"

namespace simreplay::replay {

class LineSource;  // plain or gzip file, one line at a time

class TraceReader {
 public:
  // Opens `path` and reads and validates its header.
  static Result<std::unique_ptr<TraceReader>> Open(const std::string& path);
  ~TraceReader();

  const TraceHeader& header() const { return header_; }
  const std::string& path() const { return path_; }

  // Reads the next record into *record. Returns true when one was read, false at the end of the file.
  // Unknown record types are skipped (one warning per type); a truncated final line is dropped with a
  // warning.
  Result<bool> Next(TraceRecord* record);

  // Warnings collected so far ("FILE:LINE: ..."), in order.
  const std::vector<std::string>& warnings() const { return warnings_; }
  int64_t line_number() const { return line_number_; }

 private:
  TraceReader(std::string path, std::unique_ptr<LineSource> source);
  Status ReadHeader();

  std::string path_;
  std::unique_ptr<LineSource> source_;
  TraceHeader header_;
  int64_t line_number_ = 0;
  std::vector<std::string> warnings_;
  std::vector<std::string> warned_types_;
};

// Parses one record line (already known not to be the header). Exposed for tests and the importer.
// `where` prefixes error messages ("FILE:LINE").
Result<TraceRecord> ParseRecordLine(const std::string& line, const std::string& where);

}  // namespace simreplay::replay
