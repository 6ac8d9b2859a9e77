// A flat JSON view of a simulation's raw statistics for the simulator's tests (per-rank, per-node and
// per-link figures as arrays by key). Not a serialiser: the one serialiser of SimRawStats, which also
// carries them between processes, is sim/raw_stats_codec.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/sim_types.h"

namespace simreplay::sim {

inline nlohmann::json RawStatsToJson(const SimRawStats& s) {
  return {{"makespan_s", s.makespan_s},
          {"samples_consumed", s.samples_consumed},
          {"micro_batches", s.micro_batches},
          {"wait_s", s.wait_s},
          {"step_s", s.step_s},
          {"queue_wait_s", s.queue_wait_s},
          {"time_to_first_batch_s", s.time_to_first_batch_s},
          {"epoch_boundary_stall_s", s.epoch_boundary_stall_s},
          {"gpu_busy_s", s.gpu_busy_s},
          {"h2d_s", s.h2d_s},
          {"collective_s", s.collective_s},
          {"cpu_busy_core_s", s.cpu_busy_core_s},
          {"worker_busy_s", s.worker_busy_s},
          {"main_busy_s", s.main_busy_s},
          {"pin_busy_s", s.pin_busy_s},
          {"storage_read_bytes", s.storage_read_bytes},
          {"peak_host_memory_bytes", s.peak_host_memory_bytes},
          {"worker_starts", s.worker_starts},
          {"exposed_comm_s", s.exposed_comm_s},
          {"checkpoint_saves", s.checkpoint.saves},
          {"checkpoint_stall_s", s.checkpoint.stall_s},
          {"checkpoint_write_s", s.checkpoint.write_s},
          {"checkpoint_bytes_written", s.checkpoint.bytes_written},
          {"rank_gpu_busy_s",
           [&] {
             std::vector<double> v;
             for (const auto& r : s.ranks) v.push_back(r.gpu_busy_s);
             return v;
           }()},
          {"rank_collective_s",
           [&] {
             std::vector<double> v;
             for (const auto& r : s.ranks) v.push_back(r.collective_s);
             return v;
           }()},
          {"node_storage_read_bytes",
           [&] {
             std::vector<int64_t> v;
             for (const auto& n : s.nodes) v.push_back(n.storage_read_bytes);
             return v;
           }()},
          {"link_bytes", [&] {
             std::vector<double> v;
             for (const auto& l : s.link_load) v.push_back(l.bytes);
             return v;
           }()}};
}

}  // namespace simreplay::sim
