// Helpers shared by the verbs: mapping a Status to an exit code with one line on stderr, output
// directories, and progress display on a terminal.
#pragma once

#include <string>

#include "common/status.h"

namespace simreplay::cli {

// Prints "simreplay VERB: message" and returns the exit code for the status (3 bad input, 1 otherwise).
int Fail(const std::string& verb, const Status& status);
// Creates `dir` (and parents). Error names the directory.
Status MakeDirectories(const std::string& dir);
// True when stderr is a terminal (progress lines are shown only then).
bool StderrIsTty();

}  // namespace simreplay::cli
