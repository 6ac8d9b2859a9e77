#include "sim/core_scheduler.h"

#include <algorithm>
#include <utility>

namespace simreplay::sim {

namespace {
namespace sg4 = simgrid::s4u;
}  // namespace

CoreScheduler::CoreScheduler(sg4::Host* host, int cores, double speed, const models::CpuParams& cpu,
                             double background_threads)
    : host_(host), cores_(cores, speed, cpu, background_threads), wake_(sg4::Semaphore::create(0)) {}

void CoreScheduler::Sync(double t) {
  cores_.AdvanceTo(t, &just_finished_);
  if (just_finished_.empty()) return;
  // Releasing a semaphore is a simcall: other actors may run (and Sync) before it returns, so the
  // finished jobs are taken off the shared list and all marked before anyone is woken.
  std::vector<int> finished;
  finished.swap(just_finished_);
  for (int job : finished) finished_[static_cast<size_t>(job)] = 1;
  for (int job : finished) {
    if (waiting_[static_cast<size_t>(job)]) done_[static_cast<size_t>(job)]->release();
  }
}

int CoreScheduler::Start(std::vector<CorePhase> phases, bool counts_as_running) {
  const double now = sg4::Engine::get_clock();
  Sync(now);
  const int job = cores_.Start(now, std::move(phases), counts_as_running);
  if (static_cast<size_t>(job) >= done_.size()) {
    done_.resize(static_cast<size_t>(job) + 1);
    finished_.resize(static_cast<size_t>(job) + 1, 0);
    waiting_.resize(static_cast<size_t>(job) + 1, 0);
  }
  Sync(now);  // a job of no duration has finished already
  if (!daemon_started_) {
    daemon_started_ = true;
    sg4::Actor::create(host_->get_name() + "-cores", host_, [this] { Loop(); })->daemonize();
  } else if (!wake_sent_ && wake_at_ > now + SharedCores::kTimeSlackS && cores_.NextFinish() < wake_at_) {
    // (A daemon that was woken, or is due now, looks ahead again before it sleeps: no need to here.)
    wake_sent_ = true;  // the daemon sleeps past the next end now: wake it to sleep again, shorter
    wake_->release();
  }
  return job;
}

std::vector<double> CoreScheduler::Wait(int job) {
  const auto j = static_cast<size_t>(job);
  if (!finished_[j]) {
    if (!done_[j]) done_[j] = sg4::Semaphore::create(0);
    waiting_[j] = 1;
    done_[j]->acquire();
    waiting_[j] = 0;
  }
  finished_[j] = 0;
  std::vector<double> ends = cores_.PhaseEnds(job);
  cores_.Release(job);
  return ends;
}

int CoreScheduler::RunningNow() {
  Sync(sg4::Engine::get_clock());
  return cores_.RunningNow();
}

double CoreScheduler::TakeReadBusyS() {
  Sync(sg4::Engine::get_clock());
  return cores_.TakeReadBusyS();
}

void CoreScheduler::Stop(double t) {
  cores_.AdvanceTo(t, &just_finished_);
  just_finished_.clear();
}

void CoreScheduler::Loop() {
  while (true) {
    // The actors woken at this instant start their next jobs first, so that one look-ahead covers them.
    sg4::this_actor::yield();
    wake_at_ = cores_.NextFinish();
    wake_sent_ = false;
    bool timed_out = false;
    if (wake_at_ == SharedCores::kNever) {
      wake_->acquire();
    } else {
      timed_out = wake_->acquire_timeout(std::max(0.0, wake_at_ - sg4::Engine::get_clock()));
    }
    const double now = sg4::Engine::get_clock();
    Sync(timed_out ? std::max(now, wake_at_) : now);
  }
}

}  // namespace simreplay::sim
