// Runs the simreplay binary under test (SIMREPLAY_BINARY, set by CMake) and captures its exit code and
// output, for the end-to-end tests of the CLI verbs; and reads their output files.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace simreplay::testing {

struct CliOutcome {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// Runs a shell command line; its exit status and stdout + stderr.
inline CliOutcome RunShell(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  std::string out;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) out.append(buffer, n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

inline CliOutcome RunCli(const std::string& args) { return RunShell(std::string(SIMREPLAY_BINARY) + " " + args); }

// The whole file as bytes ("" when it cannot be read): outputs are compared byte for byte.
inline std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace simreplay::testing
