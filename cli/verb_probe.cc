// `simreplay probe storage PATH`: measures the storage under PATH (calibrate/storage_probe.h) and
// writes a simreplay.probe/1 document (docs/probe-format.md).
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "calibrate/network_fit.h"
#include "calibrate/storage_probe.h"
#include "cli/cli_util.h"
#include "cli/verb_registry.h"
#include "common/atomic_file.h"
#include "common/json_fields.h"
#include "validation/host_capacity.h"
#include "validation/runner.h"

namespace simreplay::cli {
namespace {

extern "C" char** environ;

// PYTHONPATH with the capture package first, then the rest of this process's environment.
Result<std::vector<std::string>> CaptureEnvironment() {
  std::string capture = validation::FindCapturePath();
  if (capture.empty()) return Status::NotFound("cannot find the simreplay_capture package (set SIMREPLAY_CAPTURE_PATH)");
  std::vector<std::string> env;
  const char* old = std::getenv("PYTHONPATH");
  env.push_back("PYTHONPATH=" + capture + (old && *old ? std::string(":") + old : ""));
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "PYTHONPATH=", 11) != 0) env.emplace_back(*e);
  return env;
}

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

// `simreplay probe network`: the microbenchmark itself is Python (it needs torch.distributed): this runs
// `python3 -m simreplay_capture.probe_network` (local ranks, or this process's rank under torchrun), then
// validates what it wrote and prints the fits.
struct NetworkProbeArgs {
  std::string out = "probe-network.json";
  std::string python = "/usr/bin/python3";
  std::string ops, min_bytes = "1K", max_bytes = "64M", backend = "auto";
  int nprocs = 2, factor = 4;
  double budget_s = 0.3;
};

int RunProbeNetwork(const NetworkProbeArgs& a) {
  constexpr const char* kNet = "simreplay probe network: ";
  auto env = CaptureEnvironment();
  if (!env.ok()) {
    std::fprintf(stderr, "%s%s\n", kNet, env.status().message().c_str());
    return kExitFailure;
  }
  std::vector<std::string> argv = {a.python,
                                   "-m",
                                   "simreplay_capture.probe_network",
                                   "--out",
                                   a.out,
                                   "--nprocs",
                                   std::to_string(a.nprocs),
                                   "--min-bytes",
                                   a.min_bytes,
                                   "--max-bytes",
                                   a.max_bytes,
                                   "--factor",
                                   std::to_string(a.factor),
                                   "--budget-s",
                                   std::to_string(a.budget_s),
                                   "--backend",
                                   a.backend};
  if (!a.ops.empty()) {
    argv.push_back("--ops");
    argv.push_back(a.ops);
  }
  auto run = RunInTerminal(argv, &*env);
  if (!run.ok()) {
    std::fprintf(stderr, "%s%s\n", kNet, run.status().message().c_str());
    return kExitFailure;
  }
  if (*run != 0) {
    std::fprintf(stderr, "%sthe probe failed (exit %d)\n", kNet, *run);
    return *run == 2 ? kExitUsage : kExitFailure;
  }
  const char* rank = std::getenv("RANK");
  if (rank != nullptr && std::strcmp(rank, "0") != 0) return kExitOk;  // rank 0 writes the document
  auto probe = calibrate::LoadNetworkProbe(a.out);
  if (!probe.ok()) {
    std::fprintf(stderr, "%s%s\n", kNet, probe.status().message().c_str());
    return kExitFailure;
  }
  std::fprintf(stderr, "%s%d ranks on %d node(s), backend %s; alpha-beta fits:\n", kNet, probe->world_size,
               probe->nodes, probe->backend.c_str());
  for (const auto& [op, pts] : probe->points) {
    auto f = calibrate::FitAlphaBeta(pts);
    if (!f.ok()) {
      std::fprintf(stderr, "  %-15s %s\n", op.c_str(), f.status().message().c_str());
      continue;
    }
    std::fprintf(stderr, "  %-15s alpha %9.3f us  algbw %10.4f GB/s  R2 %.3f  MAPE %.1f%%  (%d sizes)\n", op.c_str(),
                 f->alpha_s * 1e6, f->algbw_bytes_per_s / 1e9, f->r2, f->mape * 100, f->points);
  }
  return kExitOk;
}

bool IsHttpUrl(const std::string& s) { return s.rfind("http://", 0) == 0 || s.rfind("https://", 0) == 0; }
bool IsS3Url(const std::string& s) { return s.rfind("s3://", 0) == 0; }

// How an s3:// object is reached (boto3's options; docs/probe-format.md "S3 through boto3").
struct S3ProbeArgs {
  std::string endpoint_url, region;
  bool no_sign_request = false;
};

// `simreplay probe storage http://HOST/PATH` or `s3://BUCKET/KEY`: an HTTP object store (or web server) is
// measured by `python3 -m simreplay_capture.probe_http`, an S3 object through boto3 by
// `simreplay_capture.probe_s3` (first-byte latency, per-connection rate, the connection sweep;
// docs/probe-format.md "HTTP store probe"), which writes the document atomically; this checks it and prints
// the figures. Without --out the document goes to stdout (through a temporary file that is removed).
int RunProbeHttpStorage(const std::string& url, const std::string& out, bool quick, uint64_t seed,
                        const std::string& python, const S3ProbeArgs& s3) {
  auto env = CaptureEnvironment();
  if (!env.ok()) {
    std::fprintf(stderr, "%s%s\n", kPrefix, env.status().message().c_str());
    return kExitFailure;
  }
  const bool is_s3 = IsS3Url(url);
  const std::string path = out.empty() ? ".simreplay-probe-http." + std::to_string(::getpid()) + ".json" : out;
  const char* module = is_s3 ? "simreplay_capture.probe_s3" : "simreplay_capture.probe_http";
  std::vector<std::string> argv = {python, "-m", module, url, "--out", path, "--seed", std::to_string(seed)};
  if (quick) {
    for (const char* a : {"--large-repeats", "1", "--small-requests", "10", "--connections", "1,2,4,8"})
      argv.emplace_back(a);
  }
  if (!s3.endpoint_url.empty()) argv.insert(argv.end(), {"--endpoint-url", s3.endpoint_url});
  if (!s3.region.empty()) argv.insert(argv.end(), {"--region", s3.region});
  if (s3.no_sign_request) argv.emplace_back("--no-sign-request");
  auto run = RunInTerminal(argv, &*env);
  if (!run.ok()) {
    std::fprintf(stderr, "%s%s\n", kPrefix, run.status().message().c_str());
    return kExitFailure;
  }
  if (*run != 0) {  // the probe said why on stderr, and wrote nothing
    std::fprintf(stderr, "%sthe %s probe of %s failed (exit %d)\n", kPrefix, is_s3 ? "S3" : "HTTP", url.c_str(), *run);
    return *run == 2 ? kExitUsage : kExitFailure;
  }
  auto doc = ReadJsonFile(path);
  if (!doc.ok() || !doc->is_object() || doc->value("schema", "") != "simreplay.probe-http/1" ||
      !(*doc)["fit"].is_object()) {
    std::fprintf(stderr, "%s%s: not a simreplay.probe-http/1 document%s\n", kPrefix, path.c_str(),
                 doc.ok() ? "" : (": " + doc.status().message()).c_str());
    if (out.empty()) ::unlink(path.c_str());
    return kExitFailure;
  }
  if (out.empty()) {
    ::unlink(path.c_str());
    std::fputs((doc->dump(1) + "\n").c_str(), stdout);
    return std::fflush(stdout) == 0 ? kExitOk : kExitFailure;
  }
  std::fprintf(stderr, "wrote %s\n", out.c_str());
  return kExitOk;
}

// `probe host`: the host's delivered cores (validation/host_capacity.h), one JSON object per screen on
// stdout: what the validation's noise screen records around every real run.
int RunProbeHost(int screens, double window_s) {
  for (int i = 0; i < screens; ++i) {
    const validation::HostCapacity h = validation::MeasureHostCapacity(window_s);
    nlohmann::json screen = h.ToJson();
    screen["bound"] = validation::kMinDeliveredShare;  // harnesses read the bound here, not a copy of it
    std::printf("%s\n", screen.dump().c_str());
    std::fflush(stdout);
    const std::string hint = i + 1 == screens ? validation::FaultCostHint(h) : "";
    if (!hint.empty()) std::fprintf(stderr, "simreplay probe host: %s\n", hint.c_str());
  }
  return kExitOk;
}

int RunProbeVerb(int argc, char** argv) {
  CLI::App app("Measure the storage under a directory, or the network between ranks", argv[0]);
  app.require_subcommand(1);
  CLI::App* storage =
      app.add_subcommand("storage",
                         "write a test file under PATH, time preads of 4K..4M blocks at 1..8 threads, fit the "
                         "storage model (docs/probe-format.md)");
  std::string dir, out;
  int size_mb = 0;
  bool direct = false, quick = false;
  uint64_t seed = 1;
  std::string storage_python = "/usr/bin/python3";
  storage
      ->add_option("PATH", dir,
                   "directory on the storage to measure (must be writable), an http(s):// URL of an object or "
                   "a dataset root (measured by python3 -m simreplay_capture.probe_http), or s3://BUCKET/KEY "
                   "(an object, through boto3: simreplay_capture.probe_s3)")
      ->required();
  storage->add_option("--python", storage_python, "interpreter for an http(s):// or s3:// URL")->capture_default_str();
  S3ProbeArgs s3;
  storage->add_option("--endpoint-url", s3.endpoint_url, "s3:// only: an S3-compatible endpoint (default AWS's)");
  storage->add_option("--region", s3.region, "s3:// only: the region (default: boto3's configuration)");
  storage->add_flag("--no-sign-request", s3.no_sign_request, "s3:// only: unsigned requests (a public bucket)");
  storage->add_option("--out", out, "write the JSON here (atomically) instead of stdout");
  storage->add_option("--size-mb", size_mb, "test file size in MiB (default 256, 64 with --quick)")
      ->check(CLI::Range(4, 1 << 20));
  storage->add_flag("--direct", direct, "read with O_DIRECT (falls back to buffered reads if refused)");
  storage->add_flag("--quick", quick, "64 MiB file and 0.25 s per measurement");
  storage->add_option("--seed", seed, "seed of the random read order")->capture_default_str();
  NetworkProbeArgs net;
  CLI::App* network = app.add_subcommand(
      "network",
      "time all-reduce, all-gather, reduce-scatter, broadcast and send/recv over torch.distributed (gloo, or nccl "
      "with CUDA) from 1 KiB to 64 MiB, report algbw/busbw, fit alpha-beta (docs/probe-format.md)");
  network->add_option("--out", net.out, "probe-network.json to write (atomically)")->capture_default_str();
  network->add_option("--nprocs", net.nprocs, "local ranks to start (ignored under torchrun)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  network->add_option("--ops", net.ops,
                      "comma-separated subset of all_reduce,all_gather,reduce_scatter,broadcast,sendrecv");
  network->add_option("--min-bytes", net.min_bytes, "smallest message (K/M/G suffixes)")->capture_default_str();
  network->add_option("--max-bytes", net.max_bytes, "largest message")->capture_default_str();
  network->add_option("--factor", net.factor, "size multiplier between steps")
      ->check(CLI::Range(2, 1024))
      ->capture_default_str();
  network->add_option("--budget-s", net.budget_s, "target timed seconds per size")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  network->add_option("--backend", net.backend, "auto, gloo or nccl")->check(CLI::IsMember({"auto", "gloo", "nccl"}));
  network->add_option("--python", net.python, "interpreter with torch")->capture_default_str();
  int host_screens = 1;
  double host_window_s = 0.05;
  CLI::App* host = app.add_subcommand(
      "host",
      "time a fixed integer workload on one core and on every core at once: how many of its cores the host "
      "delivers now (a JSON line per screen; the validation's noise screen, docs/validation.md)");
  host->add_option("--screens", host_screens, "screens to run, one line each")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  host->add_option("--window-s", host_window_s, "length of each timed window")
      ->check(CLI::Range(0.001, 10.0))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  if (network->parsed()) return RunProbeNetwork(net);
  if (host->parsed()) return RunProbeHost(host_screens, host_window_s);
  if ((!s3.endpoint_url.empty() || !s3.region.empty() || s3.no_sign_request) && !IsS3Url(dir)) {
    std::fprintf(stderr, "%s--endpoint-url, --region and --no-sign-request apply to s3:// URLs only\n", kPrefix);
    return kExitUsage;
  }
  if (IsHttpUrl(dir) || IsS3Url(dir)) return RunProbeHttpStorage(dir, out, quick, seed, storage_python, s3);
  return RunProbeStorage(dir, out, size_mb, direct, quick, seed);
}

}  // namespace

SIMREPLAY_REGISTER_VERB("probe",
                        "measure storage (probe storage PATH), collectives (probe network) or the host's delivered "
                        "cores (probe host)",
                        RunProbeVerb);

}  // namespace simreplay::cli
