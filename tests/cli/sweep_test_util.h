// Helpers of the sweep and fault end-to-end tests: scenario directories built from the quickstart's
// model and trace, running the binary in the background (its own process group, so a test can kill
// the whole sweep as a scheduler would), and reading output files.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli_runner.h"  // Slurp

namespace simreplay::testing {

namespace fs = std::filesystem;

inline fs::path FreshDir(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// DIR/scenario.json: the quickstart scenario with `changes` merged in (JSON merge patch; a "sweep" in
// `changes` replaces the quickstart's axes), beside copies of its model and trace.
inline fs::path QuickstartScenario(const fs::path& dir, const nlohmann::json& changes) {
  const fs::path src = fs::path(SIMREPLAY_SOURCE_DIR) / "examples/quickstart";
  fs::create_directories(dir);
  for (const char* f : {"model.json", "trace.jsonl.gz"}) {
    fs::copy_file(src / f, dir / f, fs::copy_options::overwrite_existing);
  }
  auto scenario = nlohmann::json::parse(Slurp(src / "scenario.json"));
  nlohmann::json patch = changes;
  if (patch.contains("sweep")) {
    scenario["sweep"] = patch["sweep"];
    patch.erase("sweep");
  }
  scenario.merge_patch(patch);
  std::ofstream(dir / "scenario.json") << scenario.dump(2) << "\n";
  return dir / "scenario.json";
}

// Starts the binary with `args` in its own process group, output to `log`.
inline pid_t SpawnCli(const std::vector<std::string>& args, const fs::path& log) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    std::vector<char*> argv = {const_cast<char*>(SIMREPLAY_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(SIMREPLAY_BINARY, argv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  return pid;
}

// Exit code, or -signal.
inline int WaitCli(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

// Point files (not temporaries) in DIR/points.
inline std::vector<fs::path> PointFiles(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir / "points", ec)) {
    const std::string name = e.path().filename().string();
    if (name.ends_with(".json") && name.find(".tmp.") == std::string::npos) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Waits until `done()` holds, at most `limit_s`; true if it did.
template <typename F>
bool WaitFor(F done, double limit_s) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

// Pids whose parent is `parent` (from /proc/*/stat).
inline std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return children;
  while (dirent* e = ::readdir(proc)) {
    pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    std::string stat = Slurp(fs::path("/proc") / e->d_name / "stat");
    size_t close = stat.rfind(')');  // the command name may contain blanks
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent && state != 'Z') children.push_back(pid);
  }
  ::closedir(proc);
  return children;
}

}  // namespace simreplay::testing
