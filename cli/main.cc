// simreplay: one binary, a table of verbs (cli/verb_registry.h). Fatal exits happen only here.
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/verb_registry.h"

namespace simreplay::cli {

std::map<std::string, Verb>& VerbTable() {
  static std::map<std::string, Verb> table;
  return table;
}

namespace {

void PrintUsage(FILE* out) {
  std::fprintf(out,
               "simreplay: predict whether a data pipeline keeps the GPUs fed\n\n"
               "usage: simreplay VERB [options]    (simreplay VERB --help for a verb's options)\n\n"
               "verbs:\n");
  for (const auto& [name, verb] : VerbTable()) {
    std::fprintf(out, "  %-12s %s\n", name.c_str(), verb.help.c_str());
  }
  std::fprintf(out,
               "\nexit codes: 0 ok, 1 failure, 2 bad command line, 3 bad input file, 4 a requested "
               "check failed\n");
}

}  // namespace
}  // namespace simreplay::cli

int main(int argc, char** argv) {
  using namespace simreplay::cli;
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    PrintUsage(argc < 2 ? stderr : stdout);
    return argc < 2 ? kExitUsage : kExitOk;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    std::printf("simreplay 0.1.0\n");
    return kExitOk;
  }
  auto it = VerbTable().find(argv[1]);
  if (it == VerbTable().end()) {
    std::fprintf(stderr, "simreplay: unknown verb '%s' (see simreplay --help)\n", argv[1]);
    return kExitUsage;
  }
  std::string name = std::string("simreplay ") + argv[1];
  argv[1] = name.data();
  return it->second.handler(argc - 1, argv + 1);
}
