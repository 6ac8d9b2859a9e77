#include "scenarios/point_store.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "common/json_fields.h"

namespace simreplay::scenarios {

namespace fs = std::filesystem;

namespace {

// Writes `content` to a temporary beside `path`, fsyncs it and renames it over `path`: after a crash
// of this process or of the machine, `path` holds the old file, nothing, or the whole new file. The
// temporary's name carries host and pid because shards on different hosts may share the directory.
Status WriteDurably(const std::string& path, const std::string& content) {
  char host[256] = "host";
  ::gethostname(host, sizeof(host) - 1);
  const std::string temp = fmt::format("{}.tmp.{}.{}", path, host, ::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError(path + ": cannot open for writing: " + std::strerror(errno));
  auto fail = [&](const char* what) {
    Status s = Status::IoError(fmt::format("{}: {}: {}", path, what, std::strerror(errno)));
    ::close(fd);
    ::unlink(temp.c_str());
    return s;
  };
  size_t written = 0;
  while (written < content.size()) {
    ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("write failed");
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("fsync failed");
  if (::close(fd) != 0) {
    Status s = Status::IoError(path + ": close failed: " + std::strerror(errno));
    ::unlink(temp.c_str());
    return s;
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    Status s = Status::IoError(path + ": cannot rename temporary into place: " + std::strerror(errno));
    ::unlink(temp.c_str());
    return s;
  }
  return Status::Ok();
}

nlohmann::json AxesJson(const std::vector<std::pair<std::string, nlohmann::json>>& axes) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [name, value] : axes) list.push_back({name, value});
  return list;
}

// The stored files of one kind (points/ or failed/), sorted by name; temporaries are skipped.
Result<std::vector<fs::path>> ListJsonFiles(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return Status::IoError(dir.string() + ": cannot list: " + ec.message());
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 5 && name.ends_with(".json") && name.find(".tmp.") == std::string::npos) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// One point or failure file, validated.
struct StoredFile {
  std::string path;
  std::string sha256;
  size_t index = 0;
  size_t count = 0;
  std::string scenario_file;
  SweepResult point;       // points only
  std::string reason;      // failures only
  nlohmann::json content;  // as read, to compare duplicates
};

Result<StoredFile> ReadStoredFile(const fs::path& path, const char* schema) {
  auto json = ReadJsonFile(path.string());
  if (!json.ok()) return Status::Corruption(json.status().message());
  const std::string where = path.string() + ":1";
  if (!json->is_object()) return Status::Corruption(where + ": expected a JSON object");
  JsonFields f(*json, where);
  StoredFile file;
  file.path = path.string();
  std::string found_schema;
  int64_t index = 0, count = 0;
  Status s = f.GetString("schema", &found_schema);
  if (s.ok() && found_schema != schema) {
    s = f.Error(fmt::format("expected schema \"{}\", found \"{}\"", schema, found_schema));
  }
  if (s.ok()) s = f.GetString("sweep_sha256", &file.sha256);
  if (s.ok()) s = f.GetInt("point_index", &index);
  if (s.ok()) s = f.GetInt("point_count", &count);
  if (s.ok()) s = f.GetString("scenario_file", &file.scenario_file);
  if (s.ok() && (count < 1 || index >= count)) {
    s = f.Error(fmt::format("expected 0 <= point_index < point_count, found {} and {}", index, count));
  }
  if (s.ok() && path.filename().string() != PointFileName(static_cast<size_t>(index))) {
    s = f.Error(
        fmt::format("expected the file of point {} to be named {}", index, PointFileName(static_cast<size_t>(index))));
  }
  if (!s.ok()) return Status::Corruption(s.message());
  file.index = static_cast<size_t>(index);
  file.count = static_cast<size_t>(count);
  const auto& axes = (*json)["axes"];
  if (!axes.is_array()) return Status::Corruption(where + ": expected \"axes\": [[name, value], ...]");
  for (const auto& axis : axes) {
    if (!axis.is_array() || axis.size() != 2 || !axis[0].is_string()) {
      return Status::Corruption(where + ": expected each axis as [name, value], found " + axis.dump());
    }
    file.point.axes.emplace_back(axis[0].get<std::string>(), axis[1]);
  }
  if (std::string(schema) == kPointSchema) {
    if (!json->contains("result") || !(*json)["result"].is_object() || !(*json)["result"].contains("metrics")) {
      return Status::Corruption(where + ": expected \"result\": a result.json object with \"metrics\"");
    }
    file.point.result = (*json)["result"];
  } else {
    const auto& error = (*json)["error"];
    if (!error.is_object() || !error.contains("message") || !error["message"].is_string()) {
      return Status::Corruption(where + ": expected \"error\": {\"message\": ...}");
    }
    file.reason = error["message"].get<std::string>();
  }
  file.content = std::move(*json);
  return file;
}

Status MixedSweeps(const std::string& path, const std::string& sha256, const std::string& other_path,
                   const std::string& other_sha256) {
  return Status::InvalidArgument(fmt::format(
      "{}: expected a point of the same sweep as {} (scenario hash {}), found scenario hash {}: the points come "
      "from different scenarios or input files; merge only one sweep's directories",
      path, other_path, other_sha256.substr(0, 16), sha256.substr(0, 16)));
}

const char* ErrorKind(Status::Code code) {
  switch (code) {
    case Status::Code::kInvalidArgument:
    case Status::Code::kNotFound:
    case Status::Code::kCorruption:
      return "bad_input";
    case Status::Code::kIoError:
      return "io_error";
    default:
      return "failed";
  }
}

}  // namespace

Result<ShardSpec> ParseShardSpec(const std::string& text) {
  const auto slash = text.find('/');
  auto bad = [&text]() {
    return Status::InvalidArgument("--shard: expected I/N with 0 <= I < N (e.g. 3/16), found \"" + text + "\"");
  };
  if (slash == std::string::npos || slash == 0 || slash + 1 == text.size()) return bad();
  const std::string i_text = text.substr(0, slash), n_text = text.substr(slash + 1);
  auto digits = [](const std::string& s) {
    return s.size() <= 9 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!digits(i_text) || !digits(n_text)) return bad();
  ShardSpec shard{std::stoul(i_text), std::stoul(n_text)};
  if (shard.count < 1 || shard.index >= shard.count) return bad();
  return shard;
}

std::string AxesLabel(const std::vector<std::pair<std::string, nlohmann::json>>& axes) {
  std::string label;
  for (const auto& [name, value] : axes) label += (label.empty() ? "" : ", ") + name + "=" + value.dump();
  return label;
}

std::string PointFileName(size_t index) { return fmt::format("{:06d}.json", index); }

std::string PointStore::PointPath(size_t index) const { return dir_ + "/points/" + PointFileName(index); }
std::string PointStore::FailurePath(size_t index) const { return dir_ + "/failed/" + PointFileName(index); }

Status PointStore::Prepare() const {
  for (const char* sub : {"points", "failed"}) {
    std::error_code ec;
    fs::create_directories(fs::path(dir_) / sub, ec);
    if (ec) return Status::IoError(dir_ + "/" + sub + ": cannot create directory: " + ec.message());
  }
  return Status::Ok();
}

Status PointStore::Clear() const {
  for (const char* sub : {"points", "failed"}) {
    std::error_code ec;
    fs::directory_iterator it(fs::path(dir_) / sub, ec);
    if (ec) continue;  // nothing stored yet
    for (const auto& entry : it) {
      if (!entry.is_regular_file()) continue;
      if (!fs::remove(entry.path(), ec) && ec) {
        return Status::IoError(entry.path().string() + ": cannot remove: " + ec.message());
      }
    }
  }
  return Status::Ok();
}

size_t PointStore::RemoveStaleTemporaries() const {
  char host[256] = "host";
  ::gethostname(host, sizeof(host) - 1);
  const std::string mine = std::string(".tmp.") + host + ".";
  size_t removed = 0;
  for (const char* sub : {"points", "failed"}) {
    std::error_code ec;
    fs::directory_iterator it(fs::path(dir_) / sub, ec);
    if (ec) continue;
    for (const auto& entry : it) {
      const std::string name = entry.path().filename().string();
      const size_t at = name.rfind(mine);
      if (at == std::string::npos) continue;
      const std::string pid_text = name.substr(at + mine.size());
      if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
      const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
      if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive, or unknown
      if (fs::remove(entry.path(), ec)) ++removed;
    }
  }
  return removed;
}

Result<std::vector<bool>> PointStore::Finished() const {
  std::vector<bool> finished(identity_.point_count, false);
  if (!fs::exists(fs::path(dir_) / "points")) return finished;
  auto files = ListJsonFiles(fs::path(dir_) / "points");
  if (!files.ok()) return files.status();
  for (const auto& path : *files) {
    auto file = ReadStoredFile(path, kPointSchema);
    if (!file.ok()) return file.status();
    if (file->sha256 != identity_.sha256 || file->count != identity_.point_count) {
      return Status::InvalidArgument(fmt::format(
          "{}: expected a point of this sweep (scenario hash {}), found scenario hash {}: the directory holds "
          "another sweep's points (a changed scenario or input file); use another --out or start afresh "
          "without --resume",
          file->path, identity_.sha256.substr(0, 16), file->sha256.substr(0, 16)));
    }
    finished[file->index] = true;
  }
  return finished;
}

Status PointStore::Save(size_t index, const SweepResult& point) const {
  nlohmann::json out = {{"schema", kPointSchema},
                        {"sweep_sha256", identity_.sha256},
                        {"point_index", index},
                        {"point_count", identity_.point_count},
                        {"scenario_file", identity_.scenario_file},
                        {"simreplay_version", SimreplayVersion()},
                        {"axes", AxesJson(point.axes)},
                        {"result", point.result}};
  SIMREPLAY_RETURN_IF_ERROR(WriteDurably(PointPath(index), out.dump(1) + "\n"));
  std::error_code ec;
  fs::remove(FailurePath(index), ec);  // the point is done: an older failure no longer applies
  return Status::Ok();
}

Status PointStore::SaveFailure(size_t index, const std::vector<std::pair<std::string, nlohmann::json>>& axes,
                               const Status& why) const {
  nlohmann::json out = {{"schema", kPointFailureSchema},
                        {"sweep_sha256", identity_.sha256},
                        {"point_index", index},
                        {"point_count", identity_.point_count},
                        {"scenario_file", identity_.scenario_file},
                        {"simreplay_version", SimreplayVersion()},
                        {"axes", AxesJson(axes)},
                        {"error", {{"kind", ErrorKind(why.code())}, {"message", why.message()}}}};
  return WriteDurably(FailurePath(index), out.dump(1) + "\n");
}

std::vector<size_t> LoadedSweep::Missing() const {
  std::vector<size_t> missing;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!points[i]) missing.push_back(i);
  }
  return missing;
}

Result<LoadedSweep> LoadSweepDirectories(const std::vector<std::string>& dirs) {
  LoadedSweep sweep;
  std::vector<std::string> source;  // file each point came from
  std::string reference_path;
  size_t lowest_index = SIZE_MAX;
  for (const auto& dir : dirs) {
    const fs::path points_dir = fs::path(dir) / "points";
    if (!fs::is_directory(points_dir)) {
      return Status::NotFound(dir + ": expected a sweep directory with points/ (written by what-if), found none");
    }
    auto files = ListJsonFiles(points_dir);
    if (!files.ok()) return files.status();
    for (const auto& path : *files) {
      auto file = ReadStoredFile(path, kPointSchema);
      if (!file.ok()) return file.status();
      if (reference_path.empty()) {
        reference_path = file->path;
        sweep.identity = {file->sha256, file->count, file->scenario_file};
        sweep.points.assign(file->count, std::nullopt);
        source.assign(file->count, "");
      } else if (file->sha256 != sweep.identity.sha256 || file->count != sweep.identity.point_count) {
        return MixedSweeps(file->path, file->sha256, reference_path, sweep.identity.sha256);
      }
      auto& slot = sweep.points[file->index];
      if (slot) {
        // The same point twice (a shard run twice, or two copies of a directory): it must agree.
        if (slot->result != file->point.result || slot->axes != file->point.axes) {
          return Status::InvalidArgument(fmt::format(
              "{}: expected the same result as {} for point {} (same scenario hash), found a different one: "
              "were the inputs or the simreplay binary changed between runs?",
              file->path, source[file->index], file->index));
        }
        continue;
      }
      slot = std::move(file->point);
      source[file->index] = file->path;
      if (file->index < lowest_index) {
        lowest_index = file->index;
        sweep.identity.scenario_file = file->scenario_file;
      }
    }
  }
  if (reference_path.empty()) {
    std::string list;
    for (const auto& d : dirs) list += (list.empty() ? "" : ", ") + d;
    return Status::NotFound(list + ": expected finished points in points/, found none");
  }
  for (const auto& dir : dirs) {
    const fs::path failed_dir = fs::path(dir) / "failed";
    if (!fs::is_directory(failed_dir)) continue;
    auto files = ListJsonFiles(failed_dir);
    if (!files.ok()) return files.status();
    for (const auto& path : *files) {
      auto file = ReadStoredFile(path, kPointFailureSchema);
      // A failure record only explains a missing point; one that is unreadable or of another sweep
      // explains nothing and is left out.
      if (!file.ok() || file->sha256 != sweep.identity.sha256 || file->count != sweep.identity.point_count) continue;
      if (sweep.points[file->index]) continue;
      const std::string label = AxesLabel(file->point.axes);
      sweep.failure_reasons[file->index] = (label.empty() ? "" : "(" + label + ") ") + "failed: " + file->reason;
    }
  }
  return sweep;
}

std::string DescribeMissing(const LoadedSweep& sweep, size_t max_reasons) {
  const auto missing = sweep.Missing();
  if (missing.empty()) return "";
  std::string ranges;
  for (size_t i = 0; i < missing.size();) {
    size_t j = i;
    while (j + 1 < missing.size() && missing[j + 1] == missing[j] + 1) ++j;
    ranges += (ranges.empty() ? "" : ", ") +
              (j == i ? std::to_string(missing[i]) : fmt::format("{}-{}", missing[i], missing[j]));
    i = j + 1;
  }
  std::string out = fmt::format("{} of {} points are missing: {}", missing.size(), sweep.points.size(), ranges);
  size_t shown = 0;
  for (const auto& [index, reason] : sweep.failure_reasons) {
    if (shown++ == max_reasons) {
      out += fmt::format("\n  ... and {} more failed points (see failed/)", sweep.failure_reasons.size() - max_reasons);
      break;
    }
    out += fmt::format("\n  point {} {}", index, reason);
  }
  return out;
}

}  // namespace simreplay::scenarios
