// SharedCores driven from SimGrid: actors start jobs on a node's cores and block until theirs finish;
// one daemon actor per set of cores sleeps until the next job ends and wakes the actor waiting for it.
// A job costs its owner one blocking wait and the daemon one wake-up, whatever its number of phases.
#pragma once

#include <vector>

#include <simgrid/s4u.hpp>

#include "sim/shared_cores.h"

namespace simreplay::sim {

class CoreScheduler {
 public:
  // `host`: where the daemon actor runs (the node's CPU host).
  CoreScheduler(simgrid::s4u::Host* host, int cores, double speed, const models::CpuParams& cpu,
                double background_threads);

  // Starts a job now, from a simulated actor; Wait for it before starting another from the same actor
  // unless it runs beside it (ExecuteAsync).
  int Start(std::vector<CorePhase> phases, bool counts_as_running);
  // Blocks the calling actor until `job` has finished; returns its phase end times (the job is freed).
  std::vector<double> Wait(int job);
  // CPU phases running now of jobs that count as running (the wake-up delay's n).
  int RunningNow();
  // Storage busy seconds of kRead phases over the busy periods ended so far (since the last call).
  double TakeReadBusyS();
  // After the run, outside any actor: moves the cores to `t` without waking anyone.
  void Stop(double t);
  // The work of the phases a job not yet waited for has ended.
  PhaseWork EndedWork(int job) const { return cores_.EndedWork(job); }

 private:
  // Advances the cores to `t` and wakes the actors whose jobs finished.
  void Sync(double t);
  void Loop();

  simgrid::s4u::Host* host_;
  SharedCores cores_;
  bool daemon_started_ = false;
  simgrid::s4u::SemaphorePtr wake_;
  bool wake_sent_ = false;
  double wake_at_ = SharedCores::kNever;  // when the daemon wakes by itself
  std::vector<simgrid::s4u::SemaphorePtr> done_;  // per job: released when it finished and is waited for
  std::vector<char> finished_, waiting_;
  std::vector<int> just_finished_;
};

}  // namespace simreplay::sim
