#include "plan/checkpoint_stall.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace simreplay::plan {

CheckpointLayout LayOutCheckpoint(const CheckpointInputs& in, const nlohmann::json& scenario_json, bool fsdp,
                                  int nodes, int gpus_per_node, double compute_s_per_step) {
  CheckpointLayout l;
  CandidateCheckpoint& c = l.sim;
  c.bytes = in.bytes;
  c.mode = in.mode;
  c.snapshot_bytes_per_s = in.snapshot_bytes_per_s;
  c.local_write_bytes_per_s = in.write_bytes_per_s;
  c.writers = fsdp ? "all_ranks" : in.ddp_writers;
  l.writers = c.writers == "all_ranks" ? nodes * gpus_per_node : c.writers == "per_node" ? nodes : 1;
  l.bytes_per_writer = fsdp ? in.bytes / l.writers : in.bytes;
  l.closed_form_write_s = in.bytes / in.write_bytes_per_s;
  l.closed_form_stall_s = in.mode == "async" ? l.bytes_per_writer / in.snapshot_bytes_per_s : l.closed_form_write_s;

  const nlohmann::json storage = scenario_json.value("storage", nlohmann::json::object());
  const bool shared = storage.is_object() && storage.value("kind", "") == "shared";
  c.target = shared ? "shared" : "local";
  // How long one save's writes take on an idle device: per node disk, its writers' bytes; on the
  // store, every writer's bytes.
  double estimate_s = 0;
  if (shared) {
    if (!storage.contains("aggregate_bytes_per_s") || !storage["aggregate_bytes_per_s"].is_number()) {
      l.why_not_simulated =
          "the scenario's shared storage states no aggregate_bytes_per_s: no bandwidth to simulate a save with";
      return l;
    }
    estimate_s = l.bytes_per_writer * l.writers / storage["aggregate_bytes_per_s"].get<double>();
  } else {
    const int writers_per_node = c.writers == "all_ranks" ? gpus_per_node : 1;
    estimate_s = l.bytes_per_writer * writers_per_node / in.write_bytes_per_s;
  }
  // A synchronous save is over before training resumes: 2 steps apart is enough (and cheapest).
  const double steps = in.mode != "async"       ? 2
                       : compute_s_per_step > 0 ? std::ceil(kWindowIntervalMargin * estimate_s / compute_s_per_step)
                                                : kMaxWindowIntervalSteps;
  c.every_steps = std::clamp<int64_t>(static_cast<int64_t>(std::min(steps, 1e9)), 2, kMaxWindowIntervalSteps);
  c.simulate = true;
  return l;
}

CheckpointStall StallOf(const CheckpointLayout& layout, const CandidateCheckpointRun& run) {
  CheckpointStall s;
  const CandidateCheckpoint& c = layout.sim;
  s.closed_form_s = layout.closed_form_stall_s;
  if (run.simulated) {
    s.per_save = {run.stall_per_save_s, "simulated",
                  fmt::format("checkpoint window: {} {} saves of {:.4g} B ({} writer{}, {:.4g} B each, to {} storage), "
                              "one every {} steps; closed form {:.4g} s",
                              run.saves, c.mode, c.bytes, layout.writers, layout.writers == 1 ? "" : "s",
                              layout.bytes_per_writer, c.target, c.every_steps, s.closed_form_s)};
    s.write_s = run.write_s_per_save;
  } else {
    const std::string formula = c.mode == "async" ? fmt::format("bytes per writer {:.4g} / snapshot {:.4g} B/s",
                                                                layout.bytes_per_writer, c.snapshot_bytes_per_s)
                                                  : fmt::format("checkpoint bytes {:.4g} / write bandwidth {:.4g} B/s",
                                                                c.bytes, c.local_write_bytes_per_s);
    s.per_save = {s.closed_form_s, "closed form",
                  formula + (layout.why_not_simulated.empty() ? "" : " (not simulated: " + layout.why_not_simulated + ")")};
    s.write_s = layout.closed_form_write_s;
  }
  if (c.mode == "async") {
    s.min_interval_s = s.write_s;
    s.rule = "async: the interval between saves is at least one save's write time (a save cannot start before "
             "the previous write ended)";
  } else {
    s.rule = "sync: training waits for the write; any interval";
  }
  return s;
}

}  // namespace simreplay::plan
