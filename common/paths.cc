#include "common/paths.h"

#include <filesystem>
#include <system_error>

namespace simreplay {

std::string DirectoryOf(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string ResolvePath(const std::string& base_dir, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  return base_dir + "/" + path;
}

std::string ResolveBesideFile(const std::string& file, const std::string& path) {
  return ResolvePath(DirectoryOf(file), path);
}

std::string PathRelativeToFile(const std::string& path, const std::string& file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir = fs::path(file).parent_path();
  if (dir.empty()) dir = ".";
  fs::path abs_path = fs::absolute(path, ec);
  if (ec) return path;
  fs::path abs_dir = fs::absolute(dir, ec);
  if (ec) return path;
  fs::path rel = abs_path.lexically_normal().lexically_relative(abs_dir.lexically_normal());
  if (rel.empty()) return abs_path.lexically_normal().string();
  return rel.string();
}

}  // namespace simreplay
