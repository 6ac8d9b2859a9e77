#include "cli/cli_util.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "cli/verb_registry.h"

extern "C" char** environ;

namespace simreplay::cli {

int ExitCodeOf(const Status& status) {
  switch (status.code()) {
    case Status::Code::kOk:
      return kExitOk;
    case Status::Code::kInvalidArgument:
    case Status::Code::kNotFound:
    case Status::Code::kCorruption:
      return kExitBadInput;
    default:
      return kExitFailure;
  }
}

int Fail(const std::string& verb, const Status& status) {
  std::fprintf(stderr, "%s: %s\n", verb.c_str(), status.message().c_str());
  return ExitCodeOf(status);
}

Status MakeDirectories(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError(dir + ": cannot create directory: " + ec.message());
  return Status::Ok();
}

bool StderrIsTty() { return ::isatty(STDERR_FILENO) != 0; }

std::string RankFoldingLine(const nlohmann::json& metrics) {
  if (!metrics.contains("cluster") || !metrics["cluster"].contains("rank_folding")) return "";
  const auto& cluster = metrics["cluster"];
  const auto& f = cluster["rank_folding"];
  const int nodes = cluster["nodes"].get<int>();
  if (f.contains("refused")) {
    return fmt::format(
        "rank folding refused: the ranks' waits differ within steps ({:.1f}% of the run), so all {} "
        "nodes were simulated",
        100 * f["wait_spread"].get<double>(), nodes);
  }
  return fmt::format(
      "rank folding: {} of {} nodes simulated in full, the others' ranks as the slowest of them each "
      "step (docs/performance.md, \"Rank folding\"){}",
      f["simulated_nodes"].get<int>(), nodes,
      f.contains("caveat") ? "; caveat: " + f["caveat"].get<std::string>() : "");
}

Status WriteAndPrintSweep(const std::string& out_dir, const std::string& scenario_file,
                          const std::vector<scenarios::SweepResult>& results) {
  SIMREPLAY_RETURN_IF_ERROR(MakeDirectories(out_dir));
  SIMREPLAY_RETURN_IF_ERROR(scenarios::WriteSweepFiles(out_dir, scenario_file, results));
  std::fputs(scenarios::SweepTable(results).c_str(), stdout);
  std::printf("accelerator: %s (%s)\n", results[0].result["accelerator"].get<std::string>().c_str(),
              results[0].result["accelerator_note"].get<std::string>().c_str());
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].result.contains("metrics")) continue;
    const std::string line = RankFoldingLine(results[i].result["metrics"]);
    if (line.empty()) continue;
    std::string point;
    for (const auto& [axis, value] : results[i].axes) point += (point.empty() ? "" : ", ") + axis + "=" + value.dump();
    std::printf("%s%s\n", results.size() > 1 ? ("point " + std::to_string(i) + " (" + point + "): ").c_str() : "",
                line.c_str());
  }
  for (const auto& w : scenarios::GroupedWarnings(results)) std::fprintf(stderr, "warning: %s\n", w.c_str());
  std::printf("wrote %s/results.csv, %s/results.json, %s/report.html\n", out_dir.c_str(), out_dir.c_str(),
              out_dir.c_str());
  return Status::Ok();
}

Result<std::string> RunCommand(const std::vector<std::string>& argv) {
  std::string shown;
  for (const auto& a : argv) shown += (shown.empty() ? "" : " ") + a;
  int fds[2];
  if (::pipe(fds) != 0) return Status::IoError(shown + ": pipe: " + std::strerror(errno));
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return Status::IoError(shown + ": fork: " + std::strerror(errno));
  }
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "%s: cannot run: %s\n", argv[0].c_str(), std::strerror(errno));
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string out;
  char buffer[4096];
  while (true) {
    ssize_t n = ::read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return Status::IoError(shown + ": failed (" +
                           (WIFEXITED(wstatus) ? "exit status " + std::to_string(WEXITSTATUS(wstatus))
                                               : "signal " + std::to_string(WTERMSIG(wstatus))) +
                           (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 127 ? ", not found in PATH?" : "") + ")");
  }
  return out;
}

Result<int> RunInTerminal(const std::vector<std::string>& argv, const std::vector<std::string>* env) {
  std::vector<std::string> args = argv, vars = env != nullptr ? *env : std::vector<std::string>();
  std::vector<char*> cargv, cenv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (auto& v : vars) cenv.push_back(v.data());
  cenv.push_back(nullptr);
  pid_t pid = 0;
  std::fflush(nullptr);
  if (int rc = ::posix_spawn(&pid, cargv[0], nullptr, nullptr, cargv.data(), env != nullptr ? cenv.data() : environ);
      rc != 0) {
    return Status::IoError(argv[0] + ": cannot run: " + std::strerror(rc));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Status::IoError(argv[0] + ": lost the child process: " + std::strerror(errno));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string AbsolutePath(const std::string& path) {
  std::error_code ec;
  auto absolute = std::filesystem::absolute(path, ec);
  std::string normal = (ec ? std::filesystem::path(path) : absolute).lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  return normal;
}

}  // namespace simreplay::cli
