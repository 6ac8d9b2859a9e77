#include "sim/isolated_run.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

namespace simreplay::sim {

namespace {

// The child writes one status byte ('0' ok, '1' error) and then the payload or the error message.
void ChildMain(const IsolatedJob& job, int fd) {
  std::string out;
  try {
    auto result = job();
    out = result.ok() ? "0" + *result : "1" + result.status().message();
  } catch (const std::exception& e) {
    out = std::string("1internal error: ") + e.what();
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
  std::string data;
};

}  // namespace

std::vector<Result<std::string>> RunIsolated(const std::vector<IsolatedJob>& jobs, int parallel,
                                             const std::function<void(size_t, size_t)>& on_done) {
  std::vector<Result<std::string>> results(jobs.size(), Result<std::string>(Status::Internal("not run")));
  std::map<pid_t, Child> running;
  size_t next = 0, finished = 0;
  if (parallel < 1) parallel = 1;
  while (finished < jobs.size()) {
    while (next < jobs.size() && static_cast<int>(running.size()) < parallel) {
      int fds[2];
      if (::pipe(fds) != 0) {
        results[next] = Status::IoError(std::string("pipe: ") + std::strerror(errno));
        ++next;
        ++finished;
        continue;
      }
      std::fflush(nullptr);  // or buffered output is duplicated in the child
      pid_t pid = ::fork();
      if (pid == 0) {
        ::close(fds[0]);
        ChildMain(jobs[next], fds[1]);
      }
      ::close(fds[1]);
      if (pid < 0) {
        ::close(fds[0]);
        results[next] = Status::IoError(std::string("fork: ") + std::strerror(errno));
        ++finished;
      } else {
        running[pid] = Child{next, fds[0], {}};
      }
      ++next;
    }
    if (running.empty()) continue;
    // Drain every child's pipe (a child blocks when its pipe is full), then reap finished ones.
    std::vector<pollfd> polls;
    for (auto& [pid, child] : running) polls.push_back({child.fd, POLLIN, 0});
    ::poll(polls.data(), polls.size(), -1);
    size_t i = 0;
    std::vector<pid_t> closed;
    for (auto& [pid, child] : running) {
      if (polls[i++].revents == 0) continue;
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
      ::waitpid(pid, &wstatus, 0);
      if (WIFSIGNALED(wstatus)) {
        results[child.job] =
            Status::Internal("simulation process died with signal " + std::to_string(WTERMSIG(wstatus)));
      } else if (child.data.empty()) {
        results[child.job] = Status::Internal("simulation process produced no result");
      } else if (child.data[0] == '0') {
        results[child.job] = child.data.substr(1);
      } else {
        results[child.job] = Status::Internal(child.data.substr(1));
      }
      ++finished;
      if (on_done) on_done(finished, jobs.size());
    }
  }
  return results;
}

}  // namespace simreplay::sim
