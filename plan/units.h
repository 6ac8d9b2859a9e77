// Units and sentinels the planner's modules share (one home, so that the unity build never sees two
// file-local copies).
#pragma once

#include <limits>

namespace simreplay::plan {

inline constexpr double kSecondsPerDay = 86400.0;
inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

}  // namespace simreplay::plan
