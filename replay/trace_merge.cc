#include "replay/trace_merge.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <variant>

#include "replay/trace_reader.h"
#include "replay/trace_writer.h"

namespace simreplay::replay {

namespace {

int64_t IntOr(const nlohmann::json& j, const char* key, int64_t fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

struct Input {
  std::unique_ptr<TraceReader> reader;
  MergedInput info;
  int64_t world_size = 1;
  int64_t node = -1;  // manifest distributed.node_index, -1 unknown (then every rank is its own node)
  bool keep_host = true;
};

// Shift of one rank onto rank 0's time base, before moving the run so that it starts at 0.
void ChooseShift(const nlohmann::json& manifest, int64_t t0_time_ref_ns, bool align, MergedInput* info) {
  if (!align) {
    info->method = "disabled";
    return;
  }
  const nlohmann::json* clock = nullptr;
  auto d = manifest.find("distributed");
  if (d != manifest.end() && d->is_object()) {
    auto c = d->find("clock");
    if (c != d->end() && c->is_object() && c->contains("to_reference_ns")) clock = &*c;
  }
  if (clock != nullptr) {
    info->shift_ns = IntOr(*clock, "to_reference_ns", 0);
    info->uncertainty_ns = IntOr(*clock, "uncertainty_ns", 0);
    info->method = info->rank == 0 ? "reference" : "ping-pong";
    return;
  }
  int64_t t0_time = IntOr(manifest, "t0_time_ns", -1);
  if (t0_time >= 0 && t0_time_ref_ns >= 0) {
    info->shift_ns = t0_time - t0_time_ref_ns;
    info->method = "wall clock";
    return;
  }
  info->method = "none";
}

void Shift(int64_t* t, int64_t by) {
  if (*t >= 0) *t += by;
}

struct ShiftVisitor {
  int64_t by;
  void operator()(SampleRecord& r) const { Shift(&r.t_start_ns, by); }
  void operator()(BatchRecord& r) const {
    Shift(&r.t_ready_ns, by);
    Shift(&r.t_next_start_ns, by);
  }
  void operator()(StepRecord& r) const { Shift(&r.t_start_ns, by); }
  void operator()(WorkerRecord& r) const { Shift(&r.t_ns, by); }
  void operator()(HostRecord& r) const { Shift(&r.t_ns, by); }
  void operator()(OtherRecord& r) const {
    for (const char* key : {"t_ns", "t_start_ns"}) {
      auto it = r.json.find(key);
      if (it != r.json.end() && it->is_number_integer() && it->get<int64_t>() >= 0) *it = it->get<int64_t>() + by;
    }
  }
};

}  // namespace

Result<MergeSummary> MergeTraces(const std::vector<std::string>& paths, const std::string& out_path,
                                 const MergeOptions& options) {
  if (paths.empty()) return Status::InvalidArgument("merge-traces: expected at least one trace, found none");
  std::vector<Input> inputs;
  for (const std::string& path : paths) {
    auto reader = TraceReader::Open(path);
    if (!reader.ok()) return reader.status();
    Input in;
    const nlohmann::json& m = (*reader)->header().manifest;
    in.info.path = path;
    in.info.rank = IntOr(m, "rank", 0);
    in.world_size = IntOr(m, "world_size", 1);
    auto d = m.find("distributed");
    if (d != m.end() && d->is_object()) in.node = IntOr(*d, "node_index", -1);
    in.reader = std::move(*reader);
    if (in.world_size < 1 || in.info.rank < 0 || in.info.rank >= in.world_size) {
      return Status::InvalidArgument(path + ":1: expected manifest rank in [0, world_size), found rank " +
                                     std::to_string(in.info.rank) + " of world_size " + std::to_string(in.world_size));
    }
    inputs.push_back(std::move(in));
  }
  std::sort(inputs.begin(), inputs.end(), [](const Input& a, const Input& b) { return a.info.rank < b.info.rank; });
  MergeSummary summary;
  summary.world_size = inputs.front().world_size;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].world_size != summary.world_size) {
      return Status::InvalidArgument(inputs[i].info.path + ":1: expected world_size " +
                                     std::to_string(summary.world_size) + " (as " + inputs[0].info.path + "), found " +
                                     std::to_string(inputs[i].world_size));
    }
    if (i > 0 && inputs[i].info.rank == inputs[i - 1].info.rank) {
      return Status::InvalidArgument(inputs[i].info.path + ":1: expected one trace per rank, found rank " +
                                     std::to_string(inputs[i].info.rank) + " again (also " + inputs[i - 1].info.path +
                                     ")");
    }
  }
  if (static_cast<int64_t>(inputs.size()) != summary.world_size) {
    summary.warnings.push_back("merged " + std::to_string(inputs.size()) + " of " + std::to_string(summary.world_size) +
                               " ranks");
  }
  // Wall-clock fallback is relative to the lowest rank present.
  const int64_t t0_time_ref = IntOr(inputs.front().reader->header().manifest, "t0_time_ns", -1);
  std::set<int64_t> nodes_seen;
  for (Input& in : inputs) {
    ChooseShift(in.reader->header().manifest, t0_time_ref, options.align_clocks, &in.info);
    if (in.info.method == "none") {
      summary.warnings.push_back(in.info.path +
                                 ": no clock alignment (no distributed.clock, no t0_time_ns): "
                                 "its times stay on its own clock");
    } else if (in.info.method == "wall clock") {
      summary.warnings.push_back(in.info.path + ": aligned by wall-clock start only (no distributed.clock)");
    }
    if (in.node >= 0) in.keep_host = nodes_seen.insert(in.node).second;
  }
  int64_t min_shift = 0;
  for (const Input& in : inputs) min_shift = std::min(min_shift, in.info.shift_ns);
  for (Input& in : inputs) in.info.shift_ns -= min_shift;

  nlohmann::json manifest = inputs.front().reader->header().manifest;
  manifest.erase("rank");
  manifest.erase("local_rank");
  nlohmann::json merged = {{"world_size", summary.world_size}, {"inputs", nlohmann::json::array()}};
  for (const Input& in : inputs) {
    merged["inputs"].push_back({{"path", in.info.path},
                                {"rank", in.info.rank},
                                {"shift_ns", in.info.shift_ns},
                                {"uncertainty_ns", in.info.uncertainty_ns},
                                {"method", in.info.method},
                                {"manifest", in.reader->header().manifest}});
  }
  merged["time_base"] = "ns since the earliest rank's t0, on rank 0's clock";
  manifest["merged"] = merged;
  manifest["ranks"] = nlohmann::json::array();
  for (const Input& in : inputs) manifest["ranks"].push_back(in.info.rank);

  TraceHeader header;
  header.manifest = std::move(manifest);
  auto writer = TraceWriter::Create(out_path, header);
  if (!writer.ok()) return writer.status();
  for (Input& in : inputs) {
    TraceRecord record;
    while (true) {
      auto more = in.reader->Next(&record);
      if (!more.ok()) return more.status();
      if (!*more) break;
      if (auto* other = std::get_if<OtherRecord>(&record); other != nullptr && other->type == "footer") continue;
      if (std::holds_alternative<HostRecord>(record) && !in.keep_host) {
        ++in.info.host_records_dropped;
        continue;
      }
      std::visit(ShiftVisitor{in.info.shift_ns}, record);
      SIMREPLAY_RETURN_IF_ERROR((*writer)->Write(record));
      ++in.info.records;
    }
    for (const std::string& w : in.reader->warnings()) summary.warnings.push_back(w);
    summary.inputs.push_back(in.info);
  }
  SIMREPLAY_RETURN_IF_ERROR((*writer)->Close());
  return summary;
}

}  // namespace simreplay::replay
