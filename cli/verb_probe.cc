// `simreplay probe storage PATH`: measures the storage under PATH (calibrate/storage_probe.h) and
// writes a simreplay.probe/1 document (docs/probe-format.md).
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include <CLI/CLI.hpp>

#include "calibrate/storage_probe.h"
#include "cli/verb_registry.h"
#include "common/atomic_file.h"

namespace simreplay::cli {
namespace {

constexpr const char* kPrefix = "simreplay probe storage: ";

// The test file, removed by the signal handler when the probe is interrupted. A fixed buffer because
// the handler may only call async-signal-safe functions (unlink, sigaction, raise).
char g_probe_file[4096];
constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void RemoveProbeFileAndReraise(int sig) {
  if (g_probe_file[0] != '\0') ::unlink(g_probe_file);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);
}

// Installs the cleanup handlers for the lifetime of the object and restores the previous ones.
class ProbeFileSignalGuard {
 public:
  explicit ProbeFileSignalGuard(const std::string& path) {
    std::snprintf(g_probe_file, sizeof g_probe_file, "%s", path.c_str());
    struct sigaction sa {};
    sa.sa_handler = RemoveProbeFileAndReraise;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < std::size(kCleanupSignals); ++i) ::sigaction(kCleanupSignals[i], &sa, &old_[i]);
  }
  ~ProbeFileSignalGuard() {
    for (size_t i = 0; i < std::size(kCleanupSignals); ++i) ::sigaction(kCleanupSignals[i], &old_[i], nullptr);
    g_probe_file[0] = '\0';
  }
  ProbeFileSignalGuard(const ProbeFileSignalGuard&) = delete;
  ProbeFileSignalGuard& operator=(const ProbeFileSignalGuard&) = delete;

 private:
  struct sigaction old_[std::size(kCleanupSignals)]{};
};

int RunProbeStorage(const std::string& dir, const std::string& out, int size_mb, bool direct, bool quick,
                    uint64_t seed) {
  calibrate::ProbeOptions options;
  options.dir = dir;
  options.file_bytes = static_cast<uint64_t>(size_mb > 0 ? size_mb : (quick ? 64 : 256)) << 20;
  options.time_limit_s = quick ? 0.25 : 0.5;
  options.direct = direct;
  options.seed = seed;
  // Name the file here so the signal handler knows it before the library creates it.
  options.file_name = ".simreplay_probe." + std::to_string(::getpid());

  const bool tty = ::isatty(STDERR_FILENO) == 1;
  bool progress_shown = false;
  if (tty) {
    options.on_progress = [&](int index, int total, std::string_view what) {
      std::fprintf(stderr, "\r\033[K[%d/%d] %.*s", index, total, static_cast<int>(what.size()), what.data());
      std::fflush(stderr);
      progress_shown = true;
    };
  }
  options.on_note = [&](std::string_view note) {
    if (progress_shown) std::fputs("\r\033[K", stderr);
    std::fprintf(stderr, "%s%.*s\n", kPrefix, static_cast<int>(note.size()), note.data());
  };

  Result<calibrate::ProbeResult> result = [&] {
    ProbeFileSignalGuard guard(calibrate::ProbeFilePath(options));
    return calibrate::RunStorageProbe(options);
  }();
  if (progress_shown) std::fputs("\r\033[K", stderr);
  if (!result.ok()) {
    std::fprintf(stderr, "%s%s\n", kPrefix, result.status().message().c_str());
    Status::Code code = result.status().code();
    return code == Status::Code::kNotFound || code == Status::Code::kInvalidArgument ? kExitBadInput : kExitFailure;
  }
  std::fputs(calibrate::FormatProbeTable(*result).c_str(), stderr);
  std::string json = calibrate::ProbeResultToJson(*result);
  if (out.empty()) {
    std::fputs(json.c_str(), stdout);
    return std::fflush(stdout) == 0 ? kExitOk : kExitFailure;
  }
  Status written = WriteFileAtomically(out, json);
  if (!written.ok()) {
    std::fprintf(stderr, "%s%s\n", kPrefix, written.message().c_str());
    return kExitFailure;
  }
  std::fprintf(stderr, "wrote %s\n", out.c_str());
  return kExitOk;
}

int RunProbeVerb(int argc, char** argv) {
  CLI::App app("Measure the storage under a directory: read latency, bandwidth and useful concurrency", argv[0]);
  app.require_subcommand(1);
  CLI::App* storage =
      app.add_subcommand("storage",
                         "write a test file under PATH, time preads of 4K..4M blocks at 1..8 threads, fit the "
                         "storage model (docs/probe-format.md)");
  std::string dir, out;
  int size_mb = 0;
  bool direct = false, quick = false;
  uint64_t seed = 1;
  storage->add_option("PATH", dir, "directory on the storage to measure (must be writable)")->required();
  storage->add_option("--out", out, "write the JSON here (atomically) instead of stdout");
  storage->add_option("--size-mb", size_mb, "test file size in MiB (default 256, 64 with --quick)")
      ->check(CLI::Range(4, 1 << 20));
  storage->add_flag("--direct", direct, "read with O_DIRECT (falls back to buffered reads if refused)");
  storage->add_flag("--quick", quick, "64 MiB file and 0.25 s per measurement");
  storage->add_option("--seed", seed, "seed of the random read order")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  return RunProbeStorage(dir, out, size_mb, direct, quick, seed);
}

}  // namespace

SIMREPLAY_REGISTER_VERB("probe", "measure storage latency and bandwidth (probe storage PATH)", RunProbeVerb);

}  // namespace simreplay::cli
