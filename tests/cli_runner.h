// Runs the simreplay binary under test (SIMREPLAY_BINARY, set by CMake) and captures its exit code and
// output, for the end-to-end tests of the CLI verbs.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace simreplay::testing {

struct CliOutcome {
  int exit_code;
  std::string output;  // stdout and stderr together
};

inline CliOutcome RunCli(const std::string& args) {
  std::string cmd = std::string(SIMREPLAY_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) out.append(buffer, n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace simreplay::testing
