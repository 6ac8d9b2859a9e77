// Who a training rank is: its global rank, node, local rank, GPU host and per-node factors.
#pragma once

#include <simgrid/s4u/Host.hpp>

namespace simreplay::sim {

struct RankContext {
  int rank = 0;
  int node = 0;
  int local = 0;
  simgrid::s4u::Host* gpu = nullptr;
  double step_scale = 1.0;  // straggler: this rank's GPU step time factor
};

}  // namespace simreplay::sim
