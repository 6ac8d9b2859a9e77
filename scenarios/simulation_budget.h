// What a simulation of a scenario costs the machine running it, as far as the loader must know to
// refuse what cannot run (scenarios/scenario.cc) and the simulator must know to configure SimGrid
// (sim/simulation.cc). Figures: docs/performance.md, "Large clusters".
#pragma once

namespace simreplay::scenarios {

// Every actor (a rank's training loop, each DataLoader worker, the pin-memory thread) has a stack of
// this many bytes (SimGrid's contexts/stack-size).
inline constexpr int kActorStackKib = 256;
// SimGrid protects each actor's stack with a guard page, which costs two memory mappings per actor;
// Linux allows 65530 mappings per process by default (vm.max_map_count), and SimGrid aborts when it
// runs out. Above this many actors the stacks go unguarded; SimGrid then allocates each one zeroed,
// so the whole stack is resident (guarded stacks only hold the pages they touched).
inline constexpr double kMaxGuardedActors = 30000;

// Rank folding (sim/rank_folding.h) simulates a large cluster of identical nodes through this many
// representative nodes. Eight nodes of eight GPUs are 64 ranks, so a folded run costs what 64 ranks
// cost (about 6 CPU s per 1000 steps at plan settings), and with eight the checks at 128-1024 GPUs
// agree with the full simulation within 0.4% (docs/performance.md, "Rank folding"); other counts were
// not tried.
inline constexpr int kRepresentativeNodes = 8;

}  // namespace simreplay::scenarios
