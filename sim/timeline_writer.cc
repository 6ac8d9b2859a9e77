#include "sim/timeline_writer.h"

#include <set>
#include <utility>

#include <fmt/format.h>

namespace simreplay::sim {

namespace {

void AppendThreadName(std::string* out, int rank, int track, const std::string& name) {
  *out +=
      fmt::format(R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":"{}"}}}},)", rank, track, name);
  *out += fmt::format(R"({{"name":"thread_sort_index","ph":"M","pid":{},"tid":{},"args":{{"sort_index":{}}}}},)", rank,
                      track, track);
  *out += "\n";
}

}  // namespace

std::string TimelineToJson(const SimRawStats& stats, int ranks, int gpus_per_node, int workers, bool pin_memory,
                           const std::string& accelerator_label) {
  std::string out = "{\"traceEvents\":[\n";
  for (int r = 0; r < ranks; ++r) {
    // One node: "rank r" as before; a cluster: "node n / rank r (local l)", sorted node by node.
    const std::string name = ranks == gpus_per_node ? fmt::format("rank {} (simulated)", r)
                                                    : fmt::format("node {} / rank {} (local {}, simulated)",
                                                                  r / gpus_per_node, r, r % gpus_per_node);
    out += fmt::format(R"J({{"name":"process_name","ph":"M","pid":{},"args":{{"name":"{}"}}}},)J", r, name);
    out += "\n";
    if (ranks != gpus_per_node) {
      out += fmt::format(R"J({{"name":"process_sort_index","ph":"M","pid":{},"args":{{"sort_index":{}}}}},)J", r, r);
      out += "\n";
    }
    AppendThreadName(&out, r, kTrackMain, "main loop (next, H2D issue)");
    if (pin_memory && workers > 0) AppendThreadName(&out, r, kTrackPin, "pin_memory thread");
    AppendThreadName(&out, r, kTrackGpu, "GPU step (" + accelerator_label + ")");
    if (ranks != gpus_per_node) AppendThreadName(&out, r, kTrackComm, "collectives (gradient buckets)");
    for (int w = 0; w < workers; ++w) AppendThreadName(&out, r, kTrackWorker0 + w, fmt::format("worker {}", w));
  }
  // Send threads have tracks only where the model has them: named from the spans themselves.
  std::set<std::pair<int32_t, int32_t>> send_tracks;
  for (const auto& e : stats.timeline) {
    if (e.track >= kTrackWorkerSend0) send_tracks.insert({e.rank, e.track});
  }
  for (const auto& [rank, track] : send_tracks) {
    AppendThreadName(&out, rank, track, fmt::format("worker {} send (result queue feeder)", track - kTrackWorkerSend0));
  }
  for (const auto& e : stats.timeline) {
    out += fmt::format(R"({{"name":"{}","ph":"X","pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f}}},)", e.name, e.rank,
                       e.track, e.start_s * 1e6, e.duration_s * 1e6);
    out += "\n";
  }
  out += fmt::format(R"({{"name":"end","ph":"i","s":"g","pid":0,"tid":0,"ts":{:.3f}}}],)", stats.makespan_s * 1e6);
  out += fmt::format(
      "\n\"displayTimeUnit\":\"ms\",\"otherData\":{{\"generator\":\"simreplay\",\"accelerator\":\"{}\","
      "\"truncated\":{}}}}}\n",
      accelerator_label, stats.timeline_truncated ? "true" : "false");
  return out;
}

}  // namespace simreplay::sim
