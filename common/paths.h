// The project's one resolver of relative paths: a path written in a file (a scenario's model or trace,
// a model's trace, an experiment's dataset) is relative to the directory of the file that names it,
// and a path stored in a file is written relative to that file's directory.
#pragma once

#include <string>

namespace simreplay {

// Directory part of a path: "." when it has none, "/" for a file at the root.
std::string DirectoryOf(const std::string& path);

// `path` resolved against `base_dir`: unchanged when empty or absolute, else base_dir + "/" + path
// (not normalised, so messages show the path as composed).
std::string ResolvePath(const std::string& base_dir, const std::string& path);

// `path`, written in the file `file`, resolved against that file's directory.
std::string ResolveBesideFile(const std::string& file, const std::string& path);

// The inverse: `path` as `file` should store it, relative to file's directory when both can be made
// absolute (normalised), else `path` unchanged.
std::string PathRelativeToFile(const std::string& path, const std::string& file);

}  // namespace simreplay
