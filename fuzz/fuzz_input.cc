#include "fuzz/fuzz_input.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace simreplay::fuzz {

namespace {

std::vector<std::string>* Created() {
  static auto* paths = new std::vector<std::string>();
  return paths;
}

void RemoveCreated() {
  for (const auto& p : *Created()) std::remove(p.c_str());
}

std::string ScratchDir() {
  if (const char* dir = std::getenv("SIMREPLAY_FUZZ_TMPDIR"); dir != nullptr && *dir != '\0') return dir;
  if (access("/dev/shm", W_OK) == 0) return "/dev/shm";
  return "/tmp";
}

}  // namespace

std::string ScratchPath(std::string_view suffix) {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(RemoveCreated); });
  std::string path = ScratchDir() + "/simreplay_fuzz." + std::to_string(getpid()) + "." +
                     std::to_string(Created()->size()) + std::string(suffix);
  Created()->push_back(path);
  return path;
}

void WriteFileOrDie(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || (size > 0 && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
}

void Require(bool condition, const std::string& what) {
  if (condition) return;
  std::fprintf(stderr, "fuzz property violated: %s\n", what.c_str());
  std::abort();
}

}  // namespace simreplay::fuzz
