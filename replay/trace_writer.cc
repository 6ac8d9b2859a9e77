#include "replay/trace_writer.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "common/atomic_file.h"

namespace simreplay::replay {

struct TraceWriter::Impl {
  explicit Impl(const std::string& path) : file(path) {}
  AtomicFile file;
  gzFile out = nullptr;
  int64_t records = 0;
  bool closed = false;

  Status WriteLine(const nlohmann::json& j) {
    std::string line = j.dump();
    line.push_back('\n');
    if (gzwrite(out, line.data(), static_cast<unsigned>(line.size())) != static_cast<int>(line.size())) {
      int err = 0;
      return Status::IoError(file.path() + ": write failed: " + gzerror(out, &err));
    }
    return Status::Ok();
  }
};

TraceWriter::TraceWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TraceWriter::~TraceWriter() {
  if (impl_ && impl_->out != nullptr) gzclose(impl_->out);
}

Result<std::unique_ptr<TraceWriter>> TraceWriter::Create(const std::string& path, const TraceHeader& header) {
  auto impl = std::make_unique<Impl>(path);
  // "wT" writes plain text through the same gz* calls.
  const char* mode = path.ends_with(".gz") ? "wb6" : "wT";
  impl->out = gzopen(impl->file.temp_path().c_str(), mode);
  if (impl->out == nullptr) return Status::IoError(path + ": cannot create: " + std::strerror(errno));
  nlohmann::json head = {{"type", "header"}, {"schema", kTraceSchema}, {"manifest", header.manifest}};
  Status s = impl->WriteLine(head);
  if (!s.ok()) return s;
  return std::unique_ptr<TraceWriter>(new TraceWriter(std::move(impl)));
}

Status TraceWriter::Write(const TraceRecord& record) {
  ++impl_->records;
  return impl_->WriteLine(ToJson(record));
}

Status TraceWriter::Close() {
  if (impl_->closed) return Status::Ok();
  SIMREPLAY_RETURN_IF_ERROR(impl_->WriteLine({{"type", "footer"}, {"records", impl_->records}}));
  int rc = gzclose(impl_->out);
  impl_->out = nullptr;
  if (rc != Z_OK) return Status::IoError(impl_->file.path() + ": close failed");
  impl_->closed = true;
  return impl_->file.Commit();
}

}  // namespace simreplay::replay
