// One line at a time from a plain or gzip-compressed file (zlib's gz* reads both transparently,
// including concatenated gzip members). Used by TraceReader so traces are never loaded whole.
#pragma once

#include <zlib.h>

#include <memory>
#include <string>

#include "common/status.h"

namespace simreplay::replay {

class LineSource {
 public:
  static Result<std::unique_ptr<LineSource>> Open(const std::string& path);
  ~LineSource();

  // Reads the next line without its '\n'. Returns false at end of input. *had_newline tells whether the
  // line was terminated (a final line without one may be the mark of a killed writer). A gzip stream
  // that ends early yields the data decoded so far and then sets truncated().
  Result<bool> ReadLine(std::string* line, bool* had_newline);
  bool truncated() const { return truncated_; }

 private:
  LineSource(std::string path, gzFile file) : path_(std::move(path)), file_(file) {}
  std::string path_;
  gzFile file_;
  bool truncated_ = false;
};

}  // namespace simreplay::replay
