// Helpers shared by the fuzz targets: the parsers under test read files, so each input is written to
// one scratch file per process (in $SIMREPLAY_FUZZ_TMPDIR, /dev/shm or /tmp) and parsed from there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace simreplay::fuzz {

// A scratch path unique to this process, ending in `suffix` (".jsonl", ".json.gz", ...). The file is
// removed when the process exits normally.
std::string ScratchPath(std::string_view suffix);

// Writes `size` bytes to `path` (truncating). Aborts on failure: a fuzz run without its input is broken.
void WriteFileOrDie(const std::string& path, const uint8_t* data, size_t size);

// Aborts (so libFuzzer reports a crash) with `what` when `condition` is false. For properties every
// parser owes its caller, e.g. "an error message starts with the file name".
void Require(bool condition, const std::string& what);

}  // namespace simreplay::fuzz
