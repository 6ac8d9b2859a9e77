// The per-point layout of a sweep directory (docs/result-format.md, "Sweep directories"): every
// finished point is one file DIR/points/NNNNNN.json (schema simreplay.point/1), written to a temporary,
// flushed to disk and renamed, so a point file is either whole or absent whatever kills the writer.
// A point that failed leaves DIR/failed/NNNNNN.json with the reason instead. Every file carries the
// sweep's identity hash (scenarios/sweep_identity.h), so shards written by different processes or
// machines can be checked to belong together before they are merged.
//
// Writers: what-if (all points, or one shard's) through PointStore. Readers: merge and what-if
// through LoadSweepDirectories. Several writers may share a directory when they own different points
// (shards); two writers of the same point write the same bytes (simulation is deterministic).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "scenarios/sweep_identity.h"
#include "scenarios/sweep_outputs.h"

namespace simreplay::scenarios {

inline constexpr const char* kPointSchema = "simreplay.point/1";
inline constexpr const char* kPointFailureSchema = "simreplay.point-failure/1";

// "I/N": this process owns the points whose index mod N == I.
struct ShardSpec {
  size_t index = 0;
  size_t count = 1;
  bool Owns(size_t point) const { return point % count == index; }
  bool whole() const { return count == 1; }
};
Result<ShardSpec> ParseShardSpec(const std::string& text);

// "loader.num_workers=2, loader.prefetch_factor=4" (empty for a sweep without axes).
std::string AxesLabel(const std::vector<std::pair<std::string, nlohmann::json>>& axes);

// File name of point `index` inside points/ or failed/: six digits at least ("000017.json").
std::string PointFileName(size_t index);

class PointStore {
 public:
  PointStore(std::string dir, SweepIdentity identity) : dir_(std::move(dir)), identity_(std::move(identity)) {}

  const std::string& dir() const { return dir_; }
  const SweepIdentity& identity() const { return identity_; }
  std::string PointPath(size_t index) const;
  std::string FailurePath(size_t index) const;

  // Creates DIR/points and DIR/failed.
  Status Prepare() const;
  // Removes every point and failure file (a sweep started afresh). Other files are left alone.
  Status Clear() const;
  // Removes the temporaries that writers on this host left when they were killed (their pid is gone).
  // Temporaries of other hosts are left: their writers may still be alive. Returns how many went.
  size_t RemoveStaleTemporaries() const;
  // Which points of this sweep are finished. Fails (kInvalidArgument) when points/ holds a point of
  // another sweep, or (kCorruption) a point file that does not parse: a directory holds one sweep.
  Result<std::vector<bool>> Finished() const;
  // Writes point `index` durably and removes its failure record, if any.
  Status Save(size_t index, const SweepResult& point) const;
  // Records why point `index` failed (the previous point file, if any, stays).
  Status SaveFailure(size_t index, const std::vector<std::pair<std::string, nlohmann::json>>& axes,
                     const Status& why) const;

 private:
  std::string dir_;
  SweepIdentity identity_;
};

// The points found in one or more sweep directories, checked to come from one sweep.
struct LoadedSweep {
  SweepIdentity identity;                          // scenario_file of the lowest-numbered point
  std::vector<std::optional<SweepResult>> points;  // by index; nullopt = missing
  std::map<size_t, std::string> failure_reasons;   // missing points with a failure record
  std::vector<size_t> Missing() const;
};

// Reads DIR/points (and DIR/failed) of every directory. Errors: no point at all (kNotFound), a
// malformed point file (kCorruption, FILE:LINE), points of different sweeps, or the same point with
// different contents in two directories (kInvalidArgument, naming both files).
Result<LoadedSweep> LoadSweepDirectories(const std::vector<std::string>& dirs);

// "3 of 240 points are missing: 5, 17-18 (point 5 failed: ...)".
std::string DescribeMissing(const LoadedSweep& sweep, size_t max_reasons = 10);

}  // namespace simreplay::scenarios
