#include "calibrate/stages.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "calibrate/cost_regression.h"
#include "replay/manifest.h"

namespace simreplay::calibrate {

using replay::ManifestInt;

namespace {

// Worker samples in flight at each of `times_ns` (sorted or not): a sweep over start/end events.
std::vector<int> WorkerSamplesRunningAt(const TraceData& t, const std::vector<int64_t>& times_ns) {
  std::vector<std::pair<int64_t, int>> events;  // (time, +1 start / -1 end); ends sort before starts
  for (const auto& s : t.samples) {
    if (s.worker < 0) continue;
    events.push_back({s.t_start_ns + s.read_ns, +1});  // on a core: decode and augment, not the read
    events.push_back({s.t_start_ns + s.read_ns + s.decode_ns + s.augment_ns, -1});
  }
  std::sort(events.begin(), events.end());
  std::vector<size_t> order(times_ns.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return times_ns[a] < times_ns[b]; });
  std::vector<int> running(times_ns.size(), 0);
  size_t e = 0;
  int now = 0;
  for (size_t i : order) {
    while (e < events.size() && events[e].first <= times_ns[i]) now += events[e++].second;
    running[i] = std::max(0, now);
  }
  return running;
}

// gpu.step_host_cpu_after_fork_s: the mean excess over the steady step_host_cpu_s of the first steps
// after a later epoch's fork; without one in the traces, of the first epoch's (which also holds the
// run's one-time start-up work: an upper bound, said in the provenance).
void FitHostCpuAfterFork(const std::vector<double>& later, const std::vector<double>& first,
                         models::ModelParams* model, nlohmann::json* gpu_q) {
  const bool from_later = !later.empty();
  const std::vector<double>& steps = from_later ? later : first;
  if (steps.empty()) {
    SetProvenance(model, "gpu.step_host_cpu_after_fork_s", true,
                  "0: no step after a fork of workers in the traces (no workers, persistent ones, or no "
                  "epoch_start recorded)");
    return;
  }
  double excess = 0;
  for (double x : steps) excess += std::max(0.0, x - model->gpu.step_host_cpu_s);
  model->gpu.step_host_cpu_after_fork_s = excess / static_cast<double>(steps.size());
  SetProvenance(model, "gpu.step_host_cpu_after_fork_s", false,
                from_later ? fmt::format("mean excess host CPU over gpu.step_host_cpu_s of the first step after a "
                                         "later epoch's fork of workers ({} step(s))",
                                         steps.size())
                           : fmt::format("excess host CPU over gpu.step_host_cpu_s of the first epoch's first step "
                                         "({} rank(s)), which also holds the run's one-time start-up work: an "
                                         "upper bound (no later epoch started in the traces)",
                                         steps.size()));
  (*gpu_q)["host_cpu_after_fork"] = {{"steps", steps.size()},
                                     {"from", from_later ? "later epochs" : "the first epoch (an upper bound)"},
                                     {"mean_excess_s", model->gpu.step_host_cpu_after_fork_s}};
}

}  // namespace

Status FitGpu(const CalibrationInput& in, CalibrationDraft* d) {
  const std::vector<TraceData>& traces = in.traces;
  const TraceData& primary = in.primary();
  models::ModelParams& model = d->model;
  std::vector<std::string>& warnings = d->warnings;
  nlohmann::json gpu_q = nlohmann::json::object();
  std::map<int, std::vector<double>> by_batch_size;  // accelerator part of compute per micro-batch
  std::vector<double> host_cpu;                      // emulated steps: the loop thread's CPU per micro-batch
  // The same in the first step after a fork of workers (FindAfterForkSteps): later epochs', and the
  // first epoch's when it was a warm-up step.
  std::vector<double> after_later_fork, after_first_fork;
  std::string accel = "emulated";
  // The loop thread blocks while the accelerator works and wakes up late when the node's cores are
  // busy (cpu.wakeup_delay_*, fitted by the cpu stage): the measured part contains that delay at the
  // workers running then, which the simulator adds back for the configuration it predicts.
  const models::CpuParams& cpu = model.cpu;
  const bool wakeup = cpu.wakeup_delay_s > 0 || cpu.wakeup_delay_per_excess_s > 0;
  double wakeup_removed_s = 0;
  int64_t wakeup_steps = 0;
  int64_t warmup_steps = 0;
  double warmup_extra_s = 0;
  for (size_t ti = 0; ti < traces.size(); ++ti) {
    const TraceData& t = traces[ti];
    // The loop thread's CPU time ran beside the loader under the same shared-core slowdown, which the
    // simulator applies again for the configuration it predicts (cpu stage, cpu_ns_inflation).
    const double host_inflation = ti < d->cpu_ns_inflation.size() ? d->cpu_ns_inflation[ti] : 1.0;
    const StepWarmup warmup = FindStepWarmup(t);
    const AfterForkSteps forks = FindAfterForkSteps(t);
    warmup_steps += warmup.steps;
    warmup_extra_s = std::max(warmup_extra_s, warmup.extra_s);
    const int bs = ManifestInt(t.manifest, "loader", "batch_size", 0);
    const bool cuda = t.manifest.value("accelerator", "") == "cuda";
    const int cores = std::max<int>(1, ManifestInt(t.manifest, "hardware", "cores", 1));
    // One step record per micro-batch (the capture's bench) or per optimizer step.
    const bool per_micro = t.steps.size() >= t.batches.size() * 9 / 10;
    std::vector<int64_t> accel_end_ns;
    for (const auto& s : t.steps) accel_end_ns.push_back(s.t_start_ns + (s.accel_ns >= 0 ? s.accel_ns : s.compute_ns));
    // CUDA events time the GPU alone; an emulated step is the sleeping thread, wake-up included.
    const bool remove_wakeup = wakeup && !cuda;
    const std::vector<int> running = remove_wakeup ? WorkerSamplesRunningAt(t, accel_end_ns) : std::vector<int>();
    for (size_t i = 0; i < t.steps.size(); ++i) {
      const auto& s = t.steps[i];
      const double micro = per_micro ? 1.0 : static_cast<double>(s.micro_batches);
      const double host_s = static_cast<double>(s.cpu_ns) * kNs / micro / host_inflation;
      const bool has_host = !cuda && s.cpu_ns >= 0;
      if (warmup.is_warmup[i]) {  // one-time costs, not the steady step
        if (has_host && forks.first[i]) after_first_fork.push_back(host_s);
        continue;
      }
      double accel_ns = static_cast<double>(s.compute_ns);
      // An emulated step is the loop's CPU work and a sleep, one after the other: the sleep (marked,
      // or compute minus the CPU time) is the accelerator, the CPU work runs on the node's cores.
      if (has_host) {
        accel_ns = s.accel_ns >= 0 ? static_cast<double>(s.accel_ns)
                                   : std::max(0.0, static_cast<double>(s.compute_ns - s.cpu_ns));
        (forks.later[i] ? after_later_fork : host_cpu).push_back(host_s);
      }
      if (remove_wakeup) {
        const double removed_s = std::min(models::WakeupDelayS(cpu, running[i], cores), accel_ns * kNs);
        accel_ns -= removed_s / kNs;
        wakeup_removed_s += removed_s;
        ++wakeup_steps;
      }
      by_batch_size[bs].push_back(accel_ns * kNs / micro);
    }
    if (!t.steps.empty() && cuda) accel = "cuda";
  }
  const int primary_bs = ManifestInt(primary.manifest, "loader", "batch_size", 0);
  const std::vector<double>* v = by_batch_size.count(primary_bs) ? &by_batch_size[primary_bs] : nullptr;
  if (v == nullptr && !by_batch_size.empty()) v = &by_batch_size.begin()->second;
  if (v != nullptr && !v->empty()) {
    double mean = 0, m2 = 0, m3 = 0;
    for (double x : *v) mean += x;
    mean /= static_cast<double>(v->size());
    for (double x : *v) {
      m2 += (x - mean) * (x - mean);
      m3 += (x - mean) * (x - mean) * (x - mean);
    }
    m2 /= static_cast<double>(v->size());
    m3 /= static_cast<double>(v->size());
    const double sd = std::sqrt(m2);
    const double cv = mean > 0 ? sd / mean : 0;
    const double skew = sd > 0 ? m3 / (sd * sd * sd) : 0;
    model.gpu.step_time_s = mean;
    model.gpu.step_cv = cv;
    model.gpu.distribution = cv < 0.01 ? "constant" : (skew > 0.5 ? "lognormal" : "normal");
    model.gpu.accelerator = accel;
    model.gpu.measured_batch_size = by_batch_size.count(primary_bs) ? primary_bs : by_batch_size.begin()->first;
    const std::string src =
        accel == "cuda" ? (warmup_steps > 0 ? fmt::format("mean compute_ns per micro-batch (CUDA events), without the "
                                                          "{} warm-up step(s) at the start",
                                                          warmup_steps)
                                            : std::string("mean compute_ns per micro-batch (CUDA events)"))
                        : "mean compute_ns per micro-batch (emulated step: a sleep, no GPU)";
    SetProvenance(&model, "gpu.step_time_s", false, src);
    SetProvenance(&model, "gpu.step_cv", false, "coefficient of variation of compute_ns");
    gpu_q = {{"samples", v->size()}, {"distribution", QuantileSummary(*v)}, {"cv", cv}, {"skewness", skew},
             {"accelerator", accel}, {"low_confidence", v->size() < 10}};
    if (warmup_steps > 0) {
      gpu_q["warmup"] = {{"steps_excluded", warmup_steps}, {"extra_s", warmup_extra_s},
                         {"measured_on", accel == "cuda" ? "compute_ns" : "cpu_ns (the emulated step's host part)"},
                         {"rule", fmt::format("leading steps over {:g} x the median of the later ones",
                                              kStepWarmupFactor)}};
      warnings.push_back(
          accel == "cuda"
              ? fmt::format("gpu: the first {} step(s) took {:.3f} s more than steady ones (CUDA context, library "
                            "handles, kernel loading): left out of gpu.step_time_s; a real run pays this once at its "
                            "start, which is not simulated",
                            warmup_steps, warmup_extra_s)
              : fmt::format("gpu: the first {} step(s) took {:.3f} s more host CPU than steady ones (lazy "
                            "initialisation, DDP's first iteration): left out of gpu.step_host_cpu_s; a real run pays "
                            "this once at its start, which is not simulated",
                            warmup_steps, warmup_extra_s));
    }
    if (by_batch_size.size() >= 2) {
      // Two or more batch sizes: step = a + b x batch_size, by Huber on the per-step times.
      std::vector<double> xs, ys;
      for (const auto& [bs, times] : by_batch_size) {
        for (double t : times) {
          xs.push_back(bs);
          ys.push_back(t);
        }
      }
      Eigen::MatrixXd x(static_cast<Eigen::Index>(xs.size()), 1);
      Eigen::VectorXd y(static_cast<Eigen::Index>(ys.size()));
      for (size_t i = 0; i < xs.size(); ++i) {
        x(static_cast<Eigen::Index>(i), 0) = xs[i];
        y[static_cast<Eigen::Index>(i)] = ys[i];
      }
      auto fit = FitHuber(x, y, {"batch_size"}, "gpu step vs batch size");
      if (fit.ok()) {
        gpu_q["batch_size_fit"] = fit->ToJson();
        if (fit->used[1] && fit->coefficients[1] > 0) {
          model.gpu.step_intercept_s = std::max(0.0, fit->coefficients[0]);
          model.gpu.step_per_sample_s = fit->coefficients[1];
          SetProvenance(&model, "gpu.step_intercept_s", false,
                        "Huber fit of step time on batch size (several sizes measured)");
          SetProvenance(&model, "gpu.step_per_sample_s", false,
                        "Huber fit of step time on batch size (several sizes measured)");
        }
      }
      gpu_q["batch_size_scaling"] = "measured at several batch sizes: see batch_size_fit (step = a + b x batch_size)";
    } else {
      gpu_q["batch_size_scaling"] = "assumed linear (proportional): measured at one batch size only";
      warnings.push_back(
          fmt::format("gpu.step_time_s measured at batch size {} only: other sizes scale it linearly (assumed)",
                      model.gpu.measured_batch_size));
    }
    if (accel != "cuda") warnings.push_back("gpu.step_time_s comes from an emulated step (no GPU in the captured run)");
    if (accel != "cuda" && !host_cpu.empty()) {
      double sum = 0;
      for (double x : host_cpu) sum += x;
      model.gpu.step_host_cpu_s = sum / static_cast<double>(host_cpu.size());
      SetProvenance(&model, "gpu.step_host_cpu_s", false,
                    std::string("mean cpu_ns of the step records (the loop thread's CPU time per micro-batch), "
                                "each trace's divided by the shared-core slowdown it ran under "
                                "(fit_quality.cpu.contention[])") +
                        (warmup_steps > 0 ? fmt::format(", without the {} warm-up step(s) at the start", warmup_steps)
                                          : std::string()));
      SetProvenance(&model, "gpu.step_time_s", false,
                    "mean accelerator part of the emulated step per micro-batch (accel_ns, else compute_ns - cpu_ns)");
      gpu_q["host_cpu"] = {{"samples", host_cpu.size()}, {"mean_s", model.gpu.step_host_cpu_s}};
      FitHostCpuAfterFork(after_later_fork, after_first_fork, &model, &gpu_q);
    }
    if (wakeup_steps > 0) {
      gpu_q["wakeup_delay_removed_s_mean"] = wakeup_removed_s / static_cast<double>(wakeup_steps);
      SetProvenance(&model, "gpu.step_time_s", false,
                    model.info["gpu.step_time_s"].source +
                        ", less the modelled wake-up delay at the workers running when each step ended");
    }
  } else {
    SetProvenance(&model, "gpu.step_time_s", true, "default: no step records");
    warnings.push_back("no step records: gpu.step_time_s is the default (assumed)");
  }
  d->quality["gpu"] = gpu_q;
  d->gpu_batch_size_fitted = gpu_q.contains("batch_size_fit");
  return Status::Ok();
}

}  // namespace simreplay::calibrate
