// A scenario: which measured costs and model to use, the DataLoader and hardware configuration, how
// long to train, and optional sweep axes (docs/scenario-format.md). One validating loader; relative
// paths resolve against the scenario file's directory.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/paths.h"
#include "common/status.h"
#include "models/gpu_decode.h"
#include "models/media_synth.h"
#include "models/storage_tiers.h"

namespace simreplay::scenarios {

struct LoaderConfig {
  int num_workers = 0;
  int batch_size = 1;
  int prefetch_factor = 2;
  bool pin_memory = false;
  bool persistent_workers = false;
  bool drop_last = false;
  bool shuffle = false;
};

struct HardwareConfig {
  int cpu_cores = 0;               // 0: the cores recorded in the trace's manifest, else 8
  int gpus = 1;                    // GPU ranks per node, one DataLoader each (= cluster.gpus_per_node)
  double background_threads = -1;  // busy cores taken by other processes; < 0: the model's value
};

struct TrainConfig {
  int64_t steps = 0;            // optimizer steps; 0 = use epochs
  int64_t epochs = 0;           // full passes over the dataset; used when steps == 0
  double step_time_s = -1;      // >= 0 overrides the model's GPU step time (one micro-batch)
  int grad_accum = 1;           // micro-batches per optimizer step
  int64_t dataset_samples = 0;  // samples per epoch (all ranks); 0 = distinct samples in the trace
};

// Multi-node keys (docs/scenario-format.md, "Clusters"). Mode strings are parsed into enums here so
// that the simulator never compares strings in its inner loops.
enum class Topology { kStar, kFatTree };
enum class CollectiveAlgorithm { kAnalytic, kRing, kTree, kHierarchical };
enum class Sharding { kNone, kFull };
enum class CollectiveFidelity { kAggregated, kPerMessage };
enum class StorageKind { kLocal, kShared };

struct StragglerConfig {
  int node = 0;
  int gpu = -1;                  // one GPU (local rank) of the node; -1: all of them
  double gpu_step_scale = 1.0;   // step time on this node's GPUs (or on `gpu`) = step x this
  double cpu_speed_scale = 1.0;  // this node's core speed = model's core speed x this
};

struct ClusterConfig {
  int nodes = 1;
  int gpus_per_node = 1;  // resolved: cluster.gpus_per_node, else hardware.gpus
  Topology topology = Topology::kStar;
  int fat_tree_nodes_per_switch = 8;     // leaf switch radix towards nodes (fat-tree only)
  double fat_tree_oversubscription = 1;  // down / up capacity of a leaf switch (fat-tree only)
  // One NIC, each direction (full duplex). Not stated in the scenario: the model's probed links when a
  // network probe reached it, else these defaults (sim/cluster_network.h labels which).
  double nic_bytes_per_s = 12.5e9;
  double nic_latency_s = 5e-6;
  bool nic_rate_stated = false;     // cluster.network.nic_bytes_per_s was written
  bool nic_latency_stated = false;  // cluster.network.nic_latency_s was written
  int nics_per_node = 1;
  double intra_node_bytes_per_s = 300e9;  // GPU-to-GPU inside a node (NVLink), each direction, per GPU
  double intra_node_latency_s = 2e-6;
  std::vector<StragglerConfig> stragglers;
  // The nodes are namespaces or containers on one host: every node's CPU work runs on one set of
  // hardware.cpu_cores cores (their networks stay separate).
  bool nodes_share_cores = false;
  int Ranks() const { return nodes * gpus_per_node; }
};

struct CollectiveConfig {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAnalytic;  // default: ring when nodes > 1
  double gradient_bytes = -1;  // bytes reduced per optimizer step; < 0: the model's collective.gradient_bytes
  double bucket_bytes = 0;     // DDP bucket size; 0: one bucket holding every gradient
  double overlap = 0;          // fraction of the GPU step that is backward (buckets go out during it)
  Sharding sharding = Sharding::kNone;
  CollectiveFidelity fidelity = CollectiveFidelity::kAggregated;
};

struct StorageConfig {
  StorageKind kind = StorageKind::kLocal;
  double aggregate_bytes_per_s = 2e9;  // shared: the file system's total read bandwidth
  double latency_s = 1e-3;             // shared: per request
  bool client_cache = true;            // shared: the node's page cache keeps what it read (NFS, Lustre);
                                       // false for an object store over HTTP (every read is a request)
  std::vector<models::StorageTier> tiers;  // storage.tiers, fastest first; empty: the model's storage
};

// checkpoint: periodic saves of the training state, simulated as storage writes that share the
// storage with the data loaders' reads (docs/scenario-format.md, "Checkpoints").
enum class CheckpointMode { kSync, kAsync };
enum class CheckpointWriters { kRank0, kPerNode, kAllRanks };
enum class CheckpointTarget { kLocal, kShared };

struct CheckpointConfig {
  int64_t every_steps = 0;  // 0: no checkpoint section (no saves)
  double bytes = 0;         // the whole model + optimizer state
  CheckpointMode mode = CheckpointMode::kSync;
  CheckpointWriters writers = CheckpointWriters::kRank0;  // default: all_ranks under FSDP, else rank0
  CheckpointTarget target = CheckpointTarget::kLocal;     // default: shared when storage.kind is shared
  double snapshot_bytes_per_s = 0;  // async: device-to-host copy rate (required for async)
  bool enabled() const { return every_steps > 0; }
};

struct Scenario {
  std::string path;        // the file it came from ("" for inline)
  std::string model_path;  // resolved; may be empty
  std::string trace_path;  // resolved; may be empty (then the model's trace)
  LoaderConfig loader;
  HardwareConfig hardware;
  TrainConfig train;
  std::string data_format;                 // container to simulate (files, tar, lmdb, hdf5); "" = as captured
  std::map<std::string, models::MediaShapeSpec> data_media;  // data.media: mix and shapes; empty = as captured
  bool data_sequential = false;
  bool decode_on_gpu = false;          // decode.device "gpu" (assumed catalogue costs)
  models::GpuDecodeCosts gpu_decode;  // decode.gpu_* overrides of the catalogue  // data.access "sequential" (a streaming pass) rather than "random"
  std::string replay_order = "recorded";   // recorded | shuffled
  std::string replay_fidelity = "sample";  // sample: one activity per sample stage; batch: per batch
  bool rank_folding = true;  // replay.rank_folding "auto": large identical clusters through representative nodes
  ClusterConfig cluster;
  CollectiveConfig collective;
  StorageConfig storage;
  CheckpointConfig checkpoint;
  uint64_t seed = 0;
  int64_t timeline_max_events = 200000;
  nlohmann::json resolved;  // the scenario as simulated (no sweep), for result.json
};

// One point of a sweep: the axis values that produced it and the scenario.
struct SweepPoint {
  std::vector<std::pair<std::string, nlohmann::json>> axes;
  Scenario scenario;
};

// Names as written in scenario files and results.
const char* TopologyName(Topology t);
const char* AlgorithmName(CollectiveAlgorithm a);
const char* StorageKindName(StorageKind k);

// Loads, validates and resolves a scenario file.
Result<nlohmann::json> LoadScenarioJson(const std::string& path);
// Parses a scenario object (no "sweep" expansion). `base_dir` resolves relative paths.
Result<Scenario> ParseScenario(const nlohmann::json& json, const std::string& where, const std::string& base_dir);

// The simulator's peak memory for a cluster scenario simulated with `simulated_nodes` of its nodes in
// full (all of them by default), estimated from the measured cost of its parts (docs/performance.md,
// "Large clusters", "Rank folding"): each simulated rank's training loop and each DataLoader worker is
// a SimGrid actor, every simulated rank records each micro-batch's data wait and each step's duration,
// and every other rank costs its share of the platform. The loader refuses, with one line, a scenario
// whose estimate exceeds kMaxSimulationBytes at the fewest nodes it may be simulated with
// (SimulatedNodesAtLeast); the simulator refuses one that it must simulate in full beyond the limit.
double EstimatedSimulationBytes(const Scenario& scenario, int simulated_nodes = -1);
// The nodes a simulation of `scenario` runs in full at the least: the representative nodes when rank
// folding may apply (more nodes than those, not turned off), else all. Whether it does is the
// simulator's decision (sim/rank_folding.h).
int SimulatedNodesAtLeast(const Scenario& scenario);
inline constexpr double kMaxSimulationBytes = 64e9;
inline constexpr int kMaxClusterNodes = 16384;
// The most GPUs (ranks) the simulator builds a platform for. SimGrid seals each node's zone by going
// over every host of the platform, so building it grows as nodes x GPUs: with 8 workers per rank and
// rank folding, 65,536 GPUs (8192 x 8) took 40 s to build and 10 steps, 131,072 GPUs (16384 x 8) about
// 4 minutes (docs/performance.md, "Rank folding"). Larger was not tried.
inline constexpr int kMaxClusterGpus = 131072;
// Expands "sweep" axes into their cartesian product in axis-declaration order, last axis fastest.
// Without "sweep", one point with no axes.
Result<std::vector<SweepPoint>> ExpandSweep(const nlohmann::json& json, const std::string& where,
                                            const std::string& base_dir);
// Directory part of a path ("." when none): the project's one definition (common/paths.h).
using ::simreplay::DirectoryOf;

}  // namespace simreplay::scenarios
