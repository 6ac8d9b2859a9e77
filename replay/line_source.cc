#include "replay/line_source.h"

#include <cerrno>
#include <cstring>
#include <memory>

namespace simreplay::replay {

Result<std::unique_ptr<LineSource>> LineSource::Open(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    return Status::NotFound(path + ": cannot open: " + std::strerror(errno ? errno : ENOENT));
  }
  gzbuffer(file, 1 << 17);
  return std::unique_ptr<LineSource>(new LineSource(path, file));
}

LineSource::~LineSource() { gzclose(file_); }

Result<bool> LineSource::ReadLine(std::string* line, bool* had_newline) {
  line->clear();
  *had_newline = false;
  char buffer[8192];
  while (true) {
    if (gzgets(file_, buffer, sizeof(buffer)) == nullptr) {
      int err = 0;
      const char* message = gzerror(file_, &err);
      if (err == Z_BUF_ERROR || err == Z_DATA_ERROR) {
        // Z_BUF_ERROR at the end: the gzip stream was cut off (killed writer). Keep what was decoded.
        truncated_ = true;
        if (err == Z_DATA_ERROR && line->empty()) {
          return Status::Corruption(path_ + ": corrupt gzip data: " + message);
        }
      } else if (err != Z_OK && err != Z_STREAM_END) {
        return Status::IoError(path_ + ": read error: " + message);
      }
      return !line->empty();
    }
    size_t n = std::strlen(buffer);
    if (n > 0 && buffer[n - 1] == '\n') {
      line->append(buffer, n - 1);
      *had_newline = true;
      return true;
    }
    line->append(buffer, n);
    if (line->size() > (64u << 20)) {
      return Status::Corruption(path_ + ": a line longer than 64 MiB: not a trace");
    }
  }
}

}  // namespace simreplay::replay
