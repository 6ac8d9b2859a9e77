#include "sim/shared_cores.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace simreplay::sim {

namespace {

using Entry = std::pair<double, int>;
constexpr auto kLater = std::greater<Entry>();  // min-heaps: earliest end first, then lowest job

void Push(std::vector<Entry>* heap, Entry e) {
  heap->push_back(e);
  std::push_heap(heap->begin(), heap->end(), kLater);
}

Entry Pop(std::vector<Entry>* heap) {
  std::pop_heap(heap->begin(), heap->end(), kLater);
  Entry e = heap->back();
  heap->pop_back();
  return e;
}

}  // namespace

PhaseWork WorkOf(const std::vector<CorePhase>& phases, size_t ended) {
  PhaseWork work;
  for (size_t i = 0; i < ended && i < phases.size(); ++i) {
    if (phases[i].kind == CorePhase::Kind::kCpu) {
      work.cpu_s += std::max(0.0, phases[i].seconds);
    } else {
      work.read_bytes += std::max<int64_t>(0, phases[i].read_bytes);
    }
  }
  return work;
}

SharedCores::SharedCores(int cores, double speed, const models::CpuParams& cpu, double background_threads)
    : cores_(std::max(1, cores)), speed_(speed), cpu_(cpu) {
  for (int i = 0; i < static_cast<int>(std::ceil(background_threads)); ++i) {
    background_.push_back(std::min(1.0, background_threads - i));
  }
  std::sort(background_.begin(), background_.end());
}

// Max-min sharing of the capacity among n CPU phases (each capped at one core) and the background
// executions (each capped at its share): the background shares below the fair share are served first.
double SharedCores::Rate(int cpu_phases) const {
  if (static_cast<size_t>(cpu_phases) < rates_.size() && rates_[static_cast<size_t>(cpu_phases)] > 0) {
    return rates_[static_cast<size_t>(cpu_phases)];
  }
  const int runnable = cpu_phases + static_cast<int>(background_.size());
  double capacity = models::CoreCapacity(cpu_, cores_, runnable);
  int sharing = runnable;
  for (double share : background_) {
    if (share >= capacity / sharing) break;
    capacity -= share;
    --sharing;
  }
  const double rate = std::min(1.0, capacity / sharing) * speed_;
  if (rates_.size() <= static_cast<size_t>(cpu_phases)) rates_.resize(static_cast<size_t>(cpu_phases) + 1, 0.0);
  rates_[static_cast<size_t>(cpu_phases)] = rate;
  return rate;
}

int SharedCores::Start(double now, std::vector<CorePhase> phases, bool counts_as_running) {
  AdvanceTo(now, &finished_early_);
  int job;
  if (!free_jobs_.empty()) {
    job = free_jobs_.back();
    free_jobs_.pop_back();
  } else {
    job = static_cast<int>(jobs_.size());
    jobs_.emplace_back();
    ends_.emplace_back();
    state_.phase.push_back(0);
  }
  jobs_[static_cast<size_t>(job)] = Job{std::move(phases), counts_as_running};
  ends_[static_cast<size_t>(job)].clear();
  state_.phase[static_cast<size_t>(job)] = 0;
  EnterPhase(&state_, job, &ends_, &finished_early_);
  return job;
}

void SharedCores::Release(int job) { free_jobs_.push_back(job); }

void SharedCores::EnterPhase(State* state, int job, std::vector<std::vector<double>>* ends,
                             std::vector<int>* finished) const {
  const auto& phases = jobs_[static_cast<size_t>(job)].phases;
  uint32_t& phase = state->phase[static_cast<size_t>(job)];
  for (; phase < phases.size(); ++phase) {
    const CorePhase& p = phases[phase];
    if (p.seconds > 0) {
      if (p.kind == CorePhase::Kind::kCpu) {
        Push(&state->cpu_ends, {state->virtual_s + p.seconds, job});
        ++state->cpu_phases;
        if (jobs_[static_cast<size_t>(job)].counts_as_running) ++state->running;
      } else {
        Push(&state->delay_ends, {state->now + p.seconds, job});
        if (state->reads++ == 0) state->reads_since = state->now;
      }
      return;
    }
    if (ends != nullptr) (*ends)[static_cast<size_t>(job)].push_back(state->now);
  }
  if (finished != nullptr) finished->push_back(job);
}

bool SharedCores::Step(State* state, double limit, std::vector<std::vector<double>>* ends,
                       std::vector<int>* finished) const {
  const double rate = state->cpu_phases > 0 ? Rate(state->cpu_phases) : 0;
  const double cpu_at = state->cpu_phases > 0
                            ? state->now + std::max(0.0, state->cpu_ends.front().first - state->virtual_s) / rate
                            : kNever;
  const double delay_at = state->delay_ends.empty() ? kNever : state->delay_ends.front().first;
  const double at = std::max(state->now, std::min(cpu_at, delay_at));
  if (at > limit || at == kNever) return false;
  state->virtual_s += rate * (at - state->now);
  state->now = at;
  int job;
  if (cpu_at <= delay_at) {
    const Entry e = Pop(&state->cpu_ends);
    job = e.second;
    state->virtual_s = std::max(state->virtual_s, e.first);  // the tag is exact; rounding is not
    --state->cpu_phases;
    if (jobs_[static_cast<size_t>(job)].counts_as_running) --state->running;
  } else {
    job = Pop(&state->delay_ends).second;
    if (--state->reads == 0) state->read_busy_s += state->now - state->reads_since;
  }
  if (ends != nullptr) (*ends)[static_cast<size_t>(job)].push_back(state->now);
  ++state->phase[static_cast<size_t>(job)];
  EnterPhase(state, job, ends, finished);
  return true;
}

void SharedCores::AdvanceTo(double t, std::vector<int>* finished) {
  if (finished != &finished_early_ && !finished_early_.empty()) {
    finished->insert(finished->end(), finished_early_.begin(), finished_early_.end());
    finished_early_.clear();
  }
  while (Step(&state_, t + kTimeSlackS, &ends_, finished)) {
  }
  if (t > state_.now) {  // no phase changes in between: time passes at the current rate
    if (state_.cpu_phases > 0) state_.virtual_s += Rate(state_.cpu_phases) * (t - state_.now);
    state_.now = t;
  }
}

double SharedCores::NextFinish() const {
  if (!finished_early_.empty()) return state_.now;
  State ahead = state_;
  std::vector<int> finished;
  while (finished.empty()) {
    if (!Step(&ahead, kNever, nullptr, &finished)) return kNever;
  }
  return ahead.now;
}

double SharedCores::TakeReadBusyS() {
  const double busy = state_.read_busy_s;
  state_.read_busy_s = 0;
  return busy;
}

}  // namespace simreplay::sim
