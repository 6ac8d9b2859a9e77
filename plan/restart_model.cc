#include "plan/restart_model.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace simreplay::plan {

double Restart::total_s() const {
  double sum = 0;
  for (const auto& p : parts) sum += p.seconds.value;
  return sum;
}

bool Restart::measured() const {
  return std::all_of(parts.begin(), parts.end(), [](const RestartPart& p) { return p.seconds.status == "measured"; });
}

RestartSpec DefaultRestart() {
  RestartSpec s;
  // 90% of interruptions are crashes, noticed within about 30 s (assumed); 10% are hangs (ByteRobust,
  // arXiv 2509.16293), caught by PyTorch's NCCL watchdog after its default 10-minute timeout:
  // 0.9 x 30 + 0.1 x 600 = 87 s.
  s.detection_s = Assumed(87,
                          "rule: 0.9 x 30 s (crash) + 0.1 x 600 s (hang share, ByteRobust arXiv 2509.16293; "
                          "PyTorch's default 10-minute NCCL timeout)");
  s.rescheduling_s = Assumed(300,
                             "assumed: requeue, a replacement node and the job's processes started again (a part "
                             "of Huawei MindCluster's restart breakdown)");
  s.init_s = Assumed(20,
                     "assumed: rendezvous and communicator set-up at 1,024 ranks, the order of TrainMover's whole "
                     "20 s per interruption at 1,024 GPUs (with live migration)");
  s.init_reference_ranks = Assumed(1024, "reference of the initialisation rule");
  s.init_exponent = Assumed(1,
                            "assumed linear in ranks (every rank registers); SPARe (arXiv 2603.00357) reports "
                            "quadratic or worse for unoptimised communicator initialisation: set 2 for that");
  return s;
}

double ProcessGroupInitS(const RestartSpec& spec, int ranks) {
  return spec.init_s.value * std::pow(ranks / spec.init_reference_ranks.value, spec.init_exponent.value);
}

Restart ComputeRestart(const RestartSpec& spec, int ranks, int nodes, const SourcedValue& checkpoint_read,
                       const std::optional<MeasuredRestart>& measured) {
  Restart r;
  const std::string rule = fmt::format("{:g} s x ({} / {:g} ranks)^{:g} ({}, {})", spec.init_s.value, ranks,
                                       spec.init_reference_ranks.value, spec.init_exponent.value, spec.init_s.status,
                                       spec.init_exponent.status);
  if (spec.fixed_s) {
    r.parts.push_back({"detection_rescheduling_init", *spec.fixed_s});
  } else {
    r.parts.push_back({"detection", spec.detection_s});
    r.parts.push_back({"rescheduling", spec.rescheduling_s});
    if (!measured) r.parts.push_back({"process_group_init", {ProcessGroupInitS(spec, ranks), "assumed", rule}});
  }
  if (!measured) {
    r.parts.push_back({"checkpoint_read", checkpoint_read});
    return r;
  }
  // The preflight ran `world_size` ranks on one node: measured as such only for that very job.
  const bool same_scale = nodes == 1 && ranks == measured->world_size;
  const std::string scale =
      fmt::format("1 node, {} rank{}", measured->world_size, measured->world_size == 1 ? "" : "s");
  r.parts.push_back({"measured_restart",
                     {measured->restart_s, same_scale ? "measured" : fmt::format("measured ({}), extrapolated", scale),
                      measured->source + " (process start, initialisation, restore and first step at " + scale +
                          ")"}});
  if (!same_scale && !spec.fixed_s) {
    const double extra = std::max(0.0, ProcessGroupInitS(spec, ranks) - ProcessGroupInitS(spec, measured->world_size));
    r.parts.push_back({"process_group_init_growth",
                       {extra, "assumed",
                        fmt::format("initialisation rule at {} ranks less at {}: {}", ranks, measured->world_size,
                                    rule)}});
  }
  return r;
}

}  // namespace simreplay::plan
