#include "cli/cli_util.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "cli/verb_registry.h"

namespace simreplay::cli {

int Fail(const std::string& verb, const Status& status) {
  std::fprintf(stderr, "%s: %s\n", verb.c_str(), status.message().c_str());
  switch (status.code()) {
    case Status::Code::kInvalidArgument:
    case Status::Code::kNotFound:
    case Status::Code::kCorruption:
      return kExitBadInput;
    default:
      return kExitFailure;
  }
}

Status MakeDirectories(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError(dir + ": cannot create directory: " + ec.message());
  return Status::Ok();
}

bool StderrIsTty() { return ::isatty(STDERR_FILENO) != 0; }

}  // namespace simreplay::cli
