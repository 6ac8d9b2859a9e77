// Signed percentages as advice prints them: 0.178 -> "+17.8%".
#pragma once

#include <string>

#include <fmt/format.h>

namespace simreplay::advise {

inline std::string SignedPct(double fraction) { return fmt::format("{:+.1f}%", 100 * fraction); }

}  // namespace simreplay::advise
