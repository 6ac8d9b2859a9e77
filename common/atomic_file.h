// Writes a file so that readers never see it half-written: content goes to "PATH.tmp.PID" and is
// renamed over PATH only when Commit() succeeds. An AtomicFile destroyed before Commit() removes the
// temporary, leaving any previous PATH untouched.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace simreplay {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::string& temp_path() const { return temp_path_; }
  const std::string& path() const { return path_; }
  // Renames the temporary over the final path. The temporary must have been written and closed.
  Status Commit();

 private:
  std::string path_;
  std::string temp_path_;
  bool committed_ = false;
};

// Writes `content` to `path` atomically.
Status WriteFileAtomically(const std::string& path, std::string_view content);

}  // namespace simreplay
