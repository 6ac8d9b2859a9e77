#include "sim/sweep_runner.h"

#include <optional>

#include "sim/isolated_run.h"
#include "sim/point_runner.h"

namespace simreplay::sim {

namespace {

// The two runs of one point as they come back from the children.
struct PendingPoint {
  size_t index;
  PreparedPoint prepared;
  std::optional<Result<std::string>> full, pipeline;
};

}  // namespace

Result<SweepRunSummary> RunSweepShard(const std::vector<scenarios::SweepPoint>& points,
                                      const scenarios::PointStore& store, const SweepRunOptions& options) {
  SweepRunSummary summary;
  SIMREPLAY_RETURN_IF_ERROR(store.Prepare());
  store.RemoveStaleTemporaries();  // left by a writer of this host that was killed mid-write
  // Even a fresh shard reads what is there: it refuses a directory that holds another sweep's points.
  auto finished = store.Finished();
  if (!finished.ok()) return finished.status();

  std::vector<PendingPoint> pending;
  CostCache cache;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!options.shard.Owns(i)) continue;
    ++summary.owned_points;
    if (options.resume && (*finished)[i]) {
      ++summary.reused_points;
      continue;
    }
    auto prepared = PreparePoint(points[i].scenario, &cache);
    if (!prepared.ok()) {
      const std::string label = scenarios::AxesLabel(points[i].axes);
      if (label.empty()) return prepared.status();
      // Keep the kind (a bad model is still bad input); name the point.
      const Status& s = prepared.status();
      std::string message = s.message() + " (sweep point " + label + ")";
      switch (s.code()) {
        case Status::Code::kInvalidArgument:
          return Status::InvalidArgument(message);
        case Status::Code::kNotFound:
          return Status::NotFound(message);
        case Status::Code::kCorruption:
          return Status::Corruption(message);
        case Status::Code::kIoError:
          return Status::IoError(message);
        default:
          return Status::Internal(message);
      }
    }
    pending.push_back({i, std::move(*prepared), std::nullopt, std::nullopt});
  }

  // Jobs 2k and 2k+1 are the full and the pipeline-only run of pending[k]. MakeJobs captures the
  // PreparedPoint by reference: `pending` is not resized from here on.
  std::vector<IsolatedJob> jobs;
  for (const auto& p : pending) {
    for (auto& job : MakeJobs(p.prepared, "")) jobs.push_back(std::move(job));
  }
  Status write_error;
  size_t done = 0;
  IsolatedRunOptions run;
  run.parallel = options.jobs;
  run.timeout_s = options.point_timeout_s;
  run.timeout_name = "--point-timeout";
  run.on_result = [&](size_t job, const Result<std::string>& result) {
    PendingPoint& p = pending[job / 2];
    (job % 2 == 0 ? p.full : p.pipeline) = result;
    if (!p.full || !p.pipeline) return true;
    const auto& axes = points[p.index].axes;
    auto assembled = AssembleResult(p.prepared, *p.full, *p.pipeline);
    Status saved;
    if (assembled.ok()) {
      saved = store.Save(p.index, {axes, std::move(*assembled)});
      if (saved.ok()) ++summary.simulated_points;
    } else {
      summary.failures.push_back({p.index, scenarios::AxesLabel(axes), assembled.status()});
      saved = store.SaveFailure(p.index, axes, assembled.status());
    }
    ++done;
    if (options.on_progress) options.on_progress(done, pending.size());
    if (!saved.ok()) {
      write_error = saved;  // a full disk: stop rather than simulate points that cannot be kept
      return false;
    }
    // Free the point's costs reference and results now that they are on disk.
    p.full.reset();
    p.pipeline.reset();
    return true;
  };
  RunIsolated(jobs, run);
  if (!write_error.ok()) return write_error;
  std::sort(summary.failures.begin(), summary.failures.end(),
            [](const PointFailure& a, const PointFailure& b) { return a.index < b.index; });
  return summary;
}

}  // namespace simreplay::sim
