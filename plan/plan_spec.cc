#include "plan/plan_spec.h"

#include "plan/units.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "common/json_fields.h"
#include "scenarios/scenario.h"
#include "common/json_reader.h"

namespace simreplay::plan {

namespace {

using nlohmann::json;

// The plan is read with the project's one typed document reader (common/json_reader.h).
using PlanReader = JsonReader;

std::string Resolve(const std::string& base_dir, const std::string& p) {
  if (p.empty() || p[0] == '/') return p;
  return base_dir + "/" + p;
}

Status ParseTarget(const PlanReader& r, const json& j, TargetSpec* t) {
  const std::string p = "/job/target";
  SIMREPLAY_RETURN_IF_ERROR(r.Keys(j, p, {"samples", "epochs", "steps"}));
  if (j.size() != 1) return r.Error(p, "'job.target' must have exactly one of 'samples', 'epochs', 'steps'");
  const std::string key = j.begin().key();
  t->kind = key == "samples"  ? TargetSpec::Kind::kSamples
            : key == "epochs" ? TargetSpec::Kind::kEpochs
                              : TargetSpec::Kind::kSteps;
  SIMREPLAY_RETURN_IF_ERROR(r.Number(j, p, key.c_str(), &t->value, true, 0, 1e18));
  if (t->value <= 0)
    return r.Error(p + "/" + key, fmt::format("'job.target.{}' must be > 0, found {:g}", key, t->value));
  return Status::Ok();
}

// job.sequence and job.activation_checkpointing (plan/pilot_rules.h applies them).
Status ParsePilotShape(const PlanReader& r, const json& j, PlanSpec* plan) {
  if (j.contains("sequence")) {
    const json& s = j["sequence"];
    const std::string at = "/job/sequence";
    auto& seq = plan->sequence;
    SIMREPLAY_RETURN_IF_ERROR(
        r.Keys(s, at, {"length", "measured_length", "attention_share_time", "attention_share_memory"}));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(s, at, "length", &seq.length, true, 1, 1e9));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(s, at, "measured_length", &seq.measured_length, false, 1, 1e9));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(s, at, "attention_share_time", &seq.attention_share_time, false, 0, 1));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(s, at, "attention_share_memory", &seq.attention_share_memory, false, 0, 1));
  }
  if (j.contains("activation_checkpointing")) {
    const json& a = j["activation_checkpointing"];
    const std::string at = "/job/activation_checkpointing";
    auto& ac = plan->activation_checkpointing;
    SIMREPLAY_RETURN_IF_ERROR(r.Keys(a, at, {"use", "memory_saved_fraction", "recompute_fraction"}));
    SIMREPLAY_RETURN_IF_ERROR(r.String(a, at, "use", &ac.use, false, {"off", "on", "auto"}));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(a, at, "memory_saved_fraction", &ac.memory_saved_fraction, false, 0, 0.99));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(a, at, "recompute_fraction", &ac.recompute_fraction, false, 0, 5));
  }
  return Status::Ok();
}

Status ParseJob(const PlanReader& r, const json& j, PlanSpec* plan) {
  SIMREPLAY_RETURN_IF_ERROR(r.Keys(j, "/job",
                                   {"target", "global_batch", "model", "sequence", "activation_checkpointing",
                                    "eval", "checkpoint", "phases"}));
  if (!j.contains("target")) return r.Error("/job", "missing required object 'job.target'");
  SIMREPLAY_RETURN_IF_ERROR(ParseTarget(r, j["target"], &plan->target));
  if (j.contains("global_batch")) {
    const std::string at = "/job/global_batch";
    auto& b = plan->global_batch;
    SIMREPLAY_RETURN_IF_ERROR(r.Keys(j["global_batch"], at, {"critical_batch_samples", "reference_samples"}));
    SIMREPLAY_RETURN_IF_ERROR(
        r.Number(j["global_batch"], at, "critical_batch_samples", &b.critical_batch_samples, true, 1, 1e12));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(j["global_batch"], at, "reference_samples", &b.reference_samples, false, 1, 1e12));
  }

  if (!j.contains("model")) return r.Error("/job", "missing required object 'job.model'");
  const json& m = j["model"];
  auto& model = plan->model;
  SIMREPLAY_RETURN_IF_ERROR(r.Keys(m, "/job/model",
                                   {"parameters", "optimizer", "precision", "activation_bytes_per_gpu",
                                    "compute_bound_fraction", "memory_headroom_fraction"}));
  SIMREPLAY_RETURN_IF_ERROR(r.Number(m, "/job/model", "parameters", &model.parameters, true, 1, 1e15));
  SIMREPLAY_RETURN_IF_ERROR(r.String(m, "/job/model", "optimizer", &model.optimizer, false, {"adam", "adamw", "sgd"}));
  SIMREPLAY_RETURN_IF_ERROR(r.String(m, "/job/model", "precision", &model.precision, false, {"bf16", "fp16", "fp32"}));
  SIMREPLAY_RETURN_IF_ERROR(r.Number(m, "/job/model", "activation_bytes_per_gpu", &model.activation_bytes_per_gpu,
                                     false, 0, 1e15, &model.activation_given));
  SIMREPLAY_RETURN_IF_ERROR(r.Number(m, "/job/model", "compute_bound_fraction", &model.compute_bound_fraction, false, 0,
                                     1, &model.compute_bound_given));
  SIMREPLAY_RETURN_IF_ERROR(
      r.Number(m, "/job/model", "memory_headroom_fraction", &model.memory_headroom_fraction, false, 0, 0.9));

  SIMREPLAY_RETURN_IF_ERROR(ParsePilotShape(r, j, plan));

  if (j.contains("eval")) {
    SIMREPLAY_RETURN_IF_ERROR(r.Keys(j["eval"], "/job/eval", {"every_steps", "duration_s"}));
    SIMREPLAY_RETURN_IF_ERROR(r.Int(j["eval"], "/job/eval", "every_steps", &plan->eval.every_steps, false, 0, 1e15));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(j["eval"], "/job/eval", "duration_s", &plan->eval.duration_s, false, 0, 1e9,
                                     &plan->eval.duration_given));
  }

  if (!j.contains("checkpoint")) return r.Error("/job", "missing required object 'job.checkpoint'");
  const json& c = j["checkpoint"];
  auto& ck = plan->checkpoint;
  SIMREPLAY_RETURN_IF_ERROR(
      r.Keys(c, "/job/checkpoint",
             {"every_s", "every_steps", "write_bytes_per_s", "read_bytes_per_s", "bytes", "mode", "snapshot_bytes_per_s", "writers"}));
  if (c.contains("every_s") && c["every_s"].is_string()) {
    if (c["every_s"] != "auto") {
      return r.Error(
          "/job/checkpoint/every_s",
          "'job.checkpoint.every_s' must be \"auto\" or a number of seconds > 0, found " + c["every_s"].dump());
    }
  } else if (c.contains("every_s")) {
    SIMREPLAY_RETURN_IF_ERROR(r.Number(c, "/job/checkpoint", "every_s", &ck.every_s, true, 1, 1e9));
    ck.auto_interval = false;
  }
  if (c.contains("every_steps")) {
    if (c.contains("every_s")) {
      return r.Error("/job/checkpoint/every_steps",
                     "'job.checkpoint' states both 'every_s' and 'every_steps': give one save interval");
    }
    SIMREPLAY_RETURN_IF_ERROR(r.Int(c, "/job/checkpoint", "every_steps", &ck.every_steps, true, 1, 1e15));
    ck.auto_interval = false;
  }
  SIMREPLAY_RETURN_IF_ERROR(r.Number(c, "/job/checkpoint", "write_bytes_per_s", &ck.write_bytes_per_s, true, 1, 1e15));
  SIMREPLAY_RETURN_IF_ERROR(r.Number(c, "/job/checkpoint", "read_bytes_per_s", &ck.read_bytes_per_s, true, 1, 1e15));
  SIMREPLAY_RETURN_IF_ERROR(r.Number(c, "/job/checkpoint", "bytes", &ck.bytes, false, 0, 1e18));
  ck.mode_given = c.contains("mode");
  SIMREPLAY_RETURN_IF_ERROR(r.String(c, "/job/checkpoint", "mode", &ck.mode, false, {"sync", "async"}));
  SIMREPLAY_RETURN_IF_ERROR(r.Number(c, "/job/checkpoint", "snapshot_bytes_per_s", &ck.snapshot_bytes_per_s, false, 1,
                                     1e15, &ck.snapshot_given));
  ck.writers_given = c.contains("writers");
  SIMREPLAY_RETURN_IF_ERROR(r.String(c, "/job/checkpoint", "writers", &ck.ddp_writers, false, {"rank0", "per_node"}));

  if (j.contains("phases")) {
    const json& ph = j["phases"];
    auto& p = plan->phases;
    const std::string at = "/job/phases";
    SIMREPLAY_RETURN_IF_ERROR(r.Keys(ph, at,
                                     {"download_bytes", "download_bytes_per_s", "preprocess_s", "export_s",
                                      "copy_out_bytes", "copy_out_bytes_per_s"}));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(ph, at, "download_bytes", &p.download_bytes, false, 0, 1e18));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(ph, at, "download_bytes_per_s", &p.download_bytes_per_s, false, 0, 1e15));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(ph, at, "preprocess_s", &p.preprocess_s, false, 0, 1e9));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(ph, at, "export_s", &p.export_s, false, 0, 1e9));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(ph, at, "copy_out_bytes", &p.copy_out_bytes, false, 0, 1e18));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(ph, at, "copy_out_bytes_per_s", &p.copy_out_bytes_per_s, false, 0, 1e15));
    if (p.download_bytes > 0 && p.download_bytes_per_s <= 0) {
      return r.Error(at, "'job.phases.download_bytes' needs 'download_bytes_per_s' > 0");
    }
    if (p.copy_out_bytes > 0 && p.copy_out_bytes_per_s <= 0) {
      return r.Error(at, "'job.phases.copy_out_bytes' needs 'copy_out_bytes_per_s' > 0");
    }
  }
  return Status::Ok();
}

Status ParseStringList(const PlanReader& r, const json& j, const std::string& pointer, std::vector<std::string>* out,
                       const std::set<std::string>& allowed = {}) {
  if (!j.is_array() || j.empty()) {
    return r.Error(pointer, fmt::format("'{}' must be a non-empty array of strings", PlanReader::Dotted(pointer)));
  }
  out->clear();
  std::set<std::string> seen;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string p = pointer + "/" + std::to_string(i);
    if (!j[i].is_string())
      return r.Error(p, fmt::format("'{}' must hold strings, found {}", PlanReader::Dotted(pointer), j[i].dump()));
    std::string s = j[i].get<std::string>();
    if (!allowed.empty() && !allowed.count(s)) {
      return r.Error(p, fmt::format("'{}' values must be ddp or fsdp, found \"{}\"", PlanReader::Dotted(pointer), s));
    }
    if (!seen.insert(s).second)
      return r.Error(p, fmt::format("'{}' lists \"{}\" twice", PlanReader::Dotted(pointer), s));
    out->push_back(std::move(s));
  }
  return Status::Ok();
}

Status ParseCandidates(const PlanReader& r, const json& j, CandidatesSpec* c) {
  const std::string at = "/candidates";
  SIMREPLAY_RETURN_IF_ERROR(r.Keys(j, at, {"gpu", "nodes", "gpus_per_node", "sharding"}));
  if (!j.contains("gpu")) return r.Error(at, "missing required array 'candidates.gpu'");
  SIMREPLAY_RETURN_IF_ERROR(ParseStringList(r, j["gpu"], at + "/gpu", &c->gpus));
  if (!j.contains("nodes") || !j["nodes"].is_array() || j["nodes"].empty()) {
    return r.Error(j.contains("nodes") ? at + "/nodes" : at,
                   "'candidates.nodes' must be a non-empty array of node counts");
  }
  std::set<int> seen;
  for (size_t i = 0; i < j["nodes"].size(); ++i) {
    const auto& v = j["nodes"][i];
    const std::string p = at + "/nodes/" + std::to_string(i);
    // The scenario loader's limit (scenarios::kMaxClusterNodes): every node count a plan accepts is one
    // its candidate scenarios can hold.
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > scenarios::kMaxClusterNodes) {
      return r.Error(p, fmt::format("'candidates.nodes' values must be whole numbers in [1, {}] (the scenario "
                                    "loader's cluster.nodes limit), found {}",
                                    scenarios::kMaxClusterNodes, v.dump()));
    }
    if (!seen.insert(v.get<int>()).second) return r.Error(p, "'candidates.nodes' lists " + v.dump() + " twice");
    c->nodes.push_back(v.get<int>());
  }
  int64_t gpn = c->gpus_per_node;
  SIMREPLAY_RETURN_IF_ERROR(r.Int(j, at, "gpus_per_node", &gpn, false, 1, 64));
  c->gpus_per_node = static_cast<int>(gpn);
  c->sharding = {"ddp"};
  if (j.contains("sharding"))
    SIMREPLAY_RETURN_IF_ERROR(ParseStringList(r, j["sharding"], at + "/sharding", &c->sharding, {"ddp", "fsdp"}));
  return Status::Ok();
}

// A number > 0 (a rate or a time that cannot be zero) labelled as given in the plan file; "none"
// (when `none_allowed`) is infinity: the component is not counted.
Status Positive(const PlanReader& r, const json& object, const std::string& pointer, const char* key, double hi,
                SourcedValue* out, bool none_allowed = false) {
  if (!object.contains(key)) return Status::Ok();
  const std::string p = pointer + "/" + key;
  if (none_allowed && object[key].is_string() && object[key] == "none") {
    *out = {std::numeric_limits<double>::infinity(), "input", "plan file: not counted"};
    return Status::Ok();
  }
  const double v = object[key].is_number() ? object[key].get<double>() : -1;
  if (!(v > 0) || v > hi) {
    return r.Error(p, fmt::format("'{}' must be a number in (0, {:g}]{}, found {}", PlanReader::Dotted(p), hi,
                                  none_allowed ? " or \"none\"" : "", object[key].dump()));
  }
  *out = {v, "input", "plan file"};
  return Status::Ok();
}

// reliability.launch_spread: {"preprocess_s": [...], "restart_s": [...]}, at least one list, each of 2 or
// more launches in (0, 1e7] s. Restart launches stand for reliability.restart_s, so that figure must be given.
Status ParseLaunchSpread(const PlanReader& r, const json& rel, ReliabilitySpec* out) {
  if (!rel.contains("launch_spread")) return Status::Ok();
  const json& ls = rel["launch_spread"];
  const std::string at = "/reliability/launch_spread";
  SIMREPLAY_RETURN_IF_ERROR(r.Keys(ls, at, {"preprocess_s", "restart_s"}));
  if (!ls.contains("preprocess_s") && !ls.contains("restart_s")) {
    return r.Error(at, "'reliability.launch_spread' needs 'preprocess_s' or 'restart_s' (launches timed in s), found "
                       "neither");
  }
  auto launches = [&](const char* key, std::vector<double>* values) -> Status {
    if (!ls.contains(key)) return Status::Ok();
    const json& a = ls[key];
    const std::string kat = at + "/" + key;
    if (!a.is_array() || a.size() < 2 || a.size() > 100000) {
      return r.Error(kat, fmt::format("'reliability.launch_spread.{}' must be an array of 2 to 100000 launch times in "
                                      "s, found {}",
                                      key, a.is_array() ? fmt::format("{} value(s)", a.size()) : a.dump()));
    }
    for (size_t i = 0; i < a.size(); ++i) {
      const double v = a[i].is_number() ? a[i].get<double>() : -1;
      if (!(v > 0) || v > 1e7) {
        return r.Error(kat + "/" + std::to_string(i),
                       fmt::format("'reliability.launch_spread.{}' values must be seconds in (0, 1e7], found {}", key,
                                   a[i].dump()));
      }
      values->push_back(v);
    }
    return Status::Ok();
  };
  SIMREPLAY_RETURN_IF_ERROR(launches("preprocess_s", &out->launch_preprocess_s));
  SIMREPLAY_RETURN_IF_ERROR(launches("restart_s", &out->launch_restart_s));
  if (!out->launch_restart_s.empty() && !rel.contains("restart_s")) {
    return r.Error(at + "/restart_s",
                   "'reliability.launch_spread.restart_s' gives launches of 'reliability.restart_s' (one fixed "
                   "figure), which is not given");
  }
  return Status::Ok();
}

Status ParseReliability(const PlanReader& r, const json& rel, ReliabilitySpec* out) {
  const std::string at = "/reliability";
  SIMREPLAY_RETURN_IF_ERROR(r.Keys(rel, at,
                                   {"gpu_mtbf_h", "node_mtbf_h", "network_mtbf_h", "small_job_floor", "restart_s",
                                    "restart", "known_failures", "launch_spread"}));
  if (rel.contains("known_failures")) {
    const json& k = rel["known_failures"];
    const std::string kat = at + "/known_failures";
    if (!k.is_array()) return r.Error(kat, "'reliability.known_failures' must be an array of seconds, found " + k.dump());
    out->known_failures_given = true;
    for (size_t i = 0; i < k.size(); ++i) {
      const double v = k[i].is_number() ? k[i].get<double>() : -1;
      const double previous = out->known_failures_s.empty() ? 0 : out->known_failures_s.back();
      if (!(v > previous) || v > 1e10) {
        return r.Error(kat + "/" + std::to_string(i),
                       fmt::format("'reliability.known_failures' values must be seconds in (0, 1e10], strictly "
                                   "ascending, found {}",
                                   k[i].dump()));
      }
      out->known_failures_s.push_back(v);
    }
  }
  SIMREPLAY_RETURN_IF_ERROR(ParseLaunchSpread(r, rel, out));
  FailureModelSpec& f = out->failures;
  SIMREPLAY_RETURN_IF_ERROR(Positive(r, rel, at, "gpu_mtbf_h", 1e12, &f.gpu_mtbf_h));
  SIMREPLAY_RETURN_IF_ERROR(Positive(r, rel, at, "node_mtbf_h", 1e12, &f.node_mtbf_h, true));
  SIMREPLAY_RETURN_IF_ERROR(Positive(r, rel, at, "network_mtbf_h", 1e12, &f.network_mtbf_h, true));
  if (rel.contains("small_job_floor")) {
    const json& fl = rel["small_job_floor"];
    const std::string fat = at + "/small_job_floor";
    if (fl.is_string() && fl == "none") {
      f.floor.enabled = false;
    } else {
      SIMREPLAY_RETURN_IF_ERROR(
          r.Keys(fl, fat, {"job_mttf_h", "reference_gpus", "reference_gpus_per_node", "exponent"}));
      SIMREPLAY_RETURN_IF_ERROR(Positive(r, fl, fat, "job_mttf_h", 1e12, &f.floor.job_mttf_h));
      SIMREPLAY_RETURN_IF_ERROR(Positive(r, fl, fat, "reference_gpus", 1e7, &f.floor.reference_gpus));
      SIMREPLAY_RETURN_IF_ERROR(
          Positive(r, fl, fat, "reference_gpus_per_node", 1024, &f.floor.reference_gpus_per_node));
      if (fl.contains("exponent")) {
        double e = 0;
        SIMREPLAY_RETURN_IF_ERROR(r.Number(fl, fat, "exponent", &e, true, 0, 0.99));
        f.floor.exponent = {e, "input", "plan file"};
      }
    }
  }
  if (auto why = FindFailureModelContradiction(f)) return r.Error(at, *why);

  RestartSpec& rs = out->restart;
  if (rel.contains("restart_s") && rel.contains("restart")) {
    return r.Error(at + "/restart",
                   "'reliability.restart_s' (one fixed figure) and 'reliability.restart' (its parts) contradict "
                   "each other: give one of them, found both");
  }
  if (rel.contains("restart_s")) {
    double v = 0;
    SIMREPLAY_RETURN_IF_ERROR(r.Number(rel, at, "restart_s", &v, true, 0, 1e7));
    rs.fixed_s = SourcedValue{v, "input", "plan file (detection, rescheduling and initialisation as one figure)"};
  }
  if (rel.contains("restart")) {
    const json& p = rel["restart"];
    const std::string pat = at + "/restart";
    SIMREPLAY_RETURN_IF_ERROR(r.Keys(p, pat,
                                     {"detection_s", "rescheduling_s", "process_group_init_s",
                                      "process_group_init_reference_ranks", "process_group_init_exponent"}));
    auto part = [&](const char* key, double lo, double hi, SourcedValue* value) -> Status {
      if (!p.contains(key)) return Status::Ok();
      double v = 0;
      SIMREPLAY_RETURN_IF_ERROR(r.Number(p, pat, key, &v, true, lo, hi));
      *value = {v, "input", "plan file"};
      return Status::Ok();
    };
    SIMREPLAY_RETURN_IF_ERROR(part("detection_s", 0, 1e7, &rs.detection_s));
    SIMREPLAY_RETURN_IF_ERROR(part("rescheduling_s", 0, 1e7, &rs.rescheduling_s));
    SIMREPLAY_RETURN_IF_ERROR(part("process_group_init_s", 0, 1e7, &rs.init_s));
    SIMREPLAY_RETURN_IF_ERROR(Positive(r, p, pat, "process_group_init_reference_ranks", 1e7, &rs.init_reference_ranks));
    SIMREPLAY_RETURN_IF_ERROR(part("process_group_init_exponent", 0, 3, &rs.init_exponent));
  }
  return Status::Ok();
}

}  // namespace

BytesPerParameter StateBytes(const std::string& optimizer, const std::string& precision) {
  // Mixed precision (bf16/fp16): 2 B weights + 2 B gradients + 4 B fp32 master copy + optimizer state
  // in fp32 (Adam: m and v, 8 B; SGD with momentum: 4 B) = 16 B/parameter for Adam (ZeRO paper,
  // Rajbhandari et al. 2020). fp32: 4 B weights + 4 B gradients + state, no master copy.
  BytesPerParameter b;
  const bool mixed = precision != "fp32";
  b.weights = mixed ? 2 : 4;
  b.gradients = mixed ? 2 : 4;
  b.master = mixed ? 4 : 0;
  b.optimizer = optimizer == "sgd" ? 4 : 8;
  return b;
}

Result<PlanSpec> ParsePlan(const std::string& text, const std::string& path) {
  // The project's one JSON parser: FILE:LINE on syntax errors, NaN and numbers no double holds (1e400:
  // an abort here before the plan fuzz target found it).
  auto parsed = ParseJsonText(text, path);
  if (!parsed.ok()) return parsed.status();
  const json& j = *parsed;
  PlanReader r(path, text);
  PlanSpec plan;
  plan.path = path;
  plan.document = j;
  const std::string base = scenarios::DirectoryOf(path);
  SIMREPLAY_RETURN_IF_ERROR(r.Keys(j, "",
                                   {"schema", "scenario", "job", "measured_on", "scenario_by_gpu", "candidates",
                                    "reliability", "reservation", "monte_carlo", "prices_per_gpu_hour", "network", "uncertainty",
                                    "simulation", "preflight", "catalogue", "name", "description"}));
  if (j.contains("schema")) {
    std::string schema;
    SIMREPLAY_RETURN_IF_ERROR(r.String(j, "", "schema", &schema, true));
    if (schema != kPlanSchema) {
      return r.Error("/schema", fmt::format("expected schema \"{}\", found \"{}\"", kPlanSchema, schema));
    }
  }
  std::string scenario;
  SIMREPLAY_RETURN_IF_ERROR(r.String(j, "", "scenario", &scenario, true));
  plan.scenario_path = Resolve(base, scenario);
  if (!j.contains("job")) return r.Error("", "missing required object 'job'");
  SIMREPLAY_RETURN_IF_ERROR(ParseJob(r, j["job"], &plan));
  SIMREPLAY_RETURN_IF_ERROR(r.String(j, "", "measured_on", &plan.measured_on, true));
  if (j.contains("scenario_by_gpu")) {
    if (!j["scenario_by_gpu"].is_object()) {
      return r.Error("/scenario_by_gpu", "'scenario_by_gpu' must be an object {\"GPU\": \"scenario.json\"}");
    }
    for (const auto& [gpu, file] : j["scenario_by_gpu"].items()) {
      std::string f;
      SIMREPLAY_RETURN_IF_ERROR(r.String(j["scenario_by_gpu"], "/scenario_by_gpu", gpu.c_str(), &f, true));
      plan.scenario_by_gpu[gpu] = Resolve(base, f);
    }
  }
  if (!j.contains("candidates")) return r.Error("", "missing required object 'candidates'");
  SIMREPLAY_RETURN_IF_ERROR(ParseCandidates(r, j["candidates"], &plan.candidates));

  if (j.contains("reliability")) {
    SIMREPLAY_RETURN_IF_ERROR(ParseReliability(r, j["reliability"], &plan.reliability));
  } else if (auto why = FindFailureModelContradiction(plan.reliability.failures)) {
    return r.Error("", *why);  // unreachable with the defaults; kept so the check has one home
  }
  if (!plan.reliability.known_failures_s.empty()) {
    // The replay starts with training: a failure in the phases before it has no place in the model.
    const auto& ph = plan.phases;
    const double before_training_s =
        (ph.download_bytes > 0 ? ph.download_bytes / ph.download_bytes_per_s : 0) + ph.preprocess_s;
    if (plan.reliability.known_failures_s.front() <= before_training_s) {
      return r.Error("/reliability/known_failures/0",
                     fmt::format("'reliability.known_failures' must fall after the phases before training "
                                 "(download + preprocess = {:g} s), found {:g}",
                                 before_training_s, plan.reliability.known_failures_s.front()));
    }
  }
  if (j.contains("reservation")) {
    const json& res = j["reservation"];
    SIMREPLAY_RETURN_IF_ERROR(r.Keys(res, "/reservation", {"days", "buffer", "knee_fraction", "probability"}));
    if (res.contains("days")) {
      if (!res["days"].is_array() || res["days"].empty()) {
        return r.Error("/reservation/days", "'reservation.days' must be a non-empty array of days");
      }
      plan.reservation.days.clear();
      for (size_t i = 0; i < res["days"].size(); ++i) {
        const auto& v = res["days"][i];
        if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0 || v.get<double>() > 3650) {
          return r.Error("/reservation/days/" + std::to_string(i),
                         "'reservation.days' values must be numbers in (0, 3650], found " + v.dump());
        }
        plan.reservation.days.push_back(v.get<double>());
      }
    }
    SIMREPLAY_RETURN_IF_ERROR(r.Number(res, "/reservation", "buffer", &plan.reservation.buffer, false, 0, 10));
    SIMREPLAY_RETURN_IF_ERROR(
        r.Number(res, "/reservation", "knee_fraction", &plan.reservation.knee_fraction, false, 0.01, 1));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(res, "/reservation", "probability", &plan.reservation.probability, false, 0.5,
                                       0.999, &plan.reservation.probability_given));
  }
  if (j.contains("monte_carlo")) {
    const json& mc = j["monte_carlo"];
    SIMREPLAY_RETURN_IF_ERROR(r.Keys(mc, "/monte_carlo", {"trials", "seed"}));
    SIMREPLAY_RETURN_IF_ERROR(r.Int(mc, "/monte_carlo", "trials", &plan.monte_carlo.trials, false, 100, 1'000'000));
    int64_t seed = 0;
    SIMREPLAY_RETURN_IF_ERROR(r.Int(mc, "/monte_carlo", "seed", &seed, false, 0, int64_t{1} << 53));
    plan.monte_carlo.seed = static_cast<uint64_t>(seed);
    plan.monte_carlo.given = true;
  }
  if (!j.contains("prices_per_gpu_hour")) return r.Error("", "missing required object 'prices_per_gpu_hour'");
  SIMREPLAY_RETURN_IF_ERROR(r.Keys(j["prices_per_gpu_hour"], "/prices_per_gpu_hour",
                                   std::set<std::string>(plan.candidates.gpus.begin(), plan.candidates.gpus.end())));
  for (const auto& gpu : plan.candidates.gpus) {
    double price = -1;
    SIMREPLAY_RETURN_IF_ERROR(
        r.Number(j["prices_per_gpu_hour"], "/prices_per_gpu_hour", gpu.c_str(), &price, true, 0, 1e6));
    plan.prices_per_gpu_hour[gpu] = price;
  }
  if (j.contains("network")) {
    const json& n = j["network"];
    auto& net = plan.network;
    SIMREPLAY_RETURN_IF_ERROR(r.Keys(n, "/network", {"nic_bytes_per_s", "latency_s", "intra_latency_s", "overlap"}));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(n, "/network", "nic_bytes_per_s", &net.nic_bytes_per_s, true, 1e6, 1e15));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(n, "/network", "latency_s", &net.latency_s, false, 0, 1));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(n, "/network", "intra_latency_s", &net.intra_latency_s, false, 0, 1));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(n, "/network", "overlap", &net.overlap, false, 0, 1, &net.overlap_given));
    net.given = true;
  }
  if (j.contains("uncertainty")) {
    const json& u = j["uncertainty"];
    SIMREPLAY_RETURN_IF_ERROR(r.Keys(u, "/uncertainty", {"error_low", "error_high", "bias", "source"}));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(u, "/uncertainty", "error_low", &plan.uncertainty.error_low, true, -0.9, 0));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(u, "/uncertainty", "error_high", &plan.uncertainty.error_high, true, 0, 10));
    // The band's own centre: a bias outside it would put the point outside its interval.
    SIMREPLAY_RETURN_IF_ERROR(r.Number(u, "/uncertainty", "bias", &plan.training_bias, false,
                                       plan.uncertainty.error_low, plan.uncertainty.error_high));
    plan.uncertainty.source = "the plan file";
    plan.uncertainty.scope = "as the plan file states";
    plan.uncertainty_given = true;
    SIMREPLAY_RETURN_IF_ERROR(r.String(u, "/uncertainty", "source", &plan.uncertainty.source, false));
  }
  if (j.contains("simulation")) {
    const json& s = j["simulation"];
    auto& sim = plan.simulation;
    SIMREPLAY_RETURN_IF_ERROR(r.Keys(s, "/simulation", {"initial_steps", "max_steps", "tolerance", "jobs"}));
    SIMREPLAY_RETURN_IF_ERROR(r.Int(s, "/simulation", "initial_steps", &sim.initial_steps, false, 40, 10'000'000));
    SIMREPLAY_RETURN_IF_ERROR(r.Int(s, "/simulation", "max_steps", &sim.max_steps, false, 40, 10'000'000));
    SIMREPLAY_RETURN_IF_ERROR(r.Number(s, "/simulation", "tolerance", &sim.tolerance, false, 1e-5, 0.2));
    int64_t jobs = 0;
    SIMREPLAY_RETURN_IF_ERROR(r.Int(s, "/simulation", "jobs", &jobs, false, 0, 256));
    sim.jobs = static_cast<int>(jobs);
    if (sim.max_steps < sim.initial_steps) {
      return r.Error("/simulation/max_steps", "'simulation.max_steps' must be >= 'simulation.initial_steps'");
    }
  }
  std::string preflight, catalogue;
  SIMREPLAY_RETURN_IF_ERROR(r.String(j, "", "preflight", &preflight, false));
  SIMREPLAY_RETURN_IF_ERROR(r.String(j, "", "catalogue", &catalogue, false));
  plan.preflight_path = Resolve(base, preflight);
  plan.catalogue_path = Resolve(base, catalogue);
  return plan;
}

Result<PlanSpec> LoadPlanFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open the plan file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParsePlan(buffer.str(), path);
}

}  // namespace simreplay::plan
