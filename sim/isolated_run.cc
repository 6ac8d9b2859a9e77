#include "sim/isolated_run.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

#include <fmt/format.h>

namespace simreplay::sim {

namespace {

using Clock = std::chrono::steady_clock;

// The child writes one status byte (the Status::Code as a digit, '0' = ok) and then the payload or
// the error message; the parent rebuilds a Status of the same code.
char CodeByte(Status::Code code) { return static_cast<char>('0' + static_cast<int>(code)); }

Status StatusOf(char code_byte, std::string message) {
  switch (code_byte - '0') {
    case static_cast<int>(Status::Code::kInvalidArgument):
      return Status::InvalidArgument(std::move(message));
    case static_cast<int>(Status::Code::kNotFound):
      return Status::NotFound(std::move(message));
    case static_cast<int>(Status::Code::kCorruption):
      return Status::Corruption(std::move(message));
    case static_cast<int>(Status::Code::kIoError):
      return Status::IoError(std::move(message));
    case static_cast<int>(Status::Code::kInternal):
      return Status::Internal(std::move(message));
    default:
      return Status::Internal("simulation process wrote a malformed result (status byte " +
                              std::to_string(static_cast<int>(static_cast<unsigned char>(code_byte))) + ")");
  }
}

[[noreturn]] void ChildMain(const IsolatedJob& job, int fd, pid_t parent) {
  // Die with the parent: a killed sweep must not leave simulations running on the node.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);
  std::string out;
  try {
    auto result = job();
    out = result.ok() ? std::string(1, CodeByte(Status::Code::kOk)) + *result
                      : std::string(1, CodeByte(result.status().code())) + result.status().message();
  } catch (const std::exception& e) {
    out = std::string(1, CodeByte(Status::Code::kInternal)) + "internal error: " + e.what();
  }
  size_t written = 0;
  while (written < out.size()) {
    ssize_t n = ::write(fd, out.data() + written, out.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  ::close(fd);
  std::fflush(nullptr);
  ::_exit(0);
}

struct Child {
  size_t job;
  int fd;
  Clock::time_point started;
  double bytes = 0;  // its estimated peak memory (IsolatedRunOptions::job_bytes)
  bool timed_out = false;
  bool cancelled = false;
  std::string data;
};

double JobBytes(const IsolatedRunOptions& options, size_t job) {
  return job < options.job_bytes.size() ? std::max(0.0, options.job_bytes[job]) : 0.0;
}

// Whether job `next` may start beside the running children: under --jobs, and within the memory budget
// (always when nothing else runs).
bool MayStart(const std::map<pid_t, Child>& running, size_t next, int parallel, const IsolatedRunOptions& options) {
  if (static_cast<int>(running.size()) >= parallel) return false;
  if (options.memory_budget_bytes <= 0 || running.empty()) return true;
  double bytes = JobBytes(options, next);
  for (const auto& [pid, child] : running) bytes += child.bytes;
  return bytes <= options.memory_budget_bytes;
}

// "signal 11 (SIGSEGV, Segmentation fault)".
std::string SignalName(int signal) {
  const char* abbrev = ::sigabbrev_np(signal);
  const char* text = ::strsignal(signal);
  return fmt::format("signal {} (SIG{}, {})", signal, abbrev ? abbrev : "?", text ? text : "?");
}

Result<std::string> OutcomeOf(const Child& child, int wstatus, const IsolatedRunOptions& options) {
  if (child.cancelled) return Status::Internal("cancelled");
  if (child.timed_out) {
    return Status::Internal(
        fmt::format("exceeded the {} of {:g} s and was killed", options.timeout_name, options.timeout_s));
  }
  if (WIFSIGNALED(wstatus)) return Status::Internal("simulation process died with " + SignalName(WTERMSIG(wstatus)));
  if (child.data.empty()) {
    return Status::Internal(fmt::format("simulation process ended without a result (exit status {})",
                                        WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1));
  }
  if (child.data[0] == CodeByte(Status::Code::kOk)) return child.data.substr(1);
  return StatusOf(child.data[0], child.data.substr(1));
}

// Milliseconds poll() may sleep before the next child reaches its time limit (-1: no limit).
int PollTimeoutMs(const std::map<pid_t, Child>& running, const IsolatedRunOptions& options) {
  if (options.timeout_s <= 0) return -1;
  double earliest_s = 1e18;
  const auto now = Clock::now();
  for (const auto& [pid, child] : running) {
    if (child.timed_out) continue;
    double left_s = options.timeout_s - std::chrono::duration<double>(now - child.started).count();
    earliest_s = std::min(earliest_s, left_s);
  }
  if (earliest_s >= 1e17) return -1;
  return static_cast<int>(std::clamp(std::ceil(earliest_s * 1000), 0.0, 1e9));
}

}  // namespace

std::vector<Result<std::string>> RunIsolated(const std::vector<IsolatedJob>& jobs, const IsolatedRunOptions& options) {
  std::vector<Result<std::string>> results(jobs.size(), Result<std::string>(Status::Internal("cancelled")));
  std::map<pid_t, Child> running;
  size_t next = 0, finished = 0;
  bool stopping = false;
  const int parallel = std::max(1, options.parallel);
  const pid_t self = ::getpid();
  auto deliver = [&](size_t job, Result<std::string> result) {
    results[job] = std::move(result);
    ++finished;
    if (options.on_result && !stopping && !options.on_result(job, results[job])) stopping = true;
  };
  while (finished < jobs.size()) {
    if (stopping) {
      // Kill what runs; what never started stays "cancelled".
      for (auto& [pid, child] : running) {
        child.cancelled = true;
        ::kill(pid, SIGKILL);
      }
      finished += jobs.size() - next;
      next = jobs.size();
      if (running.empty()) break;
    }
    while (next < jobs.size() && MayStart(running, next, parallel, options)) {
      int fds[2];
      if (::pipe(fds) != 0) {
        deliver(next++, Status::IoError(std::string("pipe: ") + std::strerror(errno)));
        continue;
      }
      std::fflush(nullptr);  // or buffered output is duplicated in the child
      pid_t pid = ::fork();
      if (pid == 0) {
        ::close(fds[0]);
        ChildMain(jobs[next], fds[1], self);
      }
      ::close(fds[1]);
      if (pid < 0) {
        ::close(fds[0]);
        deliver(next++, Status::IoError(std::string("fork: ") + std::strerror(errno)));
        continue;
      }
      running[pid] = Child{next, fds[0], Clock::now(), JobBytes(options, next), false, false, {}};
      ++next;
    }
    if (running.empty()) continue;
    // Drain every child's pipe (a child blocks when its pipe is full), then reap finished ones.
    std::vector<pollfd> polls;
    for (auto& [pid, child] : running) polls.push_back({child.fd, POLLIN, 0});
    ::poll(polls.data(), polls.size(), PollTimeoutMs(running, options));
    const auto now = Clock::now();
    size_t i = 0;
    std::vector<pid_t> closed;
    for (auto& [pid, child] : running) {
      const short revents = polls[i++].revents;
      if (options.timeout_s > 0 && !child.timed_out &&
          std::chrono::duration<double>(now - child.started).count() >= options.timeout_s) {
        child.timed_out = true;
        ::kill(pid, SIGKILL);  // its pipe then reaches end of file
      }
      if (revents == 0) continue;
      char buffer[65536];
      ssize_t n = ::read(child.fd, buffer, sizeof(buffer));
      if (n > 0) {
        child.data.append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        closed.push_back(pid);
      }
    }
    for (pid_t pid : closed) {
      Child child = std::move(running[pid]);
      running.erase(pid);
      ::close(child.fd);
      int wstatus = 0;
      while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
      }
      deliver(child.job, OutcomeOf(child, wstatus, options));
    }
  }
  return results;
}

std::vector<Result<std::string>> RunIsolated(const std::vector<IsolatedJob>& jobs, int parallel,
                                             const std::function<void(size_t, size_t)>& on_done) {
  IsolatedRunOptions options;
  options.parallel = parallel;
  size_t done = 0;
  if (on_done) {
    options.on_result = [&](size_t, const Result<std::string>&) {
      on_done(++done, jobs.size());
      return true;
    };
  }
  return RunIsolated(jobs, options);
}

}  // namespace simreplay::sim
