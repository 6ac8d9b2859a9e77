#include "replay/manifest.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "common/json_fields.h"
#include "replay/trace_reader.h"

namespace simreplay::replay {

namespace {
const nlohmann::json* Find(const nlohmann::json& m, const char* section, const char* key) {
  if (!m.contains(section) || !m[section].is_object() || !m[section].contains(key)) return nullptr;
  return &m[section][key];
}
}  // namespace

int ManifestInt(const nlohmann::json& manifest, const char* section, const char* key, int fallback) {
  const auto* v = Find(manifest, section, key);
  return v != nullptr && v->is_number_integer() ? v->get<int>() : fallback;
}

bool ManifestBool(const nlohmann::json& manifest, const char* section, const char* key) {
  const auto* v = Find(manifest, section, key);
  return v != nullptr && v->is_boolean() && v->get<bool>();
}

double ManifestDouble(const nlohmann::json& manifest, const char* section, const char* key, double fallback) {
  const auto* v = Find(manifest, section, key);
  return v != nullptr && v->is_number() ? v->get<double>() : fallback;
}

std::string ContainerOfManifest(const nlohmann::json& manifest) {
  for (const char* section : {"data", "notes"}) {
    const auto* v = Find(manifest, section, "format");
    if (v != nullptr && v->is_string()) return v->get<std::string>();
  }
  return "files";
}

}  // namespace simreplay::replay

// ---- Manifest comparison ----

namespace simreplay::replay {

namespace {

using nlohmann::json;

// Fields whose difference makes two runs incomparable (docs/manifest.md, "What matters"), in three
// groups: dotted prefixes, so "versions" covers every key under it.
const std::vector<std::string> kManifestSoftware = {"versions", "packages.sha256", "container.image_digest", "rocm",
                                                    "revisions.model"};
const std::vector<std::string> kManifestData = {"revisions.dataset", "revisions.dataset_files.sha256"};
const std::vector<std::string> kManifestHardware = {"hardware.cpu_model", "hardware.cores", "hardware.threads",
                                                    "hardware.gpus"};

std::vector<std::string> MattersPrefixes(ManifestScope scope) {
  std::vector<std::string> out = kManifestSoftware;
  if (scope == ManifestScope::kRuns) out.insert(out.end(), kManifestData.begin(), kManifestData.end());
  if (scope != ManifestScope::kSoftware) out.insert(out.end(), kManifestHardware.begin(), kManifestHardware.end());
  return out;
}

// Never compared: different in every run, or compared through its digest.
const std::vector<std::string> kManifestSkipped = {"start_time", "t0_monotonic_ns", "t0_time_ns", "packages.list"};

bool UnderAny(const std::string& path, const std::vector<std::string>& prefixes) {
  for (const auto& p : prefixes) {
    if (path == p || (path.size() > p.size() && path.compare(0, p.size(), p) == 0 && path[p.size()] == '.')) {
      return true;
    }
  }
  return false;
}

void FlattenManifest(const json& x, const std::string& prefix, std::map<std::string, json>* out) {
  if (x.is_object() && !x.empty()) {
    for (const auto& [key, value] : x.items()) FlattenManifest(value, prefix.empty() ? key : prefix + "." + key, out);
  } else {
    (*out)[prefix] = x;
  }
}

// "name==version" lines by name (a name listed twice keeps both versions).
std::map<std::string, std::string> PackagesByName(const json& manifest) {
  std::map<std::string, std::string> out;
  if (!manifest.contains("packages") || !manifest["packages"].is_object()) return out;
  const json& list = manifest["packages"].value("list", json());
  if (!list.is_array()) return out;
  for (const auto& item : list) {
    const std::string s = item.is_string() ? item.get<std::string>() : item.dump();
    const size_t eq = s.find("==");
    const std::string name = s.substr(0, eq), version = eq == std::string::npos ? "" : s.substr(eq + 2);
    auto it = out.find(name);
    out[name] = it == out.end() ? version : it->second + " | " + version;
  }
  return out;
}

bool HasPackageList(const json& m) {
  return m.contains("packages") && m["packages"].is_object() && m["packages"].contains("list") &&
         m["packages"]["list"].is_array();
}

std::string ShowManifestValue(const json& v) {
  const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  return s.size() <= 100 ? s : s.substr(0, 97) + "...";
}

}  // namespace

ManifestDiff DiffManifests(const json& a, const json& b, ManifestScope scope) {
  std::map<std::string, json> fa, fb;
  FlattenManifest(a, "", &fa);
  FlattenManifest(b, "", &fb);
  std::vector<std::string> keys;
  for (const auto& [k, v] : fa) keys.push_back(k);
  for (const auto& [k, v] : fb) {
    if (!fa.count(k)) keys.push_back(k);
  }
  std::sort(keys.begin(), keys.end());
  ManifestDiff diff;
  const std::vector<std::string> matters_prefixes = MattersPrefixes(scope);
  for (const auto& k : keys) {
    if (UnderAny(k, kManifestSkipped)) continue;
    const bool in_a = fa.count(k) > 0, in_b = fb.count(k) > 0;
    if (in_a && in_b && fa[k] == fb[k]) continue;
    const bool matters = UnderAny(k, matters_prefixes);
    if (matters && (!in_a || !in_b)) {
      diff.unknown.push_back(k);  // an older manifest without the field: cannot be checked
      continue;
    }
    diff.differences.push_back({k, in_a ? fa[k] : json(), in_b ? fb[k] : json(), matters});
  }
  const bool digests_differ = std::any_of(diff.differences.begin(), diff.differences.end(),
                                          [](const ManifestDifference& d) { return d.field == "packages.sha256"; });
  if (digests_differ && HasPackageList(a) && HasPackageList(b)) {
    const auto pa = PackagesByName(a), pb = PackagesByName(b);
    std::map<std::string, bool> names;
    for (const auto& [n, v] : pa) names[n] = true;
    for (const auto& [n, v] : pb) names[n] = true;
    for (const auto& [n, unused] : names) {
      auto ia = pa.find(n), ib = pb.find(n);
      const json va = ia == pa.end() ? json() : json(ia->second), vb = ib == pb.end() ? json() : json(ib->second);
      if (va != vb) diff.differences.push_back({"packages." + n, va, vb, true});
    }
  }
  std::stable_sort(diff.differences.begin(), diff.differences.end(),
                   [](const ManifestDifference& x, const ManifestDifference& y) {
                     if (x.matters != y.matters) return x.matters;
                     return x.field < y.field;
                   });
  for (const auto& d : diff.differences) (d.matters ? diff.matters_count : diff.info_count)++;
  return diff;
}

std::string ManifestDiff::MattersSummary(size_t limit) const {
  std::string out;
  size_t shown = 0;
  for (const auto& d : differences) {
    if (!d.matters) continue;
    if (shown == limit) {
      out += fmt::format("; ... and {} more", matters_count - static_cast<int>(limit));
      break;
    }
    out += fmt::format("{}{}: {} -> {}", shown == 0 ? "" : "; ", d.field, ShowManifestValue(d.a),
                       ShowManifestValue(d.b));
    ++shown;
  }
  return out;
}

std::string ManifestDiffText(const ManifestDiff& diff, const std::string& a_name, const std::string& b_name) {
  std::string out = fmt::format("--- A {}\n+++ B {}\n", a_name, b_name);
  for (const auto& d : diff.differences) {
    out += fmt::format("{} {}: {} -> {}\n", d.matters ? "MATTERS" : "info   ", d.field, ShowManifestValue(d.a),
                       ShowManifestValue(d.b));
  }
  for (const auto& k : diff.unknown) {
    out += fmt::format("unknown {}: recorded in only one manifest (an older writer), not compared\n", k);
  }
  out += fmt::format("{} difference(s) that matter, {} informational: {}\n", diff.matters_count, diff.info_count,
                     diff.matters() ? "the runs are NOT comparable as they are" : "comparable");
  return out;
}

json ManifestDiffJson(const ManifestDiff& diff, const std::string& a_name, const std::string& b_name) {
  json differences = json::array();
  for (const auto& d : diff.differences) {
    differences.push_back({{"field", d.field}, {"a", d.a}, {"b", d.b}, {"matters", d.matters}});
  }
  return {{"schema", "simreplay.manifest-diff/1"},
          {"a", a_name},
          {"b", b_name},
          {"differences", differences},
          {"unknown", diff.unknown},
          {"matters", diff.matters()},
          {"matters_count", diff.matters_count},
          {"info_count", diff.info_count}};
}

Result<json> LoadRunManifest(const std::string& path_in) {
  std::string path = path_in;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) path += "/preflight.json";
  const std::string base = std::filesystem::path(path).filename().string();
  if (base.find(".jsonl") != std::string::npos) {
    auto reader = TraceReader::Open(path);
    if (!reader.ok()) return reader.status();
    const json& m = (*reader)->header().manifest;
    if (!m.is_object()) return Status::InvalidArgument(path + ":1: expected a manifest object in the header");
    return m;
  }
  auto doc = ReadJsonFile(path);
  if (!doc.ok()) return doc.status();
  if (!doc->is_object()) {
    return Status::InvalidArgument(fmt::format("{}:1: expected a JSON object, found {}", path, doc->type_name()));
  }
  if (!doc->contains("schema")) return *doc;  // a bare manifest
  if (!doc->contains("manifest") || !(*doc)["manifest"].is_object()) {
    return Status::InvalidArgument(
        fmt::format("{}:1: expected a 'manifest' object in this {} document, found none", path,
                    (*doc)["schema"].is_string() ? (*doc)["schema"].get<std::string>() : "schema-tagged"));
  }
  return (*doc)["manifest"];
}

}  // namespace simreplay::replay
