#include "common/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace simreplay {

AtomicFile::AtomicFile(std::string path)
    : path_(std::move(path)), temp_path_(path_ + ".tmp." + std::to_string(::getpid())) {}

AtomicFile::~AtomicFile() {
  if (!committed_) std::remove(temp_path_.c_str());
}

Status AtomicFile::Commit() {
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    return Status::IoError(path_ + ": cannot rename temporary into place: " + std::strerror(errno));
  }
  committed_ = true;
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, std::string_view content) {
  AtomicFile file(path);
  {
    std::ofstream out(file.temp_path(), std::ios::binary | std::ios::trunc);
    if (!out) return Status::IoError(path + ": cannot open for writing: " + std::strerror(errno));
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) return Status::IoError(path + ": write failed: " + std::strerror(errno));
  }
  return file.Commit();
}

}  // namespace simreplay
