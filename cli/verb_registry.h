// The table of `simreplay` verbs. Each verb lives in its own cli/verb_*.cc and adds itself with
// SIMREPLAY_REGISTER_VERB; main() looks verbs up here and prints them, sorted, in --help.
#pragma once

#include <map>
#include <string>

namespace simreplay::cli {

// A verb's handler gets argv with argv[0] = "simreplay VERB" and returns the process exit code.
using VerbHandler = int (*)(int argc, char** argv);

struct Verb {
  std::string name;
  std::string help;
  VerbHandler handler;
};

// Exit codes, documented in README.md ("Exit codes").
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;      // the operation ran and failed (simulation error, I/O error)
inline constexpr int kExitUsage = 2;        // bad command line
inline constexpr int kExitBadInput = 3;     // an input file is malformed or invalid
inline constexpr int kExitCheckFailed = 4;  // a check the user asked for failed (validation thresholds)

std::map<std::string, Verb>& VerbTable();

struct VerbRegistrar {
  VerbRegistrar(const char* name, const char* help, VerbHandler handler) {
    VerbTable()[name] = Verb{name, help, handler};
  }
};

}  // namespace simreplay::cli

#define SIMREPLAY_REGISTER_VERB(name, help, handler) \
  static ::simreplay::cli::VerbRegistrar simreplay_verb_registrar_##handler(name, help, handler)
