// A planning figure together with where its value came from, so that provenance is data carried with
// the value (docs/planning.md, "Provenance"): `status` is one of "measured", "input", "assumed",
// "emulated", or a qualified form such as "measured (1 node, 1 rank), extrapolated"; `source` says
// which file, measurement or publication the value came from.
#pragma once

#include <string>

namespace simreplay::plan {

struct SourcedValue {
  double value = 0;
  std::string status = "assumed";
  std::string source;
};

// A default taken from a publication, labelled `assumed` with that source.
inline SourcedValue Assumed(double value, std::string source) { return {value, "assumed", std::move(source)}; }

}  // namespace simreplay::plan
