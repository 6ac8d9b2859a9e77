// Units, sentinels and validated limits the planner's modules share (one home, so that the unity build never sees two
// file-local copies).
#pragma once

#include <limits>

namespace simreplay::plan {

inline constexpr double kSecondsPerDay = 86400.0;
inline constexpr double kInfinity = std::numeric_limits<double>::infinity();
// The largest node count the multi-node validation suite gates (2 namespaces per core on its 2-core
// host: docs/validation.md, "Multi-node cases"); plan intervals widen beyond it.
inline constexpr int kValidatedClusterNodes = 4;

}  // namespace simreplay::plan
