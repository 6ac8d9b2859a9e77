// The time from a failure to training again (docs/planning.md, "Restart"), as a sum of parts, each
// with its provenance: detection, rescheduling, process-group initialisation (growing with ranks) and
// the checkpoint read. A preflight's measured restart (process start to the end of the first step
// after a restore, at the preflight's world size) replaces the last two, extrapolated to the
// candidate's ranks by the initialisation rule.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/sourced_value.h"

namespace simreplay::plan {

struct RestartSpec {
  // reliability.restart_s of older plan files: detection + rescheduling + initialisation as one fixed
  // figure (no growth with ranks). Set: the three parts below are not used.
  std::optional<SourcedValue> fixed_s;
  SourcedValue detection_s;
  SourcedValue rescheduling_s;
  // Process-group initialisation: init_s x (ranks / reference_ranks)^exponent.
  SourcedValue init_s;
  SourcedValue init_reference_ranks;
  SourcedValue init_exponent;
};

// Defaults, each labelled `assumed` with its rule and source (restart_model.cc).
RestartSpec DefaultRestart();

// A preflight's restart measurement (docs/preflight-format.md, restore.restart_s).
struct MeasuredRestart {
  double restart_s = 0;  // process start to the end of the first step after the restore (read included)
  int world_size = 1;    // ranks of the preflight, all on one node
  std::string source;
};

struct RestartPart {
  std::string name;  // detection, rescheduling, process_group_init, checkpoint_read, measured_restart, ...
  SourcedValue seconds;
};

struct Restart {
  std::vector<RestartPart> parts;
  double total_s() const;
  bool measured() const;  // every part measured at this very scale
};

// Process-group initialisation time of `ranks` by the spec's rule.
double ProcessGroupInitS(const RestartSpec& spec, int ranks);

// The restart of a job of `ranks` GPUs on `nodes` nodes. `checkpoint_read` is one restore (bytes /
// read bandwidth) with the bandwidth's provenance; unused when `measured` is given (it includes it).
Restart ComputeRestart(const RestartSpec& spec, int ranks, int nodes, const SourcedValue& checkpoint_read,
                       const std::optional<MeasuredRestart>& measured);

}  // namespace simreplay::plan
