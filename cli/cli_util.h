// Helpers shared by the verbs: mapping a Status to an exit code with one line on stderr, output
// directories, progress display on a terminal, the sweep summary that what-if and merge print, and
// running an external command (sbatch).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "scenarios/sweep_outputs.h"

namespace simreplay::cli {

// The exit code for a status: 3 for bad input (kInvalidArgument, kNotFound, kCorruption), else 1.
int ExitCodeOf(const Status& status);
// Prints "simreplay VERB: message" and returns ExitCodeOf(status).
int Fail(const std::string& verb, const Status& status);
// Creates `dir` (and parents). Error names the directory.
Status MakeDirectories(const std::string& dir);
// True when stderr is a terminal (progress lines are shown only then).
bool StderrIsTty();

// One line saying how a result's cluster was simulated when rank folding folded it or refused to
// (metrics.cluster.rank_folding, docs/performance.md "Rank folding"); "" otherwise.
std::string RankFoldingLine(const nlohmann::json& metrics);

// Writes DIR/results.{csv,json} and DIR/report.html and prints the table, the accelerator label and
// the files written (what-if and merge print the same).
Status WriteAndPrintSweep(const std::string& out_dir, const std::string& scenario_file,
                          const std::vector<scenarios::SweepResult>& results);

// Runs argv[0] (searched in PATH) with the arguments, stdin closed, stderr passed through, and returns
// its stdout. Fails (kIoError) when it cannot start or exits non-zero, naming the command.
Result<std::string> RunCommand(const std::vector<std::string>& argv);

// Runs argv[0] (a path) with the arguments and `env` (this process's environment when null), its
// output on this terminal, and returns its exit code (128 + the signal when a signal ended it). Fails
// (kIoError, naming the command) only when it cannot start.
Result<int> RunInTerminal(const std::vector<std::string>& argv, const std::vector<std::string>* env = nullptr);

// The absolute, normalised form of `path` (it need not exist).
std::string AbsolutePath(const std::string& path);

}  // namespace simreplay::cli
