#include "validation/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/atomic_file.h"
#include "common/json_fields.h"
#include "validation/source_tree.h"

extern char** environ;

namespace simreplay::validation {

std::vector<PlannedRun> PlanRuns(const ExperimentSpec& spec) {
  std::vector<PlannedRun> plan;
  for (int k = 0; k < spec.warmup_runs; ++k) {
    for (const auto& c : spec.cases) {
      plan.push_back({fmt::format("{}.warmup{}", c.name, k), c.name, "train", -1, true});
    }
  }
  for (int r = 0; r < spec.repetitions; ++r) {
    for (const auto& c : spec.cases)
      plan.push_back({fmt::format("{}.train.r{}", c.name, r), c.name, "train", r, false});
    if (spec.pipeline_only_runs) {
      for (const auto& c : spec.cases)
        plan.push_back({fmt::format("{}.pipeline.r{}", c.name, r), c.name, "pipeline", r, false});
    }
  }
  return plan;
}

std::vector<std::string> BuildCommand(const ExperimentSpec& spec, const ExperimentCase& c, const PlannedRun& run,
                                      const RunEnvironment& env, const std::string& trace_path,
                                      const std::string& summary_path) {
  const BenchConfig& k = c.config;
  const bool pipeline = run.kind == "pipeline";
  if (spec.run.command.empty()) {
    std::vector<std::string> argv = {env.python,
                                     "-m",
                                     "simreplay_capture.bench",
                                     "run",
                                     "--data",
                                     env.dataset_dir,
                                     "--format",
                                     k.format,
                                     "--trace",
                                     trace_path,
                                     "--summary-json",
                                     summary_path,
                                     "--workers",
                                     std::to_string(k.num_workers),
                                     "--batch-size",
                                     std::to_string(k.batch_size),
                                     "--prefetch-factor",
                                     std::to_string(k.prefetch_factor),
                                     k.pin_memory ? "--pin-memory" : "--no-pin-memory",
                                     k.persistent_workers ? "--persistent-workers" : "--no-persistent-workers",
                                     "--steps",
                                     std::to_string(spec.run.steps),
                                     "--warmup-steps",
                                     std::to_string(spec.run.warmup_steps),
                                     "--seed",
                                     std::to_string(spec.run.seed),
                                     "--step-time-s",
                                     fmt::format("{}", spec.run.step_time_s),
                                     "--image-size",
                                     std::to_string(spec.run.image_size),
                                     "--frames",
                                     std::to_string(spec.run.frames),
                                     "--emulate"};
    if (pipeline) argv.push_back("--pipeline-only");
    return argv;
  }
  const std::vector<std::pair<std::string, std::string>> values = {
      {"{python}", env.python},
      {"{data}", env.dataset_dir},
      {"{trace}", trace_path},
      {"{summary}", summary_path},
      {"{format}", k.format},
      {"{num_workers}", std::to_string(k.num_workers)},
      {"{batch_size}", std::to_string(k.batch_size)},
      {"{prefetch_factor}", std::to_string(k.prefetch_factor)},
      {"{pin_memory}", k.pin_memory ? "1" : "0"},
      {"{persistent_workers}", k.persistent_workers ? "1" : "0"},
      {"{steps}", std::to_string(spec.run.steps)},
      {"{warmup_steps}", std::to_string(spec.run.warmup_steps)},
      {"{seed}", std::to_string(spec.run.seed)},
      {"{step_time_s}", fmt::format("{}", spec.run.step_time_s)},
      {"{pipeline_only}", pipeline ? "1" : "0"}};
  std::vector<std::string> argv;
  for (std::string arg : spec.run.command) {
    for (const auto& [key, value] : values) {
      for (size_t pos = arg.find(key); pos != std::string::npos; pos = arg.find(key, pos + value.size())) {
        arg.replace(pos, key.size(), value);
      }
    }
    argv.push_back(arg);
  }
  return argv;
}

nlohmann::json RunRecord::ToJson() const {
  return {{"id", plan.id},
          {"case", plan.case_name},
          {"kind", plan.kind},
          {"rep", plan.rep},
          {"discarded", plan.discarded},
          {"sequence", sequence},
          {"command", command},
          {"trace", trace},
          {"summary", summary},
          {"log", log},
          {"exit_code", exit_code},
          {"timed_out", timed_out},
          {"wall_s", wall_s},
          {"loadavg_before", loadavg_before},
          {"loadavg_after", loadavg_after},
          {"steal_fraction", steal_fraction},
          {"cpu_mhz_before", cpu_mhz_before},
          {"cpu_mhz_after", cpu_mhz_after},
          {"host_before", host_before.ToJson()},
          {"host_after", host_after.ToJson()},
          {"attempts", attempts},
          {"over_noise_bound", over_noise_bound},
          {"noise_reason", noise_reason},
          {"started_utc", started_utc}};
}

std::vector<double> ScreenedFaultCostsUs(const std::vector<RunRecord>& runs) {
  std::vector<double> us;
  for (const auto& run : runs)
    for (const HostCapacity* h : {&run.host_before, &run.host_after})
      if (h->fresh_page_touch_us > 0) us.push_back(h->fresh_page_touch_us);
  return us;
}

double RunRecord::HostDeliveredShare() const { return MeanDeliveredShare(host_before, host_after); }

Result<RunRecord> RunRecordFromJson(const nlohmann::json& j, const std::string& where) {
  RunRecord r;
  try {
    r.plan.id = j.at("id").get<std::string>();
    r.plan.case_name = j.at("case").get<std::string>();
    r.plan.kind = j.at("kind").get<std::string>();
    r.plan.rep = j.at("rep").get<int>();
    r.plan.discarded = j.at("discarded").get<bool>();
    r.sequence = j.at("sequence").get<int>();
    r.command = j.at("command").get<std::vector<std::string>>();
    r.trace = j.at("trace").get<std::string>();
    r.summary = j.at("summary").get<std::string>();
    r.log = j.at("log").get<std::string>();
    r.exit_code = j.at("exit_code").get<int>();
    r.timed_out = j.value("timed_out", false);
    r.wall_s = j.value("wall_s", 0.0);
    r.loadavg_before = j.value("loadavg_before", -1.0);
    r.loadavg_after = j.value("loadavg_after", -1.0);
    r.steal_fraction = j.value("steal_fraction", -1.0);
    r.cpu_mhz_before = j.value("cpu_mhz_before", -1.0);
    r.cpu_mhz_after = j.value("cpu_mhz_after", -1.0);
    r.attempts = j.value("attempts", 1);
    r.over_noise_bound = j.value("over_noise_bound", false);
    r.noise_reason = j.value("noise_reason", r.over_noise_bound ? "steal" : "");
    for (auto [key, screen] : {std::pair{"host_before", &r.host_before}, std::pair{"host_after", &r.host_after}}) {
      if (!j.contains(key)) continue;  // runs recorded before the host screen (2026-12-04)
      auto s = HostCapacityFromJson(j.at(key));
      if (!s.ok()) return Status::InvalidArgument(where + ": run record: " + key + ": " + s.status().message());
      *screen = *s;
    }
    r.started_utc = j.value("started_utc", "");
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(where + ": run record: " + e.what());
  }
  return r;
}

Result<ChildOutcome> RunChild(const std::vector<std::string>& argv, const std::string& pythonpath_prepend,
                              const std::string& log_path, double timeout_s) {
  if (argv.empty()) return Status::InvalidArgument("empty command");
  std::vector<std::string> env_strings;
  bool have_pythonpath = false;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string s = *e;
    if (!pythonpath_prepend.empty() && s.rfind("PYTHONPATH=", 0) == 0) {
      s = "PYTHONPATH=" + pythonpath_prepend + (s.size() > 11 ? ":" + s.substr(11) : "");
      have_pythonpath = true;
    }
    env_strings.push_back(s);
  }
  if (!pythonpath_prepend.empty() && !have_pythonpath) env_strings.push_back("PYTHONPATH=" + pythonpath_prepend);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  // stdout and stderr each through a pipe of ours into the log, so that the child's error (its last
  // stderr line: warnings and errors go there, and stdout is flushed at exit, after them) is known.
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return Status::IoError(fmt::format("pipe: {}", std::strerror(errno)));
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    const int err = errno;
    close(out_pipe[0]), close(out_pipe[1]);
    return Status::IoError(fmt::format("pipe: {}", std::strerror(err)));
  }
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    const int err = errno;
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
    return Status::IoError(fmt::format("{}: {}", log_path, std::strerror(err)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);  // own process group: a timeout kills the run and its workers
  pid_t pid = 0;
  auto t0 = std::chrono::steady_clock::now();
  int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(out_pipe[1]), close(err_pipe[1]);
  fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
  fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
  ChildOutcome out;
  std::string err_tail;  // the last few KiB of stderr, for its last line
  // Copies what the child wrote so far on `fd` into the log (never blocking: a worker that outlives
  // the child may hold the pipe open).
  auto pump = [&](int fd, std::string* tail) {
    char buf[16384];
    while (true) {
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      if (tail != nullptr) {
        tail->append(buf, static_cast<size_t>(n));
        if (tail->size() > 8192) tail->erase(0, tail->size() - 4096);
      }
      for (ssize_t done = 0; done < n && out.log_error.empty();) {
        const ssize_t w = write(log_fd, buf + done, static_cast<size_t>(n - done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) out.log_error = fmt::format("{}: {}", log_path, std::strerror(w < 0 ? errno : ENOSPC));
        done += std::max<ssize_t>(w, 0);
      }
    }
  };
  auto pump_both = [&]() { pump(out_pipe[0], nullptr), pump(err_pipe[0], &err_tail); };
  auto finish = [&]() {
    close(out_pipe[0]), close(err_pipe[0]);
    if (close(log_fd) != 0 && out.log_error.empty())
      out.log_error = fmt::format("{}: {}", log_path, std::strerror(errno));
  };
  if (rc != 0) {
    finish();
    return Status::IoError(fmt::format("cannot start {}: {}", argv[0], std::strerror(rc)));
  }
  int status = 0;
  while (true) {
    pump_both();
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      const int err = errno;
      finish();
      return Status::IoError(fmt::format("waitpid: {}", std::strerror(err)));
    }
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!out.timed_out && elapsed > timeout_s) {
      out.timed_out = true;
      kill(-pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  pump_both();
  finish();
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  const size_t end = err_tail.find_last_not_of(" \t\r\n");
  if (end != std::string::npos) {
    const size_t newline = err_tail.find_last_of('\n', end);
    const size_t start = newline == std::string::npos ? 0 : newline + 1;
    out.last_error_line = err_tail.substr(start, end - start + 1);
  }
  return out;
}

std::string ChildFailure(const Result<ChildOutcome>& outcome) {
  if (!outcome.ok()) return outcome.status().message();
  std::string why = fmt::format("exit {}", outcome->exit_code);
  if (!outcome->last_error_line.empty()) why += ": " + outcome->last_error_line;
  if (!outcome->log_error.empty()) why += "; its log is incomplete: " + outcome->log_error;
  return why;
}

Status WriteRunIndex(const std::string& dir, const std::vector<RunRecord>& runs) {
  nlohmann::json j = {{"schema", "simreplay.validation-runs/1"}, {"runs", nlohmann::json::array()}};
  for (const auto& r : runs) j["runs"].push_back(r.ToJson());
  return WriteFileAtomically(dir + "/runs.json", j.dump(1) + "\n");
}

Result<std::vector<RunRecord>> ReadRunIndex(const std::string& dir) {
  auto json = ReadJsonFile(dir + "/runs.json");
  if (!json.ok()) return json.status();
  if (!json->contains("runs") || !(*json)["runs"].is_array()) {
    return Status::InvalidArgument(dir + "/runs.json: expected an object with a 'runs' array");
  }
  std::vector<RunRecord> runs;
  for (size_t i = 0; i < (*json)["runs"].size(); ++i) {
    auto r = RunRecordFromJson((*json)["runs"][i], fmt::format("{}/runs.json: runs[{}]", dir, i));
    if (!r.ok()) return r.status();
    runs.push_back(std::move(*r));
  }
  return runs;
}

double LoadAverage1() {
  std::ifstream in("/proc/loadavg");
  double load = -1;
  if (!(in >> load)) return -1;
  return load;
}

double MeanCpuMhz() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  double sum = 0;
  int cpus = 0;
  while (std::getline(in, line)) {
    if (line.rfind("cpu MHz", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    char* end = nullptr;
    const double mhz = std::strtod(line.c_str() + colon + 1, &end);
    if (end != line.c_str() + colon + 1 && std::isfinite(mhz) && mhz > 0) {
      sum += mhz;
      ++cpus;
    }
  }
  return cpus > 0 ? sum / cpus : -1;
}

CpuTimes ReadCpuTimes() {
  std::ifstream in("/proc/stat");
  std::string label;
  CpuTimes t;
  if (!(in >> label) || label != "cpu") return t;
  double field = 0;
  for (int i = 0; i < 10 && (in >> field); ++i) {
    if (i < 8) t.total += field;  // guest time is already inside user and nice
    if (i == 7) t.steal = field;
  }
  t.ok = t.total > 0;
  return t;
}

double StealFraction(const CpuTimes& before, const CpuTimes& after) {
  // /proc/stat counts in ticks of 10 ms: over a window shorter than about a CPU-second one tick of
  // steal is several percent, so such a window says nothing (unknown, never a reason to repeat).
  constexpr double kMinWindowTicks = 100;
  if (!before.ok || !after.ok || after.total - before.total < kMinWindowTicks) return -1;
  return std::max(0.0, (after.steal - before.steal) / (after.total - before.total));
}

std::string SelfExecutable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "simreplay";
  // A binary replaced while running (a rebuild) reads as "PATH (deleted)": the new file is at PATH.
  std::string path = p.string();
  const std::string deleted = " (deleted)";
  if (path.size() > deleted.size() && path.compare(path.size() - deleted.size(), deleted.size(), deleted) == 0) {
    path.resize(path.size() - deleted.size());
  }
  return path;
}

std::string FindCapturePath() {
  if (const char* env = std::getenv("SIMREPLAY_CAPTURE_PATH"); env != nullptr && *env != '\0') return env;
  std::filesystem::path dir = std::filesystem::path(SelfExecutable()).parent_path();
  for (int i = 0; i < 6 && !dir.empty(); ++i) {
    std::error_code ec;
    if (std::filesystem::exists(dir / "capture" / "simreplay_capture" / "__init__.py", ec))
      return (dir / "capture").string();
    if (dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  std::error_code ec;
  const std::filesystem::path tree = std::filesystem::path(SourceTree()) / "capture";
  if (std::filesystem::exists(tree / "simreplay_capture" / "__init__.py", ec)) return tree.string();
  return "";
}

}  // namespace simreplay::validation
