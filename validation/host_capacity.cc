#include "validation/host_capacity.h"

#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "models/page_fault_churn.h"

namespace simreplay::validation {
namespace {

using Clock = std::chrono::steady_clock;

// Where the workloads' results go, so that the optimiser cannot drop the loops.
volatile uint64_t g_keep = 0;

// A dependent 64-bit LCG: each step needs the last, so the compiler can neither vectorise nor skip it.
// Latency-bound: two copies on the two hyperthreads of one core both run near full speed, so the screen
// sees cores taken away, not cores shared. Tried on 2026-12-04: eight independent chains (throughput-
// bound) read a median 0.89 with 14 of 60 screens under 0.85 on the quiet VM, no bound separates that
// from a degraded host, and it saw the slow pipeline state no better (docs/validation-log.md).
uint64_t Spin(uint64_t iterations, uint64_t seed) {
  uint64_t x = seed;
  for (uint64_t i = 0; i < iterations; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  return x;
}

double TimedSpin(uint64_t iterations, uint64_t seed, uint64_t* sink) {
  const auto t0 = Clock::now();
  *sink += Spin(iterations, seed);
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int UsableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

// Iterations that take about `window_s` on one core, measured once per process (a short trial scaled up).
uint64_t IterationsFor(double window_s) {
  static const double per_iteration_s = [] {
    uint64_t sink = 0;
    const uint64_t trial = 2'000'000;
    double best = TimedSpin(trial, 1, &sink);
    for (int i = 0; i < 2; ++i) best = std::min(best, TimedSpin(trial, 2 + i, &sink));
    g_keep = sink;
    return std::max(best, 1e-6) / trial;
  }();
  return std::max<uint64_t>(100'000, static_cast<uint64_t>(window_s / per_iteration_s));
}

// Microseconds per page to fault in 8 MiB of fresh anonymous memory; -1 when it cannot be mapped.
double FreshPageTouchUs() {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t bytes = size_t{8} << 20;
  const auto t0 = Clock::now();
  void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) return -1;
  auto* p = static_cast<volatile char*>(map);
  for (size_t i = 0; i < bytes; i += page) p[i] = 1;
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  ::munmap(map, bytes);
  return 1e6 * s / static_cast<double>(bytes / page);
}

}  // namespace

nlohmann::json HostCapacity::ToJson() const {
  return {{"cores", cores},
          {"single_core_s", single_core_s},
          {"all_cores_s", all_cores_s},
          {"delivered_cores", delivered_cores},
          {"delivered_share", delivered_share()},
          {"fresh_page_touch_us", fresh_page_touch_us}};
}

std::string FaultCostHint(const HostCapacity& h) {
  if (h.fresh_page_touch_us <= kExpensiveFaultUs) return "";
  return fmt::format(
      "page faults are expensive on this host ({:.1f} us to fault in a fresh page): DataLoader workers forked "
      "from a process that never decoded can lose much of their throughput to glibc malloc returning and "
      "re-faulting each image's buffers (`simreplay diagnose` on a capture measures their share); A/B your "
      "loader with {} (docs/modelling.md, \"Page-fault churn\")",
      h.fresh_page_touch_us, models::kMallocChurnFix);
}

Result<HostCapacity> HostCapacityFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return Status::InvalidArgument("host screen: not an object");
  HostCapacity h;
  try {
    h.cores = j.at("cores").get<int>();
    h.single_core_s = j.at("single_core_s").get<double>();
    h.all_cores_s = j.at("all_cores_s").get<double>();
    h.delivered_cores = j.at("delivered_cores").get<double>();
    h.fresh_page_touch_us = j.value("fresh_page_touch_us", -1.0);  // screens before it was measured
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("host screen: ") + e.what());
  }
  const bool finite = std::isfinite(h.single_core_s) && std::isfinite(h.all_cores_s) &&
                      std::isfinite(h.delivered_cores) && std::isfinite(h.fresh_page_touch_us);
  if (h.cores < 0 || !finite || h.single_core_s < 0 || h.all_cores_s < 0 || h.delivered_cores < 0 ||
      h.delivered_cores > h.cores) {
    return Status::InvalidArgument("host screen: cores must be >= 0, times >= 0 and delivered_cores in [0, cores]");
  }
  return h;
}

HostCapacity MeasureHostCapacity(double window_s) {
  HostCapacity h;
  h.cores = UsableCores();
  const uint64_t n = IterationsFor(window_s);
  uint64_t sink = 0;
  // Alone, then all at once, then alone again: a drift of the host's speed over the screen touches the
  // lone windows on both sides of the parallel one.
  const double alone_before = TimedSpin(n, 11, &sink);
  std::vector<double> per_thread(h.cores, 0.0);
  std::vector<uint64_t> sinks(h.cores, 0);
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < h.cores; ++t) {
      threads.emplace_back([&, t] { per_thread[t] = TimedSpin(n, 100 + t, &sinks[t]); });
    }
    for (auto& th : threads) th.join();
  }
  const double alone_after = TimedSpin(n, 12, &sink);
  h.fresh_page_touch_us = FreshPageTouchUs();
  h.single_core_s = (alone_before + alone_after) / 2;
  double sum = 0;
  for (double s : per_thread) sum += s;
  h.all_cores_s = sum / h.cores;
  h.delivered_cores = h.all_cores_s > 0 ? std::min<double>(h.cores, h.cores * h.single_core_s / h.all_cores_s) : 0;
  for (uint64_t s : sinks) sink ^= s;
  g_keep = sink;
  return h;
}

}  // namespace simreplay::validation
