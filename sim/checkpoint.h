// Checkpoint saves as storage writes in the simulated cluster (scenario "checkpoint" section). A save
// is a SimGrid write activity from the writer's node: to the node's disk (target "local"), or to the
// shared storage service through the node's NIC and the storage link (target "shared"), where it
// shares the bandwidth with the data loaders' reads (sim/platform.cc). The training stall is what the
// simulation makes of it:
//   sync:  every rank stops at the step boundary until every writer's write is done (a barrier);
//   async: a writer stops for its device-to-host snapshot (bytes / snapshot_bytes_per_s), after
//          waiting for its previous write if that is still running (torch.distributed.checkpoint's
//          async_save); the write then runs while training goes on.
// Writers: rank0 (one rank), per_node (local rank 0 of every node), all_ranks. A writer writes the
// whole state when the model is replicated (DDP) and bytes / writers when it is sharded (FSDP).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <simgrid/s4u.hpp>

#include "sim/platform.h"
#include "sim/rank_context.h"
#include "sim/run_config.h"
#include "sim/sim_types.h"

namespace simreplay::sim {

class CheckpointSaver {
 public:
  // REQUIRES: config.checkpoint.enabled(); a SimGrid engine runs `platform`. A write to shared storage
  // adds its bytes to `link_load` for every link class on its node's route to the store
  // (`storage_routes`, by node; empty for local targets), like the loaders' reads. `ranks`: the ranks
  // that call Save (all of them, or a folded cluster's simulated ones: sim/rank_folding.h); 0 = all.
  CheckpointSaver(const RunConfig& config, const Platform& platform, std::vector<LinkClassCounts> storage_routes = {},
                  std::array<LinkClassLoad, 5>* link_load = nullptr, int ranks = 0);

  // True when a save follows optimizer step `optimizer_steps` (counted from 1).
  bool DueAfter(int64_t optimizer_steps) const { return optimizer_steps % every_steps_ == 0; }
  // Every rank calls this at the step boundary where a save is due, in the rank's main actor.
  void Save(const RankContext& rank, int64_t optimizer_steps);
  // A rank's training loop is over: its last background write must land (not counted as a stall).
  void Finish(const RankContext& rank);
  // Per-save figures summed into `stats`, once every rank finished.
  void Collect(CheckpointStats* stats) const;

  bool IsWriter(const RankContext& rank) const;
  double bytes_per_writer() const { return bytes_per_writer_; }

 private:
  struct SaveRecord {
    double stall_s = 0;     // the longest a rank was held
    double write_start_s = -1;
    double write_end_s = -1;
    double bytes = 0;
  };
  // Starts the writer's write on its target; the caller waits on it (now, or at the next save).
  simgrid::s4u::ActivityPtr StartWrite(const RankContext& rank) const;
  SaveRecord& RecordOf(int64_t save);
  void NoteWrite(int64_t save, const simgrid::s4u::ActivityPtr& write);

  const RunConfig& config_;
  const Platform& platform_;
  int64_t every_steps_;
  std::vector<LinkClassCounts> storage_routes_;
  std::array<LinkClassLoad, 5>* link_load_;
  int writer_count_ = 0;
  double bytes_per_writer_ = 0;
  simgrid::s4u::BarrierPtr barrier_;  // sync saves
  // async saves: per rank, the write in flight and the save it belongs to (-1: none)
  std::vector<simgrid::s4u::ActivityPtr> pending_;
  std::vector<int64_t> pending_save_;
  std::vector<SaveRecord> saves_;  // by save index (0 = the first save)
};

}  // namespace simreplay::sim
