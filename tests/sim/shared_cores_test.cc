// The node's cores (sim/shared_cores.h, sim/core_scheduler.h): processor sharing against closed forms,
// and the same random workloads run through SimGrid's own multi-core CPU model (executions and sleeps)
// and through the CoreScheduler: every phase ends at the same instant.
#include "sim/shared_cores.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <simgrid/s4u.hpp>

#include "common/random.h"
#include "sim/core_scheduler.h"
#include "sim/isolated_run.h"
#include "sim/platform.h"

namespace simreplay::sim {
namespace {

namespace sg4 = simgrid::s4u;
using Kind = CorePhase::Kind;

std::vector<double> RunAlone(SharedCores* cores, double now, std::vector<CorePhase> phases) {
  std::vector<int> finished;
  const int job = cores->Start(now, std::move(phases), true);
  cores->AdvanceTo(1e9, &finished);
  EXPECT_EQ(finished, std::vector<int>{job});
  std::vector<double> ends = cores->PhaseEnds(job);
  cores->Release(job);
  return ends;
}

TEST(SharedCores, PhasesRunInSequenceAtFullSpeedWithoutContention) {
  SharedCores cores(4, 2.0, models::CpuParams{}, 0);
  // a read of 1 s, 3 CPU seconds at twice the recorded speed, nothing, a read of 0.25 s
  const auto ends = RunAlone(&cores, 0, {{Kind::kRead, 1}, {Kind::kCpu, 3}, {Kind::kCpu, 0}, {Kind::kRead, 0.25}});
  EXPECT_EQ(ends, (std::vector<double>{1, 2.5, 2.5, 2.75}));
  EXPECT_DOUBLE_EQ(cores.TakeReadBusyS(), 1.25);
  EXPECT_EQ(cores.TakeReadBusyS(), 0);
}

TEST(SharedCores, RunningPhasesShareTheCoresEqually) {
  SharedCores cores(2, 1.0, models::CpuParams{}, 0);
  std::vector<int> finished;
  for (int i = 0; i < 3; ++i) cores.Start(0, {{Kind::kCpu, 1}}, true);
  EXPECT_EQ(cores.RunningNow(), 3);
  EXPECT_DOUBLE_EQ(cores.NextFinish(), 1.5);  // 3 phases on 2 cores: 2/3 of a core each
  cores.AdvanceTo(1.4, &finished);
  EXPECT_TRUE(finished.empty());
  cores.AdvanceTo(1.5, &finished);
  EXPECT_EQ(finished, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(cores.RunningNow(), 0);
  for (int job : finished) cores.Release(job);

  // One core: A (2 s) alone for 0.5 s, then A and B (1 s) at half a core each until B ends at 2.5 s;
  // A's last 0.5 s alone.
  SharedCores one(1, 1.0, models::CpuParams{}, 0);
  finished.clear();
  const int a = one.Start(0, {{Kind::kCpu, 2}}, true);
  one.AdvanceTo(0.5, &finished);
  const int b = one.Start(0.5, {{Kind::kCpu, 1}}, false);
  EXPECT_EQ(one.RunningNow(), 1);  // B does not count towards the wake-up delay's n
  one.AdvanceTo(10, &finished);
  EXPECT_EQ(finished, (std::vector<int>{b, a}));
  EXPECT_DOUBLE_EQ(one.PhaseEnds(b)[0], 2.5);
  EXPECT_DOUBLE_EQ(one.PhaseEnds(a)[0], 3.0);
}

TEST(SharedCores, BackgroundProcessesTakeAtMostTheirShare) {
  SharedCores light(1, 1.0, models::CpuParams{}, 0.3);  // the job gets the other 0.7 of the core
  EXPECT_DOUBLE_EQ(RunAlone(&light, 0, {{Kind::kCpu, 1}})[0], 1 / 0.7);
  SharedCores heavy(1, 1.0, models::CpuParams{}, 0.8);  // capped at its fair half
  EXPECT_DOUBLE_EQ(RunAlone(&heavy, 0, {{Kind::kCpu, 1}})[0], 2.0);
}

TEST(SharedCores, ContentionFactorsSlowEveryPhase) {
  models::CpuParams cpu;
  cpu.busy_core_slowdown = 0.5;
  SharedCores cores(2, 1.0, cpu, 0);
  std::vector<int> finished;
  cores.Start(0, {{Kind::kCpu, 1}}, true);
  cores.Start(0, {{Kind::kCpu, 1}}, true);
  // both cores busy: each phase runs at 1 / (1 + 0.5)
  EXPECT_DOUBLE_EQ(cores.NextFinish(), 1.5);
  cores.AdvanceTo(1.5, &finished);
  EXPECT_EQ(finished.size(), 2u);
}

TEST(SharedCores, ReadBusyTimeIsTheUnionOfOverlappingReads) {
  SharedCores cores(2, 1.0, models::CpuParams{}, 0);
  std::vector<int> finished;
  cores.Start(0, {{Kind::kRead, 1, 100}, {Kind::kCpu, 1}}, true);
  cores.AdvanceTo(0.5, &finished);
  const int second = cores.Start(0.5, {{Kind::kRead, 1.5, 50}}, true);
  cores.AdvanceTo(1.5, &finished);
  EXPECT_DOUBLE_EQ(cores.TakeReadBusyS(), 0);  // still reading
  EXPECT_EQ(cores.EndedWork(0).cpu_s, 0);
  EXPECT_EQ(cores.EndedWork(0).read_bytes, 100);
  EXPECT_EQ(cores.EndedWork(second).read_bytes, 0);
  cores.AdvanceTo(5, &finished);
  EXPECT_DOUBLE_EQ(cores.TakeReadBusyS(), 2.0);  // [0, 2)
  EXPECT_EQ(cores.EndedWork(0).cpu_s, 1);
}

// --- the same workload through SimGrid's CPU model and through the CoreScheduler ---------------------

struct Workload {
  int cores;
  models::CpuParams cpu;
  double background_threads;
  int actors, jobs_per_actor;
  uint64_t seed;
};

// Per actor, its jobs; per job, its phases: random reads and CPU work, some of no duration.
std::vector<std::vector<std::vector<CorePhase>>> MakeJobs(const Workload& w) {
  Rng rng(w.seed);
  std::vector<std::vector<std::vector<CorePhase>>> jobs(static_cast<size_t>(w.actors));
  for (auto& actor : jobs) {
    for (int j = 0; j < w.jobs_per_actor; ++j) {
      std::vector<CorePhase> phases;
      const int n = 1 + static_cast<int>(rng.Unit() * 6);
      for (int p = 0; p < n; ++p) {
        const double u = rng.Unit();
        const double seconds = rng.Unit() < 0.1 ? 0 : 0.001 + 0.05 * rng.Unit();
        phases.push_back({u < 0.4 ? Kind::kRead : Kind::kCpu, seconds});
      }
      actor.push_back(phases);
    }
  }
  return jobs;
}

sg4::Host* MakeHost(const Workload& w, double speed) {
  auto* zone = sg4::create_full_zone("node");
  auto* host = zone->create_host("cpu", speed);
  host->set_core_count(w.cores);
  const models::CpuParams cpu = w.cpu;
  const int cores = w.cores;
  if (cpu.busy_core_slowdown > 0 || cpu.oversubscription_overhead > 0) {
    host->set_sharing_policy(sg4::Host::SharingPolicy::NONLINEAR, [cpu, cores](double capacity, int n) {
      return capacity / cores * models::CoreCapacity(cpu, cores, n);
    });
  }
  zone->seal();
  return host;
}

std::string Format(const std::vector<std::vector<double>>& ends) {
  std::ostringstream out;
  for (const auto& actor : ends) {
    for (double t : actor) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g ", t);
      out << buf;
    }
    out << "\n";
  }
  return out.str();
}

std::vector<double> Parse(const std::string& line) {
  std::istringstream in(line);
  std::vector<double> values;
  double v;
  while (in >> v) values.push_back(v);
  return values;
}

// Every phase's end, actor by actor: SimGrid executions and sleeps (the former CPU model) or CoreScheduler jobs.
Result<std::string> RunWorkload(const Workload& w, bool through_scheduler) {
  int argc = 2;
  char name[] = "test", log[] = "--log=root.thresh:critical";
  char* argv[] = {name, log};
  sg4::Engine engine(&argc, argv);
  constexpr double kSpeed = 1.5;  // a core scale other than 1
  sg4::Host* host = MakeHost(w, kSpeed * kFlopsPerCpuSecond);
  const auto jobs = MakeJobs(w);
  std::vector<std::vector<double>> ends(jobs.size());
  auto scheduler = std::make_unique<CoreScheduler>(host, w.cores, kSpeed, w.cpu, w.background_threads);
  if (!through_scheduler) {
    for (int i = 0; i < static_cast<int>(std::ceil(w.background_threads)); ++i) {
      const double share = std::min(1.0, w.background_threads - i);
      sg4::Actor::create("background", host, [host, share] {
        sg4::this_actor::exec_init(1e30)->set_bound(share * host->get_speed())->start()->wait();
      })->daemonize();
    }
  }
  for (size_t a = 0; a < jobs.size(); ++a) {
    sg4::Actor::create("actor", host, [&, a] {
      for (const auto& phases : jobs[a]) {
        if (through_scheduler) {
          const auto job_ends = scheduler->Wait(scheduler->Start(phases, true));
          ends[a].insert(ends[a].end(), job_ends.begin(), job_ends.end());
          continue;
        }
        for (const CorePhase& p : phases) {
          if (p.kind == Kind::kCpu && p.seconds > 0) {
            sg4::this_actor::execute(p.seconds * kFlopsPerCpuSecond);
          } else if (p.seconds > 0) {
            sg4::this_actor::sleep_for(p.seconds);
          }
          ends[a].push_back(sg4::Engine::get_clock());
        }
      }
    });
  }
  engine.run();
  return Format(ends);
}

void ExpectSameEnds(const Workload& w) {
  const auto results =
      RunIsolated({[&w] { return RunWorkload(w, false); }, [&w] { return RunWorkload(w, true); }}, 1);
  ASSERT_TRUE(results[0].ok()) << results[0].status().message();
  ASSERT_TRUE(results[1].ok()) << results[1].status().message();
  std::istringstream simgrid(*results[0]), ours(*results[1]);
  std::string a, b;
  int actors = 0, phases = 0;
  while (std::getline(simgrid, a) && std::getline(ours, b)) {
    const auto x = Parse(a), y = Parse(b);
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], x[i], 1e-9 * std::max(1.0, x[i])) << "actor " << actors;
    phases += static_cast<int>(x.size());
    ++actors;
  }
  EXPECT_EQ(actors, w.actors);
  EXPECT_GT(phases, w.actors * w.jobs_per_actor);
}

TEST(CoreScheduler, MatchesSimGridsCpuModel) {
  ExpectSameEnds({4, models::CpuParams{}, 0, 10, 40, 1});  // 10 threads on 4 cores, often oversubscribed
  ExpectSameEnds({8, models::CpuParams{}, 0, 6, 40, 2});   // never oversubscribed
}

TEST(CoreScheduler, MatchesSimGridsCpuModelWithContentionAndBackground) {
  models::CpuParams cpu;
  cpu.busy_core_slowdown = 0.3;
  cpu.oversubscription_overhead = 0.2;
  ExpectSameEnds({2, cpu, 0, 5, 40, 3});
  ExpectSameEnds({3, cpu, 1.5, 7, 30, 4});
  ExpectSameEnds({2, models::CpuParams{}, 0.4, 4, 30, 5});
}

}  // namespace
}  // namespace simreplay::sim
