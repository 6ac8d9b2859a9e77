#include "calibrate/storage_probe.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <latch>
#include <memory>
#include <random>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/json_fields.h"
#include "common/quantile.h"
#include "common/random.h"

namespace simreplay::calibrate {

namespace {

constexpr uint64_t kAlignBytes = 4096;
constexpr int kMaxConcurrency = 64;
// Free space kept beyond the test file so the probe never fills a disk to the brim.
constexpr uint64_t kFreeSpaceMarginBytes = uint64_t{64} << 20;
// A drop counts as done when at most this fraction of the file's pages stays resident.
constexpr double kMaxResidentAfterDrop = 0.01;
constexpr uint64_t kWriteChunkBytes = uint64_t{4} << 20;

using Clock = std::chrono::steady_clock;

double SecondsBetween(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

std::string ErrnoText(int err) { return std::strerror(err); }

std::string HumanBytes(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 20) && bytes % (uint64_t{1} << 20) == 0) {
    return std::to_string(bytes >> 20) + "M";
  }
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + "K";
  return std::to_string(bytes);
}

// Owns a file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// Removes the test file when the probe ends, however it ends. Armed only after this process created
// the file, so a pre-existing file of the same name is never deleted.
class ScopedUnlink {
 public:
  explicit ScopedUnlink(std::string path) : path_(std::move(path)) {}
  ~ScopedUnlink() { ::unlink(path_.c_str()); }
  ScopedUnlink(const ScopedUnlink&) = delete;
  ScopedUnlink& operator=(const ScopedUnlink&) = delete;

 private:
  std::string path_;
};

struct AlignedFree {
  void operator()(char* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<char, AlignedFree>;

AlignedBuffer AllocateAligned(uint64_t bytes) {
  void* p = nullptr;
  if (::posix_memalign(&p, kAlignBytes, bytes) != 0) throw std::bad_alloc();
  return AlignedBuffer(static_cast<char*>(p));
}

Status ValidateOptions(const ProbeOptions& o) {
  auto bad = [&](const std::string& what) { return Status::InvalidArgument(o.dir + ": " + what); };
  if (o.block_bytes.empty()) return bad("no block sizes to measure");
  if (o.concurrency.empty()) return bad("no concurrency levels to measure");
  if (o.patterns.empty()) return bad("no access patterns to measure");
  if (o.file_bytes == 0 || o.file_bytes % kAlignBytes != 0) {
    return bad("test file size must be a positive multiple of 4096 bytes, got " + std::to_string(o.file_bytes));
  }
  for (uint64_t b : o.block_bytes) {
    if (b == 0 || b % kAlignBytes != 0) {
      return bad("block size must be a positive multiple of 4096 bytes, got " + std::to_string(b));
    }
    if (b > o.file_bytes) {
      return bad("block size " + std::to_string(b) + " exceeds the test file size " + std::to_string(o.file_bytes));
    }
  }
  for (int c : o.concurrency) {
    if (c < 1 || c > kMaxConcurrency) {
      return bad("concurrency must be in [1, " + std::to_string(kMaxConcurrency) + "], got " + std::to_string(c));
    }
  }
  if (!(o.time_limit_s > 0) || !std::isfinite(o.time_limit_s)) {
    return bad("time limit must be positive and finite");
  }
  if (o.file_name.find('/') != std::string::npos) return bad("test file name must not contain '/'");
  return Status::Ok();
}

// Checks that `dir` is an existing, writable directory with room for the test file.
Status CheckDirectory(const std::string& dir, uint64_t file_bytes) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT) return Status::NotFound(dir + ": no such directory");
    return Status::InvalidArgument(dir + ": cannot stat: " + ErrnoText(err));
  }
  if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument(dir + ": not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return Status::InvalidArgument(dir + ": not writable: " + ErrnoText(errno));
  }
  struct statvfs vfs;
  if (::statvfs(dir.c_str(), &vfs) == 0) {
    if (vfs.f_flag & ST_RDONLY) {
      return Status::InvalidArgument(dir + ": not writable: read-only file system");
    }
    uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    if (avail < file_bytes + kFreeSpaceMarginBytes) {
      return Status::InvalidArgument(dir + ": not enough free space for a " + std::to_string(file_bytes) +
                                     "-byte test file (" + std::to_string(avail) + " bytes available)");
    }
  }
  return Status::Ok();
}

// /proc/self/mounts escapes space, tab, newline and backslash as \ooo.
std::string UnescapeMountField(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const char* p = s.c_str() + i + 1;
      if (p[0] >= '0' && p[0] <= '7' && p[1] >= '0' && p[1] <= '7' && p[2] >= '0' && p[2] <= '7') {
        out += static_cast<char>((p[0] - '0') * 64 + (p[1] - '0') * 8 + (p[2] - '0'));
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

std::string FsNameFromMagic(long magic) {
  switch (static_cast<unsigned long>(magic)) {
    case 0xEF53:
      return "ext4";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x01021994:
      return "tmpfs";
    case 0x794C7630:
      return "overlay";
    case 0x6969:
      return "nfs";
    case 0x2FC12FC1:
      return "zfs";
    case 0xF2F52010:
      return "f2fs";
    case 0x65735546:
      return "fuse";
    case 0x00C36400:
      return "ceph";
    case 0x0BD00BD0:
      return "lustre";
    case 0x01021997:
      return "9p";
    default:
      return "unknown";
  }
}

struct MountInfo {
  std::string fs = "unknown";
  std::string mount_point;
  std::string device;
};

// The mount holding `dir`: the longest mount point that is a prefix of its real path (the last such
// line wins, as later mounts hide earlier ones).
MountInfo FindMount(const std::string& dir) {
  MountInfo info;
  char resolved[PATH_MAX];
  std::string real = ::realpath(dir.c_str(), resolved) ? std::string(resolved) : dir;
  std::ifstream mounts("/proc/self/mounts");
  std::string device, mount_point, fs_type, rest;
  size_t best = 0;
  bool found = false;
  while (mounts >> device >> mount_point >> fs_type && std::getline(mounts, rest)) {
    mount_point = UnescapeMountField(mount_point);
    bool covers = mount_point == "/" || real == mount_point ||
                  (real.size() > mount_point.size() && real.compare(0, mount_point.size(), mount_point) == 0 &&
                   real[mount_point.size()] == '/');
    if (covers && (!found || mount_point.size() >= best)) {
      best = mount_point.size();
      found = true;
      info.fs = fs_type;
      info.mount_point = mount_point;
      info.device = UnescapeMountField(device);
    }
  }
  if (!found) {
    struct statfs sfs;
    if (::statfs(dir.c_str(), &sfs) == 0) info.fs = FsNameFromMagic(static_cast<long>(sfs.f_type));
  }
  return info;
}

// Fills the file with pseudo-random bytes (so compressing or deduplicating storage cannot shortcut
// reads) and fsyncs it. Returns the write bandwidth including the fsync.
Result<double> WriteTestFile(int fd, const std::string& path, uint64_t file_bytes, uint64_t seed) {
  AlignedBuffer buf = AllocateAligned(kWriteChunkBytes);
  std::mt19937_64 rng(Rng::DeriveSeed(seed, 0x77726974));
  auto* words = reinterpret_cast<uint64_t*>(buf.get());
  for (uint64_t i = 0; i < kWriteChunkBytes / sizeof(uint64_t); ++i) words[i] = rng();
  auto start = Clock::now();
  uint64_t offset = 0;
  while (offset < file_bytes) {
    uint64_t chunk = std::min(kWriteChunkBytes, file_bytes - offset);
    // Make every 4 KiB page distinct across chunks too.
    for (uint64_t page = 0; page < chunk; page += kAlignBytes) {
      words[page / sizeof(uint64_t)] ^= Rng::DeriveSeed(seed, offset + page);
    }
    uint64_t done = 0;
    while (done < chunk) {
      ssize_t n = ::pwrite(fd, buf.get() + done, chunk - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::IoError(path + ": write at offset " + std::to_string(offset + done) +
                               " failed: " + ErrnoText(errno));
      }
      done += static_cast<uint64_t>(n);
    }
    offset += chunk;
  }
  if (::fsync(fd) != 0) return Status::IoError(path + ": fsync failed: " + ErrnoText(errno));
  double s = SecondsBetween(start, Clock::now());
  return s > 0 ? static_cast<double>(file_bytes) / s : 0.0;
}

// Fraction of the file's pages in the page cache, from mincore on a read-only shared mapping (which
// faults nothing in). nullopt when the mapping or mincore fails.
std::optional<double> ResidentFraction(int fd, uint64_t file_bytes) {
  void* map = ::mmap(nullptr, file_bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return std::nullopt;
  long page = ::sysconf(_SC_PAGESIZE);
  size_t pages = (file_bytes + page - 1) / page;
  std::vector<unsigned char> vec(pages);
  std::optional<double> fraction;
  if (::mincore(map, file_bytes, vec.data()) == 0) {
    size_t resident = 0;
    for (unsigned char v : vec) resident += v & 1;
    fraction = pages ? static_cast<double>(resident) / pages : 0.0;
  }
  ::munmap(map, file_bytes);
  return fraction;
}

std::string Percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", fraction * 100);
  return buf;
}

// Empties the page cache of the test file before a cold measurement and says how.
class CacheDropper {
 public:
  // `memory_backed`: the file lives in memory (tmpfs), so no drop can evict it.
  CacheDropper(int fd, uint64_t file_bytes, bool allow_global, bool memory_backed)
      : fd_(fd), file_bytes_(file_bytes), allow_global_(allow_global), memory_backed_(memory_backed) {}

  // "fadvise", "drop_caches" or "could not: <reason>".
  std::string Drop() {
    int rc = ::posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED);
    std::optional<double> resident = ResidentFraction(fd_, file_bytes_);
    if (rc == 0 && resident && *resident <= kMaxResidentAfterDrop) return "fadvise";
    if (rc == 0 && !resident) return "fadvise";  // cannot verify; fadvise itself succeeded
    std::string why = rc != 0 ? "posix_fadvise failed: " + ErrnoText(rc)
                              : "posix_fadvise left " + Percent(*resident) + " of the file's pages cached";
    if (memory_backed_) return "could not: " + why + "; the file system keeps files in memory";
    if (!allow_global_) return "could not: " + why + "; global drop_caches disabled";
    if (::geteuid() != 0) return "could not: " + why + "; not root, so /proc/sys/vm/drop_caches was not tried";
    if (drop_caches_useless_) return "could not: " + why + "; /proc/sys/vm/drop_caches did not help";
    std::string failure = WriteDropCaches();
    if (!failure.empty()) {
      drop_caches_useless_ = true;
      return "could not: " + why + "; " + failure;
    }
    std::optional<double> after = ResidentFraction(fd_, file_bytes_);
    if (!after || *after <= kMaxResidentAfterDrop) return "drop_caches";
    drop_caches_useless_ = true;  // e.g. tmpfs: the file lives in memory
    return "could not: " + Percent(*after) + " of the file's pages stay cached even after drop_caches " +
           "(memory-backed file system?)";
  }

 private:
  static std::string WriteDropCaches() {
    ::sync();
    int fd = ::open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
    if (fd < 0) return "cannot open /proc/sys/vm/drop_caches: " + ErrnoText(errno);
    ssize_t n = ::write(fd, "1", 1);
    int err = errno;
    ::close(fd);
    if (n != 1) return "writing /proc/sys/vm/drop_caches failed: " + ErrnoText(err);
    return "";
  }

  int fd_;
  uint64_t file_bytes_;
  bool allow_global_;
  bool memory_backed_;
  bool drop_caches_useless_ = false;
};

// How bad a cache-drop outcome is, for reporting the worst one.
int DropRank(const std::string& mode) {
  if (mode == "fadvise") return 0;
  if (mode == "drop_caches") return 1;
  return 2;
}

LatencyStats ComputeLatencyStats(std::vector<double>& op_s) {
  LatencyStats stats;
  if (op_s.empty()) return stats;
  std::sort(op_s.begin(), op_s.end());
  double sum = 0;
  for (double v : op_s) sum += v;
  stats.mean = sum / static_cast<double>(op_s.size());
  stats.p50 = SortedQuantileNearestRank(op_s, 0.50);
  stats.p99 = SortedQuantileNearestRank(op_s, 0.99);
  return stats;
}

struct MeasureSpec {
  AccessPattern pattern;
  uint64_t block_bytes;
  int concurrency;
  bool cold;
};

// Runs one measurement: `spec.concurrency` threads issue preads on `fd` until `budget_bytes` are read
// or `time_limit_s` has passed.
Result<ProbeMeasurement> Measure(int fd, const std::string& path, const MeasureSpec& spec, uint64_t file_bytes,
                                 uint64_t budget_bytes, double time_limit_s, uint64_t seed) {
  const uint64_t block = spec.block_bytes;
  const int threads = spec.concurrency;
  const uint64_t budget_blocks = std::max<uint64_t>(1, budget_bytes / block);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_NORMAL);
  ::posix_fadvise(fd, 0, 0, spec.pattern == AccessPattern::kSequential ? POSIX_FADV_SEQUENTIAL : POSIX_FADV_RANDOM);

  // Random: a seeded permutation of the file's blocks, shared by all threads, so no block is read twice
  // in one measurement.
  std::vector<uint64_t> order;
  if (spec.pattern == AccessPattern::kRandom) order = RandomReadOrder(file_bytes, block, seed);
  std::atomic<uint64_t> next_random{0};

  struct ThreadResult {
    std::vector<double> op_s;
    uint64_t bytes = 0;
    Clock::time_point start, end;
    int error = 0;
    uint64_t error_offset = 0;
    bool short_read = false;
  };
  std::vector<ThreadResult> results(threads);
  std::vector<AlignedBuffer> buffers;
  for (int t = 0; t < threads; ++t) buffers.push_back(AllocateAligned(block));
  std::latch ready(threads);

  auto worker = [&](int t) {
    ThreadResult& r = results[t];
    char* buf = buffers[t].get();
    // Sequential: thread t reads its stripe of the budget front to back.
    uint64_t seq_next = budget_blocks * t / threads;
    const uint64_t seq_end = budget_blocks * (t + 1) / threads;
    ready.arrive_and_wait();
    r.start = Clock::now();
    const auto deadline =
        r.start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(time_limit_s));
    for (;;) {
      uint64_t index;
      if (spec.pattern == AccessPattern::kSequential) {
        if (seq_next >= seq_end) break;
        index = seq_next++;
      } else {
        index = next_random.fetch_add(1, std::memory_order_relaxed);
        if (index >= budget_blocks || index >= order.size()) break;
        index = order[index];
      }
      const uint64_t offset = index * block;
      auto op_start = Clock::now();
      if (op_start >= deadline) break;
      uint64_t done = 0;
      while (done < block) {
        ssize_t n = ::pread(fd, buf + done, block - done, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
          r.error = errno;
          r.error_offset = offset + done;
          break;
        }
        if (n == 0) {
          r.short_read = true;
          r.error_offset = offset + done;
          break;
        }
        done += static_cast<uint64_t>(n);
      }
      auto op_end = Clock::now();
      if (r.error != 0 || r.short_read) break;
      r.op_s.push_back(SecondsBetween(op_start, op_end));
      r.bytes += block;
    }
    r.end = Clock::now();
  };

  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  for (auto& th : pool) th.join();

  ProbeMeasurement m;
  m.pattern = spec.pattern;
  m.block_bytes = block;
  m.concurrency = threads;
  m.cold = spec.cold;
  std::vector<double> all_op_s;
  Clock::time_point first = results[0].start, last = results[0].end;
  for (ThreadResult& r : results) {
    if (r.error != 0) {
      return Status::IoError(path + ": read of " + std::to_string(block) + " bytes at offset " +
                             std::to_string(r.error_offset) + " failed: " + ErrnoText(r.error));
    }
    if (r.short_read) {
      return Status::IoError(path + ": unexpected end of file at offset " + std::to_string(r.error_offset));
    }
    all_op_s.insert(all_op_s.end(), r.op_s.begin(), r.op_s.end());
    m.bytes += r.bytes;
    first = std::min(first, r.start);
    last = std::max(last, r.end);
  }
  m.ops = all_op_s.size();
  m.wall_s = SecondsBetween(first, last);
  m.bytes_per_s = m.wall_s > 0 ? static_cast<double>(m.bytes) / m.wall_s : 0;
  m.latency_s = ComputeLatencyStats(all_op_s);
  return m;
}

// Reads the file front to back through the page cache, leaving it cached (memory permitting).
Status ReadWholeFile(int fd, const std::string& path, uint64_t file_bytes) {
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  AlignedBuffer buf = AllocateAligned(kWriteChunkBytes);
  uint64_t offset = 0;
  while (offset < file_bytes) {
    ssize_t n = ::pread(fd, buf.get(), std::min(kWriteChunkBytes, file_bytes - offset), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return Status::IoError(path + ": read at offset " + std::to_string(offset) + " failed: " + ErrnoText(errno));
    if (n == 0) return Status::IoError(path + ": unexpected end of file at offset " + std::to_string(offset));
    offset += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

// Whether O_DIRECT reads work on `fd`: one aligned 4 KiB read at offset 0.
int ProbeDirectRead(int fd) {
  AlignedBuffer buf = AllocateAligned(kAlignBytes);
  ssize_t n;
  do {
    n = ::pread(fd, buf.get(), kAlignBytes, 0);
  } while (n < 0 && errno == EINTR);
  return n < 0 ? errno : 0;
}

std::string Describe(const MeasureSpec& s) {
  return std::string(AccessPatternName(s.pattern)) + " " + HumanBytes(s.block_bytes) + " x" +
         std::to_string(s.concurrency) + (s.cold ? " cold" : " warm");
}

std::optional<PatternFit> FitPattern(const std::vector<ProbeMeasurement>& ms, AccessPattern pattern,
                                     std::vector<std::string>& notes) {
  std::vector<CostPoint> points;
  std::map<int, double> best_by_concurrency;
  std::map<uint64_t, std::map<int, double>> by_block;
  double peak = 0;
  for (const ProbeMeasurement& m : ms) {
    if (!m.cold || m.pattern != pattern || m.ops == 0) continue;
    if (m.concurrency == 1 && m.latency_s.mean > 0) {
      points.push_back({static_cast<double>(m.block_bytes), m.latency_s.mean});
    }
    double& best = best_by_concurrency[m.concurrency];
    best = std::max(best, m.bytes_per_s);
    by_block[m.block_bytes][m.concurrency] = m.bytes_per_s;
    peak = std::max(peak, m.bytes_per_s);
  }
  Result<LinearCostFit> cost = FitLinearCost(points);
  const std::string name(AccessPatternName(pattern));
  if (!cost.ok()) {
    notes.push_back("no " + name + " fit: " + cost.status().message());
    return std::nullopt;
  }
  PatternFit fit;
  fit.cost = *cost;
  if (fit.cost.latency_s < 0) {
    char buf[160];
    std::snprintf(buf, sizeof buf, " fit intercept was negative (%.3g s); reported as 0", fit.cost.latency_s);
    notes.push_back(name + buf);
    fit.cost.latency_s = 0;
  }
  if (!fit.cost.bandwidth_bytes_per_s()) {
    notes.push_back(name + " fit slope is not positive; bandwidth_bytes_per_s is null");
  }
  fit.peak_bytes_per_s = peak;
  fit.max_useful_concurrency = MaxUsefulConcurrency(best_by_concurrency);
  for (const auto& [block, bw] : by_block) fit.max_useful_concurrency_by_block[block] = MaxUsefulConcurrency(bw);
  return fit;
}

Result<ProbeResult> RunProbeImpl(const ProbeOptions& options) {
  SIMREPLAY_RETURN_IF_ERROR(ValidateOptions(options));
  SIMREPLAY_RETURN_IF_ERROR(CheckDirectory(options.dir, options.file_bytes));
  auto note = [&](ProbeResult& r, std::string text) {
    if (options.on_note) options.on_note(text);
    r.notes.push_back(std::move(text));
  };

  ProbeResult result;
  result.path = options.dir;
  MountInfo mount = FindMount(options.dir);
  result.fs = mount.fs;
  result.mount_point = mount.mount_point;
  result.device = mount.device;
  result.file_bytes = options.file_bytes;
  result.seed = options.seed;
  result.time_limit_s = options.time_limit_s;

  const std::string path = ProbeFilePath(options);
  Fd write_fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!write_fd.valid()) {
    int err = errno;
    if (err == EACCES || err == EPERM || err == EROFS) {
      return Status::InvalidArgument(options.dir + ": not writable: " + ErrnoText(err));
    }
    return Status::IoError(options.dir + ": cannot create test file " + path + ": " + ErrnoText(err));
  }
  ScopedUnlink remove_file(path);

  Result<double> write_bw = WriteTestFile(write_fd.get(), path, options.file_bytes, options.seed);
  if (!write_bw.ok()) return write_bw.status();
  result.write_bytes_per_s = *write_bw;
  write_fd.Reset();

  Fd buffered_fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!buffered_fd.valid()) {
    return Status::IoError(path + ": cannot open for reading: " + ErrnoText(errno));
  }
  Fd direct_fd;
  if (options.direct) {
    direct_fd = Fd(::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC));
    int err = direct_fd.valid() ? ProbeDirectRead(direct_fd.get()) : errno;
    if (err != 0) {
      direct_fd.Reset();
      note(result,
           "O_DIRECT refused by " + result.fs + " (" + ErrnoText(err) + "); cold measurements use buffered reads");
    }
  }
  result.direct = direct_fd.valid();
  const int cold_fd = result.direct ? direct_fd.get() : buffered_fd.get();

  std::vector<MeasureSpec> specs;
  for (AccessPattern p : options.patterns)
    for (uint64_t b : options.block_bytes)
      for (int c : options.concurrency) specs.push_back({p, b, c, true});
  if (options.warm_pass) {
    for (AccessPattern p : options.patterns)
      for (uint64_t b : options.block_bytes) specs.push_back({p, b, 1, false});
  }
  const uint64_t budget =
      options.max_measure_bytes == 0 ? options.file_bytes : std::min(options.max_measure_bytes, options.file_bytes);

  CacheDropper dropper(buffered_fd.get(), options.file_bytes, options.allow_global_drop_caches,
                       result.fs == "tmpfs" || result.fs == "ramfs");
  std::string last_mode;
  bool warmed = false;
  for (size_t i = 0; i < specs.size(); ++i) {
    const MeasureSpec& spec = specs[i];
    if (options.on_progress)
      options.on_progress(static_cast<int>(i + 1), static_cast<int>(specs.size()), Describe(spec));
    if (spec.cold) {
      std::string mode = dropper.Drop();
      if (mode != last_mode) {
        if (mode != "fadvise") note(result, "page cache: " + mode);
        last_mode = mode;
      }
      if (result.cache_drop.empty() || DropRank(mode) > DropRank(result.cache_drop)) result.cache_drop = mode;
    } else if (!warmed) {
      // Warm the whole file through the page cache once.
      SIMREPLAY_RETURN_IF_ERROR(ReadWholeFile(buffered_fd.get(), path, options.file_bytes));
      std::optional<double> resident = ResidentFraction(buffered_fd.get(), options.file_bytes);
      if (resident && *resident < 0.99) {
        note(result, "only " + Percent(*resident) +
                         " of the test file stayed in the page cache; warm numbers include device reads");
      }
      warmed = true;
    }
    Result<ProbeMeasurement> m = Measure(spec.cold ? cold_fd : buffered_fd.get(), path, spec, options.file_bytes,
                                         budget, options.time_limit_s, options.seed);
    if (!m.ok()) return m.status();
    result.measurements.push_back(*m);
  }
  if (result.cache_drop.empty()) result.cache_drop = "could not: no cold measurement was run";

  result.sequential_fit = FitPattern(result.measurements, AccessPattern::kSequential, result.notes);
  result.random_fit = FitPattern(result.measurements, AccessPattern::kRandom, result.notes);
  std::vector<CostPoint> warm_points;
  for (const ProbeMeasurement& m : result.measurements) {
    if (!m.cold && m.concurrency == 1 && m.latency_s.mean > 0) {
      warm_points.push_back({static_cast<double>(m.block_bytes), m.latency_s.mean});
    }
  }
  if (Result<LinearCostFit> warm = FitLinearCost(warm_points); warm.ok()) {
    result.page_cache_fit = *warm;
    if (result.page_cache_fit->latency_s < 0) result.page_cache_fit->latency_s = 0;
  }
  return result;
}

nlohmann::ordered_json FitCostJson(const LinearCostFit& fit) {
  nlohmann::ordered_json j;
  j["latency_s"] = fit.latency_s;
  if (auto bw = fit.bandwidth_bytes_per_s()) {
    j["bandwidth_bytes_per_s"] = *bw;
  } else {
    j["bandwidth_bytes_per_s"] = nullptr;
  }
  j["r2"] = fit.r2;
  return j;
}

nlohmann::ordered_json PatternFitJson(const std::optional<PatternFit>& fit) {
  if (!fit) return nullptr;
  nlohmann::ordered_json j = FitCostJson(fit->cost);
  j["max_useful_concurrency"] = fit->max_useful_concurrency;
  j["peak_bytes_per_s"] = fit->peak_bytes_per_s;
  nlohmann::ordered_json by_block = nlohmann::ordered_json::object();
  for (const auto& [block, c] : fit->max_useful_concurrency_by_block) by_block[std::to_string(block)] = c;
  j["max_useful_concurrency_by_block"] = by_block;
  return j;
}

}  // namespace

std::string_view AccessPatternName(AccessPattern pattern) {
  switch (pattern) {
    case AccessPattern::kSequential:
      return "sequential";
    case AccessPattern::kRandom:
      return "random";
  }
  SIMREPLAY_CHECK(false && "unknown AccessPattern");
  return "";
}

std::optional<double> LinearCostFit::bandwidth_bytes_per_s() const {
  if (!(seconds_per_byte > 0)) return std::nullopt;
  return 1.0 / seconds_per_byte;
}

std::string ProbeFilePath(const ProbeOptions& options) {
  std::string name = options.file_name.empty() ? ".simreplay_probe." + std::to_string(::getpid()) : options.file_name;
  std::string dir = options.dir;
  if (!dir.empty() && dir.back() != '/') dir += '/';
  return dir + name;
}

Result<LinearCostFit> FitLinearCost(const std::vector<CostPoint>& points) {
  double w_sum = 0, wx = 0, wy = 0;
  for (const CostPoint& p : points) {
    if (!(p.op_s > 0) || !std::isfinite(p.op_s) || !std::isfinite(p.block_bytes)) {
      return Status::InvalidArgument("cost fit: seconds per operation must be positive and finite, got " +
                                     std::to_string(p.op_s));
    }
    double w = 1.0 / (p.op_s * p.op_s);
    w_sum += w;
    wx += w * p.block_bytes;
    wy += w * p.op_s;
  }
  if (points.size() < 2) {
    return Status::InvalidArgument("cost fit: needs at least two block sizes, got " + std::to_string(points.size()));
  }
  // Centred weighted sums keep the normal equations well conditioned (x spans 4 KiB..4 MiB).
  const double x_mean = wx / w_sum, y_mean = wy / w_sum;
  double sxx = 0, sxy = 0, syy = 0;
  for (const CostPoint& p : points) {
    double w = 1.0 / (p.op_s * p.op_s);
    sxx += w * (p.block_bytes - x_mean) * (p.block_bytes - x_mean);
    sxy += w * (p.block_bytes - x_mean) * (p.op_s - y_mean);
    syy += w * (p.op_s - y_mean) * (p.op_s - y_mean);
  }
  if (!(sxx > 0)) return Status::InvalidArgument("cost fit: needs at least two distinct block sizes");
  LinearCostFit fit;
  fit.seconds_per_byte = sxy / sxx;
  fit.latency_s = y_mean - fit.seconds_per_byte * x_mean;
  double ss_res = 0;
  for (const CostPoint& p : points) {
    double w = 1.0 / (p.op_s * p.op_s);
    double r = p.op_s - (fit.latency_s + fit.seconds_per_byte * p.block_bytes);
    ss_res += w * r * r;
  }
  fit.r2 = syy > 0 ? 1.0 - ss_res / syy : 1.0;
  return fit;
}

std::vector<uint64_t> RandomReadOrder(uint64_t file_bytes, uint64_t block_bytes, uint64_t seed) {
  SIMREPLAY_CHECK(block_bytes > 0);
  const uint64_t blocks = file_bytes / block_bytes;
  std::vector<uint64_t> order(blocks);
  for (uint64_t i = 0; i < blocks; ++i) order[i] = i;
  // Fisher-Yates written out, not std::shuffle, whose algorithm the standard leaves open. The modulo
  // bias of a 64-bit draw over at most 2^40 blocks is negligible.
  std::mt19937_64 rng(Rng::DeriveSeed(seed, block_bytes));
  for (uint64_t i = blocks; i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  return order;
}

int MaxUsefulConcurrency(const std::map<int, double>& bytes_per_s_by_concurrency, double fraction) {
  SIMREPLAY_CHECK(!bytes_per_s_by_concurrency.empty());
  double best = 0;
  for (const auto& [c, bw] : bytes_per_s_by_concurrency) best = std::max(best, bw);
  for (const auto& [c, bw] : bytes_per_s_by_concurrency) {  // ascending concurrency
    if (bw >= fraction * best) return c;
  }
  return bytes_per_s_by_concurrency.rbegin()->first;  // unreachable for fraction <= 1
}

Result<ProbeResult> RunStorageProbe(const ProbeOptions& options) {
  // Library exceptions (thread creation, allocation) end the probe but do not cross the module boundary.
  try {
    return RunProbeImpl(options);
  } catch (const std::exception& e) {
    return Status::Internal(options.dir + ": storage probe failed: " + e.what());
  }
}

std::string ProbeResultToJson(const ProbeResult& r) {
  nlohmann::ordered_json j;
  j["schema"] = "simreplay.probe/1";
  j["path"] = r.path;
  j["fs"] = r.fs;
  j["mount_point"] = r.mount_point;
  j["device"] = r.device;
  j["file_bytes"] = r.file_bytes;
  j["direct"] = r.direct;
  j["cache_drop"] = r.cache_drop;
  j["seed"] = r.seed;
  j["time_limit_s"] = r.time_limit_s;
  j["write_bytes_per_s"] = r.write_bytes_per_s;
  j["notes"] = r.notes;
  nlohmann::ordered_json ms = nlohmann::ordered_json::array();
  for (const ProbeMeasurement& m : r.measurements) {
    nlohmann::ordered_json jm;
    jm["pattern"] = AccessPatternName(m.pattern);
    jm["block_bytes"] = m.block_bytes;
    jm["concurrency"] = m.concurrency;
    jm["cold"] = m.cold;
    jm["bytes_per_s"] = m.bytes_per_s;
    jm["latency_s"] = {{"mean", m.latency_s.mean}, {"p50", m.latency_s.p50}, {"p99", m.latency_s.p99}};
    jm["ops"] = m.ops;
    jm["bytes"] = m.bytes;
    jm["wall_s"] = m.wall_s;
    ms.push_back(std::move(jm));
  }
  j["measurements"] = std::move(ms);
  nlohmann::ordered_json fit;
  fit["sequential"] = PatternFitJson(r.sequential_fit);
  fit["random"] = PatternFitJson(r.random_fit);
  fit["page_cache"] = r.page_cache_fit ? FitCostJson(*r.page_cache_fit) : nlohmann::ordered_json(nullptr);
  j["fit"] = std::move(fit);
  return j.dump(2) + "\n";
}

std::string FormatProbeTable(const ProbeResult& r) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "storage probe of %s (%s on %s, %s), %s test file, %s reads, cache drop: %s\n",
                r.path.c_str(), r.fs.c_str(), r.mount_point.c_str(), r.device.c_str(), HumanBytes(r.file_bytes).c_str(),
                r.direct ? "O_DIRECT" : "buffered", r.cache_drop.c_str());
  out += line;
  std::snprintf(line, sizeof line, "%-10s %6s %4s %-4s %10s %10s %10s %10s %8s\n", "pattern", "block", "conc", "pass",
                "MB/s", "mean_us", "p50_us", "p99_us", "ops");
  out += line;
  for (const ProbeMeasurement& m : r.measurements) {
    std::snprintf(line, sizeof line, "%-10s %6s %4d %-4s %10.1f %10.1f %10.1f %10.1f %8llu\n",
                  std::string(AccessPatternName(m.pattern)).c_str(), HumanBytes(m.block_bytes).c_str(), m.concurrency,
                  m.cold ? "cold" : "warm", m.bytes_per_s / 1e6, m.latency_s.mean * 1e6, m.latency_s.p50 * 1e6,
                  m.latency_s.p99 * 1e6, static_cast<unsigned long long>(m.ops));
    out += line;
  }
  auto cost_text = [](const LinearCostFit& f) {
    char buf[128];
    auto bw = f.bandwidth_bytes_per_s();
    std::snprintf(buf, sizeof buf, "latency %.1f us, bandwidth %s MB/s (r2 %.3f)", f.latency_s * 1e6,
                  bw ? std::to_string(static_cast<long long>(*bw / 1e6)).c_str() : "n/a", f.r2);
    return std::string(buf);
  };
  auto pattern_line = [&](const char* name, const std::optional<PatternFit>& f) {
    if (!f) {
      out += std::string("fit ") + name + ": n/a\n";
      return;
    }
    std::snprintf(line, sizeof line, "fit %-10s %s, max useful concurrency %d, peak %.1f MB/s\n", name,
                  cost_text(f->cost).c_str(), f->max_useful_concurrency, f->peak_bytes_per_s / 1e6);
    out += line;
  };
  pattern_line("sequential", r.sequential_fit);
  pattern_line("random", r.random_fit);
  if (r.page_cache_fit) {
    out += "fit page_cache " + cost_text(*r.page_cache_fit) + "\n";
  } else {
    out += "fit page_cache n/a\n";
  }
  for (const std::string& n : r.notes) out += "note: " + n + "\n";
  return out;
}

nlohmann::json ProbeFitRecord::ToJson() const {
  nlohmann::json j = {{"latency_s", latency_s},
                      {"bandwidth_bytes_per_s",
                       bandwidth_bytes_per_s ? nlohmann::json(*bandwidth_bytes_per_s) : nlohmann::json(nullptr)}};
  if (r2) j["r2"] = *r2;
  if (max_useful_concurrency) j["max_useful_concurrency"] = *max_useful_concurrency;
  if (peak_bytes_per_s) j["peak_bytes_per_s"] = *peak_bytes_per_s;
  if (max_useful_concurrency_by_block) j["max_useful_concurrency_by_block"] = *max_useful_concurrency_by_block;
  return j;
}

namespace {

Status ProbeFieldError(const std::string& path, const std::string& field, const std::string& expected,
                       const nlohmann::json& found) {
  return Status::InvalidArgument(path + ": " + field + ": expected " + expected + ", found " + found.dump());
}

bool IsConcurrency(const nlohmann::json& v) {
  return v.is_number_integer() && v.get<int64_t>() >= 1 && v.get<int64_t>() <= 64;
}

Result<std::optional<ProbeFitRecord>> ReadFitRecord(const std::string& path, const nlohmann::json& fit,
                                                    const char* name) {
  const std::string where = std::string("fit.") + name;
  if (!fit.contains(name) || fit[name].is_null()) return std::optional<ProbeFitRecord>();
  const nlohmann::json& f = fit[name];
  if (!f.is_object()) return ProbeFieldError(path, where, "an object or null", f);
  ProbeFitRecord r;
  auto number = [&](const char* key, bool allow_null, std::optional<double>* out) -> Status {
    if (!f.contains(key) || (allow_null && f[key].is_null())) return Status::Ok();
    if (!f[key].is_number()) {
      return ProbeFieldError(path, where + "." + key, allow_null ? "a number or null" : "a number", f[key]);
    }
    *out = f[key].get<double>();
    return Status::Ok();
  };
  std::optional<double> latency;
  SIMREPLAY_RETURN_IF_ERROR(number("latency_s", false, &latency));
  if (!latency) return ProbeFieldError(path, where + ".latency_s", "a number", nullptr);
  if (!std::isfinite(*latency) || *latency < 0) {
    return ProbeFieldError(path, where + ".latency_s", "a non-negative number", f["latency_s"]);
  }
  r.latency_s = *latency;
  SIMREPLAY_RETURN_IF_ERROR(number("bandwidth_bytes_per_s", true, &r.bandwidth_bytes_per_s));
  SIMREPLAY_RETURN_IF_ERROR(number("r2", true, &r.r2));
  SIMREPLAY_RETURN_IF_ERROR(number("peak_bytes_per_s", true, &r.peak_bytes_per_s));
  if (f.contains("max_useful_concurrency") && !f["max_useful_concurrency"].is_null()) {
    // The probe measures 1..kMaxProbeConcurrency threads; a wider value would wrap in get<int>().
    if (!IsConcurrency(f["max_useful_concurrency"])) {
      return ProbeFieldError(path, where + ".max_useful_concurrency", "an integer in [1, 64]",
                             f["max_useful_concurrency"]);
    }
    r.max_useful_concurrency = f["max_useful_concurrency"].get<int>();
  }
  if (f.contains("max_useful_concurrency_by_block") && f["max_useful_concurrency_by_block"].is_object()) {
    r.max_useful_concurrency_by_block.emplace();
    for (const auto& [block, c] : f["max_useful_concurrency_by_block"].items()) {
      if (!IsConcurrency(c)) {
        return ProbeFieldError(path, where + ".max_useful_concurrency_by_block." + block, "an integer in [1, 64]", c);
      }
      (*r.max_useful_concurrency_by_block)[block] = c.get<int>();
    }
  }
  return std::optional<ProbeFitRecord>(std::move(r));
}

}  // namespace

Result<ProbeDocument> ReadProbeFile(const std::string& path) {
  auto json = ReadJsonFile(path);
  if (!json.ok()) return json.status();
  const nlohmann::json& p = *json;
  // "schema" is checked for type first: value() would throw on a non-string (found by fuzzing).
  if (!p.is_object() || !p.contains("schema") || !p["schema"].is_string() || p["schema"] != "simreplay.probe/1") {
    return Status::InvalidArgument(path + ":1: not a simreplay.probe/1 document");
  }
  ProbeDocument doc;
  doc.file = path;
  if (p.contains("cache_drop") && p["cache_drop"].is_string()) doc.cache_drop = p["cache_drop"].get<std::string>();
  if (!p.contains("fit") || p["fit"].is_null()) return doc;
  if (!p["fit"].is_object()) return ProbeFieldError(path, "fit", "an object", p["fit"]);
  const nlohmann::json& fit = p["fit"];
  for (auto [name, out] : {std::pair{"sequential", &doc.sequential}, std::pair{"random", &doc.random},
                           std::pair{"page_cache", &doc.page_cache}}) {
    auto r = ReadFitRecord(path, fit, name);
    if (!r.ok()) return r.status();
    *out = std::move(*r);
  }
  return doc;
}

}  // namespace simreplay::calibrate
