#include "scenarios/memory_limit.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "scenarios/scenario.h"

namespace simreplay::scenarios {

namespace {

constexpr const char* kLimitVariable = "SIMREPLAY_MEMORY_LIMIT";

// "8G", "512M", "1073741824": bytes (suffixes are powers of 1024); < 0 when it is not one of those.
double ParseBytes(const std::string& text) {
  size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (...) {
    return -1;
  }
  std::string suffix = text.substr(used);
  if (!suffix.empty() && (suffix.back() == 'B' || suffix.back() == 'b')) suffix.pop_back();
  if (suffix.size() > 1) return -1;
  const std::string units = " KMGT";
  const size_t power =
      suffix.empty() ? 0 : units.find(static_cast<char>(std::toupper(static_cast<unsigned char>(suffix[0]))));
  if (power == std::string::npos || (power == 0 && !suffix.empty()) || value <= 0) return -1;
  return value * std::pow(1024.0, static_cast<double>(power));
}

// /proc/meminfo's MemTotal in bytes (0 when unreadable).
double MemTotalBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemTotal:") return kib * 1024;
  }
  return 0;
}

// This process's cgroup (v2) memory.max in bytes (0: none, or no cgroup v2).
double CgroupLimitBytes() {
  std::ifstream cgroup("/proc/self/cgroup");
  std::string line;
  while (std::getline(cgroup, line)) {
    if (line.rfind("0::", 0) != 0) continue;
    std::ifstream max("/sys/fs/cgroup" + line.substr(3) + "/memory.max");
    std::string value;
    if (max >> value && value != "max") return std::max(0.0, ParseBytes(value));
  }
  return 0;
}

}  // namespace

Result<MemoryLimit> MachineMemoryLimit() {
  if (const char* set = std::getenv(kLimitVariable); set != nullptr && *set != '\0') {
    const double bytes = ParseBytes(set);
    if (bytes <= 0) {
      return Status::InvalidArgument(fmt::format("{}={}: not a size (bytes, or a number with K, M, G or T)",
                                                 kLimitVariable, set));
    }
    return MemoryLimit{bytes, kLimitVariable};
  }
  const double ram = MemTotalBytes(), cgroup = CgroupLimitBytes();
  const bool by_cgroup = cgroup > 0 && (ram <= 0 || cgroup < ram);
  const double total = by_cgroup ? cgroup : ram;
  if (total <= 0) return MemoryLimit{kMaxSimulationBytes, "no machine memory readable: the simulator's own limit"};
  return MemoryLimit{kMachineMemoryShare * total,
                     fmt::format("{:.0f}% of the {}'s {}", 100 * kMachineMemoryShare,
                                 by_cgroup ? "cgroup" : "machine", ShowGigabytes(total))};
}

double SimulationMemoryLimitBytes() {
  auto machine = MachineMemoryLimit();
  return machine.ok() ? std::min(kMaxSimulationBytes, machine->bytes) : kMaxSimulationBytes;
}

std::string ShowGigabytes(double bytes) {
  const double gb = bytes / 1e9;
  if (gb >= 10) return fmt::format("{:.0f} GB", gb);
  return gb >= 1 ? fmt::format("{:.1f} GB", gb) : fmt::format("{:.2f} GB", gb);
}

std::string DescribeSimulationMemoryLimit() {
  auto machine = MachineMemoryLimit();
  if (!machine.ok() || machine->bytes >= kMaxSimulationBytes) {
    return "the " + ShowGigabytes(kMaxSimulationBytes) + " limit";
  }
  if (machine->source == kLimitVariable) {
    return fmt::format("the {} limit ({})", ShowGigabytes(machine->bytes), kLimitVariable);
  }
  return fmt::format("the {} limit ({}; {} sets another)", ShowGigabytes(machine->bytes), machine->source,
                     kLimitVariable);
}

}  // namespace simreplay::scenarios
