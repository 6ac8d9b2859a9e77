#include "replay/trace_records.h"

namespace simreplay::replay {

namespace {

struct ToJsonVisitor {
  nlohmann::json operator()(const SampleRecord& r) const {
    nlohmann::json j = {{"type", "sample"},           {"rank", r.rank},
                        {"epoch", r.epoch},           {"index", r.index},
                        {"batch", r.batch},           {"worker", r.worker},
                        {"t_start_ns", r.t_start_ns}, {"read_ns", r.read_ns},
                        {"decode_ns", r.decode_ns},   {"augment_ns", r.augment_ns},
                        {"read_bytes", r.read_bytes}, {"out_bytes", r.out_bytes},
                        {"format", r.format},         {"width", r.width},
                        {"height", r.height},         {"frames", r.frames}};
    if (r.unsplit) j["stages"] = "unsplit";
    if (r.cpu_ns >= 0) j["cpu_ns"] = r.cpu_ns;
    if (r.wall_ns >= 0) j["wall_ns"] = r.wall_ns;
    if (r.minflt >= 0) j["minflt"] = r.minflt;
    if (!r.hash.empty()) j["hash"] = r.hash;
    return j;
  }
  nlohmann::json operator()(const BatchRecord& r) const {
    nlohmann::json j = {
        {"type", "batch"},      {"rank", r.rank},     {"epoch", r.epoch},           {"batch", r.batch},
        {"worker", r.worker},   {"size", r.size},     {"collate_ns", r.collate_ns}, {"t_ready_ns", r.t_ready_ns},
        {"wait_ns", r.wait_ns}, {"pin_ns", r.pin_ns}, {"h2d_ns", r.h2d_ns},         {"h2d_bytes", r.h2d_bytes}};
    if (r.t_next_start_ns >= 0) j["t_next_start_ns"] = r.t_next_start_ns;
    if (r.bytes >= 0) j["bytes"] = r.bytes;
    return j;
  }
  nlohmann::json operator()(const StepRecord& r) const {
    nlohmann::json j = {{"type", "step"},
                        {"rank", r.rank},
                        {"step", r.step},
                        {"t_start_ns", r.t_start_ns},
                        {"compute_ns", r.compute_ns},
                        {"comm_ns", r.comm_ns},
                        {"step_ns", r.step_ns},
                        {"micro_batches", r.micro_batches}};
    if (r.cpu_ns >= 0) j["cpu_ns"] = r.cpu_ns;
    if (r.accel_ns >= 0) j["accel_ns"] = r.accel_ns;
    return j;
  }
  nlohmann::json operator()(const WorkerRecord& r) const {
    nlohmann::json j = {{"type", "worker"},
                        {"rank", r.rank},
                        {"worker", r.worker},
                        {"pid", r.pid},
                        {"t_ns", r.t_ns},
                        {"rss_bytes", r.rss_bytes},
                        {"pss_bytes", r.pss_bytes},
                        {"cpu_ns", r.cpu_ns},
                        {"io_read_bytes", r.io_read_bytes}};
    if (r.main_thread_cpu_ns >= 0) j["main_thread_cpu_ns"] = r.main_thread_cpu_ns;
    return j;
  }
  nlohmann::json operator()(const HostRecord& r) const {
    nlohmann::json j = {
        {"type", "host"}, {"t_ns", r.t_ns}, {"mem_used_bytes", r.mem_used_bytes}, {"cpu_busy_ns", r.cpu_busy_ns}};
    if (r.mem_total_bytes >= 0) j["mem_total_bytes"] = r.mem_total_bytes;
    if (r.mem_peak_bytes >= 0) j["mem_peak_bytes"] = r.mem_peak_bytes;
    return j;
  }
  nlohmann::json operator()(const OtherRecord& r) const {
    nlohmann::json j = r.json;
    j["type"] = r.type;
    return j;
  }
};

}  // namespace

nlohmann::json ToJson(const TraceRecord& record) { return std::visit(ToJsonVisitor{}, record); }

}  // namespace simreplay::replay
