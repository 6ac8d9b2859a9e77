#include "scenarios/scenario.h"

#include <array>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "common/error_line.h"
#include "common/json_fields.h"
#include "scenarios/memory_limit.h"
#include "scenarios/simulation_budget.h"

namespace simreplay::scenarios {

namespace {

using Sign = JsonFields::Sign;

const std::set<std::string> kTopKeys = {"model", "trace",   "data",       "loader",  "hardware",
                                        "train", "replay",  "seed",       "sweep",   "outputs",
                                        "name",  "cluster", "collective", "storage", "description", "decode",
                                        "checkpoint"};

Status CheckKnownKeys(const nlohmann::json& object, const std::set<std::string>& known, const JsonFields& f) {
  for (const auto& [key, value] : object.items()) {
    if (!known.count(key)) return f.Error("unknown key '" + key + "'");
  }
  return Status::Ok();
}

Status GetIntIn(const JsonFields& f, const char* key, int* out, int64_t lo, int64_t hi) {
  int64_t v = *out;
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt(key, &v, Sign::kAny));
  if (v < lo || v > hi) {
    return f.Error(std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                   "], found " + std::to_string(v));
  }
  *out = static_cast<int>(v);
  return Status::Ok();
}

Status ParseLoader(const nlohmann::json& j, const std::string& where, LoaderConfig* c) {
  JsonFields f(j, where + ": loader");
  SIMREPLAY_RETURN_IF_ERROR(CheckKnownKeys(
      j, {"num_workers", "batch_size", "prefetch_factor", "pin_memory", "persistent_workers", "drop_last", "shuffle"},
      f));
  SIMREPLAY_RETURN_IF_ERROR(GetIntIn(f, "num_workers", &c->num_workers, 0, 4096));
  SIMREPLAY_RETURN_IF_ERROR(GetIntIn(f, "batch_size", &c->batch_size, 1, 1 << 20));
  SIMREPLAY_RETURN_IF_ERROR(GetIntIn(f, "prefetch_factor", &c->prefetch_factor, 1, 4096));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalBool("pin_memory", &c->pin_memory));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalBool("persistent_workers", &c->persistent_workers));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalBool("drop_last", &c->drop_last));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalBool("shuffle", &c->shuffle));
  if (c->persistent_workers && c->num_workers == 0) {
    return f.Error("persistent_workers requires num_workers > 0 (as in PyTorch)");
  }
  return Status::Ok();
}

Status ParseTrain(const nlohmann::json& j, const std::string& where, TrainConfig* c) {
  JsonFields f(j, where + ": train");
  SIMREPLAY_RETURN_IF_ERROR(CheckKnownKeys(j, {"steps", "epochs", "step_time_s", "grad_accum", "dataset_samples"}, f));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("steps", &c->steps));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("epochs", &c->epochs));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalDouble("step_time_s", &c->step_time_s));
  SIMREPLAY_RETURN_IF_ERROR(GetIntIn(f, "grad_accum", &c->grad_accum, 1, 1 << 16));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("dataset_samples", &c->dataset_samples));
  if (c->steps > 0 && c->epochs > 0) return f.Error("give 'steps' or 'epochs', not both");
  if (c->steps == 0 && c->epochs == 0) return f.Error("give 'steps' or 'epochs' (> 0)");
  if (c->steps > 100'000'000 || c->epochs > 100'000) return f.Error("'steps' or 'epochs' too large to simulate");
  if (c->step_time_s > 1e6) return f.Error("'step_time_s' too large");
  return Status::Ok();
}

Status GetPositive(const JsonFields& f, const char* key, double* out, double max) {
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalDouble(key, out));
  if (!(*out > 0) || *out > max) {
    return f.Error(fmt::format("'{}' must be in (0, {:g}], found {:g}", key, max, *out));
  }
  return Status::Ok();
}

Status GetNonNegative(const JsonFields& f, const char* key, double* out, double max) {
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalDouble(key, out));
  if (*out > max) return f.Error(fmt::format("'{}' must be in [0, {:g}], found {:g}", key, max, *out));
  return Status::Ok();
}

// One of `names` (index = enum value).
template <typename Enum, size_t N>
Status GetEnum(const JsonFields& f, const char* key, const std::array<const char*, N>& names, Enum* out) {
  if (!f.Has(key)) return Status::Ok();
  std::string value;
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalString(key, &value));
  std::string expected;
  for (size_t i = 0; i < N; ++i) {
    if (value == names[i]) {
      *out = static_cast<Enum>(i);
      return Status::Ok();
    }
    expected += (i == 0 ? "\"" : i + 1 == N ? " or \"" : ", \"") + std::string(names[i]) + "\"";
  }
  return f.Error(fmt::format("'{}' must be {}, found \"{}\"", key, expected, value));
}

constexpr std::array<const char*, 2> kTopologyNames = {"star", "fat-tree"};
constexpr std::array<const char*, 4> kAlgorithmNames = {"analytic", "ring", "tree", "hierarchical"};
constexpr std::array<const char*, 2> kShardingNames = {"none", "full"};
constexpr std::array<const char*, 2> kFidelityNames = {"aggregated", "per_message"};
constexpr std::array<const char*, 2> kStorageKindNames = {"local", "shared"};

Status ParseNetwork(const nlohmann::json& j, const std::string& where, ClusterConfig* c) {
  if (!j.is_object()) return Status::InvalidArgument(where + ": cluster: 'network' must be an object");
  JsonFields f(j, where + ": cluster.network");
  SIMREPLAY_RETURN_IF_ERROR(CheckKnownKeys(j, {"nic_bytes_per_s", "nic_latency_s", "nics_per_node"}, f));
  SIMREPLAY_RETURN_IF_ERROR(GetPositive(f, "nic_bytes_per_s", &c->nic_bytes_per_s, 1e15));
  SIMREPLAY_RETURN_IF_ERROR(GetNonNegative(f, "nic_latency_s", &c->nic_latency_s, 10));
  c->nic_rate_stated = f.Has("nic_bytes_per_s");
  c->nic_latency_stated = f.Has("nic_latency_s");
  return GetIntIn(f, "nics_per_node", &c->nics_per_node, 1, 64);
}

Status ParseIntraNode(const nlohmann::json& j, const std::string& where, ClusterConfig* c) {
  if (!j.is_object()) return Status::InvalidArgument(where + ": cluster: 'intra_node' must be an object");
  JsonFields f(j, where + ": cluster.intra_node");
  SIMREPLAY_RETURN_IF_ERROR(CheckKnownKeys(j, {"bytes_per_s", "latency_s"}, f));
  SIMREPLAY_RETURN_IF_ERROR(GetPositive(f, "bytes_per_s", &c->intra_node_bytes_per_s, 1e15));
  return GetNonNegative(f, "latency_s", &c->intra_node_latency_s, 10);
}

Status ParseStragglers(const nlohmann::json& j, const std::string& where, ClusterConfig* c) {
  if (!j.is_array()) return Status::InvalidArgument(where + ": cluster: 'stragglers' must be an array");
  std::map<int, std::set<int>> seen;  // node -> GPUs listed (-1: the whole node)
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string at = fmt::format("{}: cluster.stragglers[{}]", where, i);
    if (!j[i].is_object()) return Status::InvalidArgument(at + ": must be an object");
    JsonFields f(j[i], at);
    SIMREPLAY_RETURN_IF_ERROR(CheckKnownKeys(j[i], {"node", "gpu", "gpu_step_scale", "cpu_speed_scale"}, f));
    StragglerConfig s;
    int64_t node = -1;
    SIMREPLAY_RETURN_IF_ERROR(f.GetInt("node", &node));
    if (node >= c->nodes) {
      return f.Error(fmt::format("'node' must be in [0, {}] (cluster.nodes - 1), found {}", c->nodes - 1, node));
    }
    s.node = static_cast<int>(node);
    if (f.Has("gpu")) {
      int64_t gpu = -1;
      SIMREPLAY_RETURN_IF_ERROR(f.GetInt("gpu", &gpu));
      if (gpu < 0 || gpu >= c->gpus_per_node) {
        return f.Error(
            fmt::format("'gpu' must be in [0, {}] (gpus per node - 1), found {}", c->gpus_per_node - 1, gpu));
      }
      // Cores belong to the node: one GPU cannot have slower ones.
      if (f.Has("cpu_speed_scale")) return f.Error("'cpu_speed_scale' applies to a whole node: drop it or 'gpu'");
      s.gpu = static_cast<int>(gpu);
    }
    // A node once, or each of its GPUs once.
    auto& listed = seen[s.node];
    if (listed.count(-1) || listed.count(s.gpu) || (s.gpu < 0 && !listed.empty())) {
      return f.Error(s.gpu < 0 ? fmt::format("node {} listed twice", node)
                               : fmt::format("node {} GPU {} listed twice", node, s.gpu));
    }
    listed.insert(s.gpu);
    SIMREPLAY_RETURN_IF_ERROR(GetPositive(f, "gpu_step_scale", &s.gpu_step_scale, 1e6));
    SIMREPLAY_RETURN_IF_ERROR(GetPositive(f, "cpu_speed_scale", &s.cpu_speed_scale, 1e6));
    c->stragglers.push_back(s);
  }
  return Status::Ok();
}

// cluster: needs hardware parsed first (gpus_per_node defaults to hardware.gpus).
Status ParseCluster(const nlohmann::json& j, const std::string& where, bool gpus_given, Scenario* s) {
  ClusterConfig* c = &s->cluster;
  c->gpus_per_node = s->hardware.gpus;
  if (!j.is_object()) return Status::InvalidArgument(where + ": 'cluster' must be an object");
  JsonFields f(j, where + ": cluster");
  SIMREPLAY_RETURN_IF_ERROR(
      CheckKnownKeys(j, {"nodes", "gpus_per_node", "topology", "fat_tree", "network", "intra_node", "stragglers",
                         "nodes_share_cores"},
                     f));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalBool("nodes_share_cores", &c->nodes_share_cores));
  SIMREPLAY_RETURN_IF_ERROR(GetIntIn(f, "nodes", &c->nodes, 1, kMaxClusterNodes));
  SIMREPLAY_RETURN_IF_ERROR(GetIntIn(f, "gpus_per_node", &c->gpus_per_node, 1, 64));
  if (gpus_given && f.Has("gpus_per_node") && c->gpus_per_node != s->hardware.gpus) {
    return f.Error(fmt::format("'gpus_per_node' ({}) contradicts hardware.gpus ({}): give one of them",
                               c->gpus_per_node, s->hardware.gpus));
  }
  s->hardware.gpus = c->gpus_per_node;
  if (c->Ranks() > kMaxClusterGpus) {
    return f.Error(fmt::format("{} nodes x {} GPUs are {} GPUs, more than the {} the simulator builds a platform for "
                               "(building it grows as nodes x GPUs; docs/performance.md, \"Rank folding\")",
                               c->nodes, c->gpus_per_node, c->Ranks(), kMaxClusterGpus));
  }
  SIMREPLAY_RETURN_IF_ERROR(GetEnum(f, "topology", kTopologyNames, &c->topology));
  if (j.contains("fat_tree")) {
    if (c->topology != Topology::kFatTree) return f.Error("'fat_tree' given but 'topology' is not \"fat-tree\"");
    if (!j["fat_tree"].is_object()) return f.Error("'fat_tree' must be an object");
    JsonFields t(j["fat_tree"], where + ": cluster.fat_tree");
    SIMREPLAY_RETURN_IF_ERROR(CheckKnownKeys(j["fat_tree"], {"nodes_per_switch", "oversubscription"}, t));
    SIMREPLAY_RETURN_IF_ERROR(GetIntIn(t, "nodes_per_switch", &c->fat_tree_nodes_per_switch, 1, 4096));
    SIMREPLAY_RETURN_IF_ERROR(GetPositive(t, "oversubscription", &c->fat_tree_oversubscription, 4096));
    if (c->fat_tree_oversubscription < 1) return t.Error("'oversubscription' must be >= 1 (down:up capacity)");
  }
  if (c->topology == Topology::kFatTree) {
    const double spines = c->fat_tree_nodes_per_switch / c->fat_tree_oversubscription;
    if (spines < 1 || std::abs(spines - std::round(spines)) > 1e-9) {
      return f.Error(fmt::format(
          "fat_tree: nodes_per_switch / oversubscription must be a whole number of spine switches, found {} / {:g}",
          c->fat_tree_nodes_per_switch, c->fat_tree_oversubscription));
    }
  }
  if (j.contains("network")) SIMREPLAY_RETURN_IF_ERROR(ParseNetwork(j["network"], where, c));
  if (j.contains("intra_node")) SIMREPLAY_RETURN_IF_ERROR(ParseIntraNode(j["intra_node"], where, c));
  if (j.contains("stragglers")) SIMREPLAY_RETURN_IF_ERROR(ParseStragglers(j["stragglers"], where, c));
  for (const auto& straggler : c->stragglers) {
    if (c->nodes_share_cores && straggler.cpu_speed_scale != 1) {
      return f.Error("'nodes_share_cores': the nodes share one host's cores, so no node can have slower ones "
                     "(drop cpu_speed_scale from cluster.stragglers)");
    }
  }
  return Status::Ok();
}

Status ParseCollective(const nlohmann::json& j, const std::string& where, CollectiveConfig* c) {
  if (!j.is_object()) return Status::InvalidArgument(where + ": 'collective' must be an object");
  JsonFields f(j, where + ": collective");
  SIMREPLAY_RETURN_IF_ERROR(
      CheckKnownKeys(j, {"algorithm", "gradient_bytes", "bucket_bytes", "overlap", "sharding", "fidelity"}, f));
  SIMREPLAY_RETURN_IF_ERROR(GetEnum(f, "algorithm", kAlgorithmNames, &c->algorithm));
  if (f.Has("gradient_bytes")) SIMREPLAY_RETURN_IF_ERROR(GetNonNegative(f, "gradient_bytes", &c->gradient_bytes, 1e15));
  SIMREPLAY_RETURN_IF_ERROR(GetNonNegative(f, "bucket_bytes", &c->bucket_bytes, 1e15));
  SIMREPLAY_RETURN_IF_ERROR(GetNonNegative(f, "overlap", &c->overlap, 1));
  SIMREPLAY_RETURN_IF_ERROR(GetEnum(f, "sharding", kShardingNames, &c->sharding));
  SIMREPLAY_RETURN_IF_ERROR(GetEnum(f, "fidelity", kFidelityNames, &c->fidelity));
  if (c->gradient_bytes > 0 && c->bucket_bytes > 0 && c->gradient_bytes / c->bucket_bytes > 100000) {
    return f.Error(fmt::format("{:g} buckets per step: at most 100000 (raise 'bucket_bytes')",
                               std::ceil(c->gradient_bytes / c->bucket_bytes)));
  }
  return Status::Ok();
}

// data.media: {"jpeg": {"share": 0.7, "width": 512, "height": 512}, "mp4": {"frames": 16, "scale": 2}}.
Status ParseMedia(const nlohmann::json& j, const std::string& where, std::map<std::string, models::MediaShapeSpec>* out) {
  JsonFields top(j, where + ": data.media");
  if (!j.is_object() || j.empty()) return top.Error("must be a non-empty object of media names");
  bool any_share = false, all_share = true;
  for (const auto& [name, mj] : j.items()) {
    JsonFields f(mj, where + ": data.media." + name);
    if (!mj.is_object()) return f.Error("must be an object");
    SIMREPLAY_RETURN_IF_ERROR(CheckKnownKeys(mj, {"share", "width", "height", "frames", "scale"}, f));
    models::MediaShapeSpec m;
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalDouble("share", &m.share, Sign::kAny));
    if (f.Has("share") && (m.share < 0 || m.share > 1)) return f.Error(fmt::format("'share' must be in [0, 1], found {}", m.share));
    if (!f.Has("share")) m.share = -1;
    any_share |= m.share >= 0;
    all_share &= m.share >= 0;
    int width = 0, height = 0, frames = 0;
    SIMREPLAY_RETURN_IF_ERROR(GetIntIn(f, "width", &width, 0, 1 << 16));
    SIMREPLAY_RETURN_IF_ERROR(GetIntIn(f, "height", &height, 0, 1 << 16));
    SIMREPLAY_RETURN_IF_ERROR(GetIntIn(f, "frames", &frames, 0, 100000));
    m.width = width, m.height = height, m.frames = frames;
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalDouble("scale", &m.scale, Sign::kAny));
    if (!(m.scale > 0 && m.scale <= 64)) return f.Error(fmt::format("'scale' must be in (0, 64], found {}", m.scale));
    if (m.scale != 1 && (m.width > 0 || m.height > 0)) return f.Error("give 'scale' or 'width'/'height', not both");
    (*out)[name] = m;
  }
  if (any_share && !all_share) return top.Error("give 'share' for every media listed or for none");
  if (any_share) {
    double total = 0;
    for (const auto& [name, m] : *out) total += m.share;
    if (std::abs(total - 1) > 1e-6) return top.Error(fmt::format("shares must sum to 1, found {:.6g}", total));
  }
  return Status::Ok();
}

// storage.tiers[i].shard_bytes: each shard's length in bytes, in shard order (0: estimated).
Status ParseShardBytes(const nlohmann::json& j, const JsonFields& f, std::vector<double>* out) {
  if (!j.is_array() || j.size() > 10'000'000) return f.Error("'shard_bytes' must be an array of up to 1e7 sizes");
  out->reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_number() || !(j[i].get<double>() >= 0) || j[i].get<double>() > 1e15) {
      return f.Error(fmt::format("'shard_bytes'[{}] must be a number of bytes in [0, 1e15], found {}", i, j[i].dump()));
    }
    out->push_back(j[i].get<double>());
  }
  return Status::Ok();
}

// storage.tiers: [{"kind": "nvme_cache", "bytes": 2e12}, {"kind": "object_store", "latency_s": 0.03,
// "bytes_per_s_per_stream": 1e8, "max_streams": 64}] (models/storage_tiers.h).
Status ParseTiers(const nlohmann::json& j, const std::string& where, std::vector<models::StorageTier>* out) {
  JsonFields top(j, where + ": storage.tiers");
  if (!j.is_array() || j.empty() || j.size() > 8) return top.Error("must be an array of 1 to 8 tiers, fastest first");
  for (size_t i = 0; i < j.size(); ++i) {
    JsonFields f(j[i], fmt::format("{}: storage.tiers[{}]", where, i));
    if (!j[i].is_object()) return f.Error("must be an object");
    SIMREPLAY_RETURN_IF_ERROR(CheckKnownKeys(
        j[i], {"kind", "bytes", "latency_s", "bytes_per_s_per_stream", "max_streams", "warm", "shard_samples",
               "shard_bytes", "requests_per_s"},
        f));
    models::StorageTier t;
    std::string kind;
    SIMREPLAY_RETURN_IF_ERROR(f.GetString("kind", &kind));
    if (!models::ParseTierKind(kind, &t.kind)) {
      return f.Error("'kind' must be page_cache, nvme_cache, local, parallel_fs or object_store, found \"" + kind +
                     "\"");
    }
    SIMREPLAY_RETURN_IF_ERROR(GetNonNegative(f, "bytes", &t.capacity_bytes, 1e18));
    if (f.Has("latency_s")) SIMREPLAY_RETURN_IF_ERROR(GetNonNegative(f, "latency_s", &t.latency_s, 100));
    if (f.Has("bytes_per_s_per_stream"))
      SIMREPLAY_RETURN_IF_ERROR(GetPositive(f, "bytes_per_s_per_stream", &t.bytes_per_s_per_stream, 1e15));
    if (f.Has("latency_s") && !f.Has("bytes_per_s_per_stream")) return f.Error("'latency_s' needs 'bytes_per_s_per_stream'");
    SIMREPLAY_RETURN_IF_ERROR(GetIntIn(f, "max_streams", &t.max_streams, 0, 1 << 20));
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalBool("warm", &t.warm));
    // streamed shards and a request-rate limit (docs/remote-storage.md)
    int shard_samples = 0;
    SIMREPLAY_RETURN_IF_ERROR(GetIntIn(f, "shard_samples", &shard_samples, 0, 1 << 30));
    t.shard_samples = shard_samples;
    if (f.Has("shard_bytes")) {
      if (shard_samples == 0) return f.Error("'shard_bytes' needs 'shard_samples'");
      SIMREPLAY_RETURN_IF_ERROR(ParseShardBytes(j[i]["shard_bytes"], f, &t.shard_bytes));
    }
    SIMREPLAY_RETURN_IF_ERROR(GetNonNegative(f, "requests_per_s", &t.requests_per_s, 1e9));
    if (i + 1 == j.size() && (t.kind == models::TierKind::kPageCache || t.kind == models::TierKind::kNvmeCache)) {
      return f.Error("the last tier holds the whole dataset: it must be local, parallel_fs or object_store, found " +
                     kind);
    }
    out->push_back(t);
  }
  return Status::Ok();
}

Status ParseStorage(const nlohmann::json& j, const std::string& where, StorageConfig* c) {
  if (!j.is_object()) return Status::InvalidArgument(where + ": 'storage' must be an object");
  JsonFields f(j, where + ": storage");
  SIMREPLAY_RETURN_IF_ERROR(
      CheckKnownKeys(j, {"kind", "aggregate_bytes_per_s", "latency_s", "client_cache", "tiers"}, f));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalBool("client_cache", &c->client_cache));
  SIMREPLAY_RETURN_IF_ERROR(GetEnum(f, "kind", kStorageKindNames, &c->kind));
  if (j.contains("tiers")) {
    if (c->kind == StorageKind::kShared) return f.Error("give 'tiers' or kind \"shared\", not both");
    SIMREPLAY_RETURN_IF_ERROR(ParseTiers(j["tiers"], where, &c->tiers));
  }
  SIMREPLAY_RETURN_IF_ERROR(GetPositive(f, "aggregate_bytes_per_s", &c->aggregate_bytes_per_s, 1e15));
  return GetNonNegative(f, "latency_s", &c->latency_s, 10);
}

constexpr std::array<const char*, 2> kCheckpointModeNames = {"sync", "async"};
constexpr std::array<const char*, 3> kCheckpointWriterNames = {"rank0", "per_node", "all_ranks"};
constexpr std::array<const char*, 2> kCheckpointTargetNames = {"local", "shared"};

// checkpoint: {"every_steps": N, "bytes": B, "mode", "writers", "target", "snapshot_bytes_per_s"}. Parsed
// after cluster, collective and storage: the defaults of writers and target come from them.
Status ParseCheckpoint(const nlohmann::json& j, const std::string& where, const Scenario& s, CheckpointConfig* c) {
  JsonFields f(j, where + ": checkpoint");
  if (!j.is_object()) return f.Error("must be an object");
  SIMREPLAY_RETURN_IF_ERROR(
      CheckKnownKeys(j, {"every_steps", "bytes", "mode", "writers", "target", "snapshot_bytes_per_s"}, f));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("every_steps", &c->every_steps));
  if (c->every_steps < 1) return f.Error(fmt::format("'every_steps' must be >= 1, found {}", c->every_steps));
  if (!f.Has("bytes")) return f.Error("missing required field 'bytes'");
  SIMREPLAY_RETURN_IF_ERROR(GetPositive(f, "bytes", &c->bytes, 1e15));
  c->writers = s.collective.sharding == Sharding::kFull ? CheckpointWriters::kAllRanks : CheckpointWriters::kRank0;
  c->target = s.storage.kind == StorageKind::kShared ? CheckpointTarget::kShared : CheckpointTarget::kLocal;
  SIMREPLAY_RETURN_IF_ERROR(GetEnum(f, "mode", kCheckpointModeNames, &c->mode));
  SIMREPLAY_RETURN_IF_ERROR(GetEnum(f, "writers", kCheckpointWriterNames, &c->writers));
  SIMREPLAY_RETURN_IF_ERROR(GetEnum(f, "target", kCheckpointTargetNames, &c->target));
  if (c->target == CheckpointTarget::kShared && s.storage.kind != StorageKind::kShared) {
    return f.Error("'target' \"shared\" needs storage.kind \"shared\"");
  }
  if (f.Has("snapshot_bytes_per_s") || c->mode == CheckpointMode::kAsync) {
    if (!f.Has("snapshot_bytes_per_s")) return f.Error("mode \"async\" needs 'snapshot_bytes_per_s'");
    SIMREPLAY_RETURN_IF_ERROR(GetPositive(f, "snapshot_bytes_per_s", &c->snapshot_bytes_per_s, 1e15));
  }
  return Status::Ok();
}

// Sets a dotted path ("loader.num_workers") inside a JSON object, creating objects on the way.
Status SetDotted(nlohmann::json* root, const std::string& dotted, const nlohmann::json& value, const JsonFields& f) {
  nlohmann::json* node = root;
  size_t start = 0;
  while (true) {
    size_t dot = dotted.find('.', start);
    std::string key = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (key.empty()) return f.Error("sweep axis '" + dotted + "' is not a dotted path");
    if (dot == std::string::npos) {
      (*node)[key] = value;
      return Status::Ok();
    }
    if (!node->contains(key)) (*node)[key] = nlohmann::json::object();
    node = &(*node)[key];
    if (!node->is_object()) return f.Error("sweep axis '" + dotted + "' goes through a non-object");
    start = dot + 1;
  }
}

}  // namespace

const char* TopologyName(Topology t) { return kTopologyNames[static_cast<size_t>(t)]; }
const char* AlgorithmName(CollectiveAlgorithm a) { return kAlgorithmNames[static_cast<size_t>(a)]; }
const char* StorageKindName(StorageKind k) { return kStorageKindNames[static_cast<size_t>(k)]; }

Result<nlohmann::json> LoadScenarioJson(const std::string& path) {
  auto json = ReadJsonFile(path);
  if (!json.ok()) return json.status();
  if (!json->is_object()) return Status::InvalidArgument(path + ":1: a scenario must be a JSON object");
  return json;
}

namespace {

Result<Scenario> ParseScenarioJson(const nlohmann::json& json, const std::string& where, const std::string& base_dir) {
  Scenario s;
  s.path = where;
  JsonFields f(json, where);
  SIMREPLAY_RETURN_IF_ERROR(CheckKnownKeys(json, kTopKeys, f));
  std::string model, trace;
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalString("model", &model));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalString("trace", &trace));
  if (model.empty() && trace.empty()) return f.Error("needs \"model\" or \"trace\" (or both)");
  s.model_path = ResolvePath(base_dir, model);
  s.trace_path = ResolvePath(base_dir, trace);
  for (const char* section : {"data", "loader", "hardware", "train", "replay", "outputs", "cluster", "collective", "storage"}) {
    if (json.contains(section) && !json[section].is_object()) {
      return f.Error(std::string("'") + section + "' must be an object");
    }
  }
  if (json.contains("loader")) SIMREPLAY_RETURN_IF_ERROR(ParseLoader(json["loader"], where, &s.loader));
  if (!json.contains("train")) return f.Error("missing required section 'train'");
  SIMREPLAY_RETURN_IF_ERROR(ParseTrain(json["train"], where, &s.train));
  if (json.contains("hardware")) {
    JsonFields h(json["hardware"], where + ": hardware");
    SIMREPLAY_RETURN_IF_ERROR(CheckKnownKeys(json["hardware"], {"cpu_cores", "gpus", "background_threads"}, h));
    SIMREPLAY_RETURN_IF_ERROR(GetIntIn(h, "cpu_cores", &s.hardware.cpu_cores, 0, 4096));
    SIMREPLAY_RETURN_IF_ERROR(GetIntIn(h, "gpus", &s.hardware.gpus, 1, 64));
    SIMREPLAY_RETURN_IF_ERROR(h.GetOptionalDouble("background_threads", &s.hardware.background_threads));
    if (s.hardware.background_threads > 4096) return h.Error("'background_threads' too large");
  }
  s.cluster.gpus_per_node = s.hardware.gpus;
  if (json.contains("cluster")) {
    const bool gpus_given = json.contains("hardware") && json["hardware"].contains("gpus");
    SIMREPLAY_RETURN_IF_ERROR(ParseCluster(json["cluster"], where, gpus_given, &s));
  }
  // A single node keeps the one-node alpha-beta estimate; a cluster sends its gradients over the network.
  if (s.cluster.nodes > 1) s.collective.algorithm = CollectiveAlgorithm::kRing;
  if (json.contains("collective")) SIMREPLAY_RETURN_IF_ERROR(ParseCollective(json["collective"], where, &s.collective));
  if (json.contains("storage")) SIMREPLAY_RETURN_IF_ERROR(ParseStorage(json["storage"], where, &s.storage));
  if (json.contains("checkpoint")) {
    SIMREPLAY_RETURN_IF_ERROR(ParseCheckpoint(json["checkpoint"], where, s, &s.checkpoint));
  }
  if (json.contains("data")) {
    JsonFields d(json["data"], where + ": data");
    SIMREPLAY_RETURN_IF_ERROR(CheckKnownKeys(json["data"], {"format", "media", "access"}, d));
    SIMREPLAY_RETURN_IF_ERROR(d.GetOptionalString("format", &s.data_format));
    std::string access = "random";
    SIMREPLAY_RETURN_IF_ERROR(d.GetOptionalString("access", &access));
    if (access != "random" && access != "sequential") {
      return d.Error("'access' must be \"random\" or \"sequential\", found \"" + access + "\"");
    }
    s.data_sequential = access == "sequential";
    if (json["data"].contains("media")) SIMREPLAY_RETURN_IF_ERROR(ParseMedia(json["data"]["media"], where, &s.data_media));
  }
  if (json.contains("decode")) {
    JsonFields d(json["decode"], where + ": decode");
    if (!json["decode"].is_object()) return d.Error("must be an object");
    SIMREPLAY_RETURN_IF_ERROR(CheckKnownKeys(json["decode"], {"device", "gpu_per_sample_s", "gpu_s_per_pixel",
                                                              "gpu_s_per_frame", "cpu_parse_s_per_byte"}, d));
    std::string device = "cpu";
    SIMREPLAY_RETURN_IF_ERROR(d.GetOptionalString("device", &device));
    if (device != "cpu" && device != "gpu") return d.Error("'device' must be \"cpu\" or \"gpu\", found \"" + device + "\"");
    s.decode_on_gpu = device == "gpu";
    SIMREPLAY_RETURN_IF_ERROR(GetNonNegative(d, "gpu_per_sample_s", &s.gpu_decode.per_sample_s, 10));
    SIMREPLAY_RETURN_IF_ERROR(GetNonNegative(d, "gpu_s_per_pixel", &s.gpu_decode.s_per_pixel, 1));
    SIMREPLAY_RETURN_IF_ERROR(GetNonNegative(d, "gpu_s_per_frame", &s.gpu_decode.s_per_frame, 10));
    SIMREPLAY_RETURN_IF_ERROR(GetNonNegative(d, "cpu_parse_s_per_byte", &s.gpu_decode.cpu_parse_s_per_byte, 1));
    if (d.Has("gpu_per_sample_s") || d.Has("gpu_s_per_pixel") || d.Has("gpu_s_per_frame") || d.Has("cpu_parse_s_per_byte"))
      s.gpu_decode.source = "scenario decode.* (the rest from the assumed catalogue)";
  }
  if (json.contains("replay")) {
    JsonFields r(json["replay"], where + ": replay");
    SIMREPLAY_RETURN_IF_ERROR(CheckKnownKeys(json["replay"], {"order", "fidelity", "rank_folding"}, r));
    std::string folding = "auto";
    SIMREPLAY_RETURN_IF_ERROR(r.GetOptionalString("rank_folding", &folding));
    if (folding != "auto" && folding != "off") {
      return r.Error("'rank_folding' must be \"auto\" or \"off\", found \"" + folding + "\"");
    }
    s.rank_folding = folding == "auto";
    SIMREPLAY_RETURN_IF_ERROR(r.GetOptionalString("fidelity", &s.replay_fidelity));
    if (s.replay_fidelity != "sample" && s.replay_fidelity != "batch") {
      return r.Error("'fidelity' must be \"sample\" or \"batch\", found \"" + s.replay_fidelity + "\"");
    }
    SIMREPLAY_RETURN_IF_ERROR(r.GetOptionalString("order", &s.replay_order));
    if (s.replay_order != "recorded" && s.replay_order != "shuffled") {
      return r.Error("'order' must be \"recorded\" or \"shuffled\", found \"" + s.replay_order + "\"");
    }
  }
  if (json.contains("outputs")) {
    JsonFields o(json["outputs"], where + ": outputs");
    SIMREPLAY_RETURN_IF_ERROR(CheckKnownKeys(json["outputs"], {"timeline_max_events"}, o));
    SIMREPLAY_RETURN_IF_ERROR(o.GetOptionalInt("timeline_max_events", &s.timeline_max_events));
  }
  int64_t seed = 0;
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("seed", &seed));
  s.seed = static_cast<uint64_t>(seed);
  // Once every section is known: workers, steps and rank folding decide what the simulation costs.
  if (auto machine = MachineMemoryLimit(); !machine.ok()) return machine.status();
  if (const double bytes = EstimatedSimulationBytes(s, SimulatedNodesAtLeast(s)); bytes > SimulationMemoryLimitBytes()) {
    const nlohmann::json& cluster = json.contains("cluster") ? json["cluster"] : json;
    return JsonFields(cluster, where + (json.contains("cluster") ? ": cluster" : ""))
        .Error(fmt::format("{} nodes x {} GPUs with {} workers per rank need an estimated {} to simulate, "
                           "more than {} (fewer nodes, workers or steps)",
                           s.cluster.nodes, s.cluster.gpus_per_node, s.loader.num_workers, ShowGigabytes(bytes),
                           DescribeSimulationMemoryLimit()));
  }
  s.resolved = json;
  s.resolved.erase("sweep");
  return s;
}

}  // namespace

double EstimatedSimulationBytes(const Scenario& scenario, int simulated_nodes) {
  // Measured with scripts/scale_benchmark.sh (docs/performance.md, "Large clusters"): about 48 kB per
  // actor with guarded stacks (the stack pages it touched, SimGrid's actor and activity state, the
  // rank's share of everything else: 549 MiB at 1024 ranks x 10 actors); unguarded, the whole stack
  // plus some 7 kB (10529 MiB at 4096 ranks x 10 actors); 16 bytes per rank and micro-batch recorded
  // (data wait, step time); 64 MB fixed. A rank not simulated (rank folding) costs its share of the
  // platform, about 8 kB (501 MiB at 65,536 GPUs folded to 64, docs/performance.md, "Rank folding").
  // An estimate to refuse what cannot fit, not a prediction.
  constexpr double kGuardedBytesPerActor = 48e3, kUnguardedBytesBeyondStack = 16e3;
  constexpr double kBytesPerRecord = 16, kFixedBytes = 64e6, kPlatformBytesPerRank = 8e3;
  const int nodes = std::max(scenario.cluster.nodes, 1);
  const int simulated = simulated_nodes < 0 ? nodes : std::min(simulated_nodes, nodes);
  const double ranks = static_cast<double>(scenario.cluster.Ranks());
  const double simulated_ranks = ranks * simulated / nodes;
  const double actors = simulated_ranks * (2.0 + std::max(scenario.loader.num_workers, 0));  // loop, pin, workers
  const double bytes_per_actor = actors > kMaxGuardedActors ? kActorStackKib * 1024.0 + kUnguardedBytesBeyondStack
                                                            : kGuardedBytesPerActor;
  const double micro_batches = static_cast<double>(std::max<int64_t>(scenario.train.steps, 0)) *
                               std::max(scenario.train.grad_accum, 1);
  return kFixedBytes + actors * bytes_per_actor + simulated_ranks * micro_batches * kBytesPerRecord +
         (ranks - simulated_ranks) * kPlatformBytesPerRank;
}

int SimulatedNodesAtLeast(const Scenario& scenario) {
  const int nodes = scenario.cluster.nodes;
  return scenario.rank_folding && nodes > kRepresentativeNodes ? kRepresentativeNodes : nodes;
}

Result<Scenario> ParseScenario(const nlohmann::json& json, const std::string& where, const std::string& base_dir) {
  auto scenario = ParseScenarioJson(json, where, base_dir);
  if (!scenario.ok()) return WithLineFromFile(scenario.status(), where);  // FILE:LINE of the offending key
  return scenario;
}

Result<std::vector<SweepPoint>> ExpandSweep(const nlohmann::json& json, const std::string& where,
                                            const std::string& base_dir) {
  JsonFields f(json, where);
  std::vector<std::pair<std::string, std::vector<nlohmann::json>>> axes;
  if (json.contains("sweep")) {
    const auto& sweep = json["sweep"];
    if (!sweep.is_object()) return f.Error("'sweep' must be an object of \"dotted.path\": [values]");
    // nlohmann's object keeps keys sorted, which fixes a deterministic axis order.
    for (const auto& [axis, values] : sweep.items()) {
      if (!values.is_array() || values.empty()) return f.Error("sweep axis '" + axis + "' must be a non-empty array");
      axes.emplace_back(axis, std::vector<nlohmann::json>(values.begin(), values.end()));
    }
  }
  size_t total = 1;
  for (const auto& axis : axes) {
    total *= axis.second.size();
    if (total > 100000) return f.Error("sweep has more than 100000 points");
  }
  std::vector<SweepPoint> points;
  for (size_t i = 0; i < total; ++i) {
    nlohmann::json point_json = json;
    point_json.erase("sweep");
    SweepPoint point;
    size_t rest = i;
    std::vector<size_t> index(axes.size());
    for (size_t a = axes.size(); a-- > 0;) {
      index[a] = rest % axes[a].second.size();
      rest /= axes[a].second.size();
    }
    for (size_t a = 0; a < axes.size(); ++a) {
      const auto& value = axes[a].second[index[a]];
      SIMREPLAY_RETURN_IF_ERROR(SetDotted(&point_json, axes[a].first, value, f));
      point.axes.emplace_back(axes[a].first, value);
    }
    auto scenario = ParseScenario(point_json, where, base_dir);
    if (!scenario.ok()) {
      std::string label;
      for (const auto& [k, v] : point.axes) label += (label.empty() ? "" : ", ") + k + "=" + v.dump();
      return Status::InvalidArgument(scenario.status().message() +
                                     (label.empty() ? "" : " (sweep point " + label + ")"));
    }
    point.scenario = std::move(*scenario);
    points.push_back(std::move(point));
  }
  return points;
}

}  // namespace simreplay::scenarios
