#include "sim/checkpoint.h"

#include <algorithm>
#include <utility>

#include "common/check.h"

namespace simreplay::sim {

namespace sg4 = simgrid::s4u;
using scenarios::CheckpointMode;
using scenarios::CheckpointTarget;
using scenarios::CheckpointWriters;

CheckpointSaver::CheckpointSaver(const RunConfig& config, const Platform& platform,
                                 std::vector<LinkClassCounts> storage_routes, std::array<LinkClassLoad, 5>* link_load,
                                 int ranks)
    : config_(config),
      platform_(platform),
      every_steps_(config.checkpoint.every_steps),
      storage_routes_(std::move(storage_routes)),
      link_load_(link_load) {
  SIMREPLAY_CHECK(config.checkpoint.enabled());
  switch (config.checkpoint.writers) {
    case CheckpointWriters::kRank0: writer_count_ = 1; break;
    case CheckpointWriters::kPerNode: writer_count_ = config.nodes; break;
    case CheckpointWriters::kAllRanks: writer_count_ = config.ranks; break;
  }
  // Replicated state (DDP): each writer saves all of it; sharded state (FSDP): the writers split it.
  bytes_per_writer_ = config.sharding == scenarios::Sharding::kFull ? config.checkpoint.bytes / writer_count_
                                                                      : config.checkpoint.bytes;
  const int savers = ranks > 0 ? ranks : config.ranks;
  barrier_ = sg4::Barrier::create(static_cast<unsigned>(savers));
  pending_.resize(static_cast<size_t>(savers));
  pending_save_.assign(static_cast<size_t>(savers), -1);
}

bool CheckpointSaver::IsWriter(const RankContext& rank) const {
  switch (config_.checkpoint.writers) {
    case CheckpointWriters::kRank0: return rank.rank == 0;
    case CheckpointWriters::kPerNode: return rank.local == 0;
    case CheckpointWriters::kAllRanks: return true;
  }
  return false;
}

sg4::ActivityPtr CheckpointSaver::StartWrite(const RankContext& rank) const {
  const NodeHosts& node = platform_.nodes[static_cast<size_t>(rank.node)];
  if (config_.checkpoint.target == CheckpointTarget::kShared) {
    SIMREPLAY_CHECK(platform_.storage != nullptr);
    if (link_load_ != nullptr && static_cast<size_t>(rank.node) < storage_routes_.size()) {
      AddLinkBytes(storage_routes_[static_cast<size_t>(rank.node)], bytes_per_writer_, link_load_);
    }
    return sg4::Comm::sendto_async(node.cpu, platform_.storage, static_cast<uint64_t>(bytes_per_writer_));
  }
  return node.disk->write_async(static_cast<sg_size_t>(bytes_per_writer_));
}

CheckpointSaver::SaveRecord& CheckpointSaver::RecordOf(int64_t save) {
  if (static_cast<int64_t>(saves_.size()) <= save) saves_.resize(static_cast<size_t>(save + 1));
  return saves_[static_cast<size_t>(save)];
}

// The write of `save` is done (waited on): it widens the save's write window.
void CheckpointSaver::NoteWrite(int64_t save, const sg4::ActivityPtr& write) {
  SaveRecord& record = RecordOf(save);
  record.write_end_s = std::max(record.write_end_s, write->get_finish_time());
}

void CheckpointSaver::Save(const RankContext& rank, int64_t optimizer_steps) {
  const int64_t save = optimizer_steps / every_steps_ - 1;
  const double t0 = sg4::Engine::get_clock();
  const bool writer = IsWriter(rank);
  auto& pending = pending_[static_cast<size_t>(rank.rank)];
  auto& pending_save = pending_save_[static_cast<size_t>(rank.rank)];
  if (writer && pending) {  // async: the previous write must land before the next snapshot
    pending->wait();
    NoteWrite(pending_save, pending);
    pending.reset();
  }
  if (writer && config_.checkpoint.mode == CheckpointMode::kAsync) {
    sg4::this_actor::sleep_for(bytes_per_writer_ / config_.checkpoint.snapshot_bytes_per_s);
  }
  if (writer) {
    SaveRecord& record = RecordOf(save);
    const double start_s = sg4::Engine::get_clock();
    record.write_start_s = record.write_start_s < 0 ? start_s : std::min(record.write_start_s, start_s);
    record.bytes += bytes_per_writer_;
    pending = StartWrite(rank);
    pending_save = save;
  }
  if (config_.checkpoint.mode == CheckpointMode::kSync) {
    if (writer) {
      pending->wait();
      NoteWrite(save, pending);
      pending.reset();
    }
    barrier_->wait();  // every rank resumes when the last writer is done
  }
  SaveRecord& record = RecordOf(save);
  record.stall_s = std::max(record.stall_s, sg4::Engine::get_clock() - t0);
}

void CheckpointSaver::Finish(const RankContext& rank) {
  auto& pending = pending_[static_cast<size_t>(rank.rank)];
  if (!pending) return;
  pending->wait();
  NoteWrite(pending_save_[static_cast<size_t>(rank.rank)], pending);
  pending.reset();
}

void CheckpointSaver::Collect(CheckpointStats* stats) const {
  for (const SaveRecord& record : saves_) {
    ++stats->saves;
    stats->stall_s += record.stall_s;
    if (record.write_end_s >= 0) stats->write_s += record.write_end_s - record.write_start_s;
    stats->bytes_written += record.bytes;
  }
}

}  // namespace simreplay::sim
