#include "advise/tool_compatibility.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace simreplay::advise {

extern const char kToolCompatibilityJson[];

namespace {

std::string ToolText(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

std::vector<std::string> ToolStrings(const nlohmann::json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.contains(key) || !j[key].is_array()) return out;
  for (const auto& v : j[key]) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

bool ListContains(const std::vector<std::string>& list, const std::string& x) {
  return std::find(list.begin(), list.end(), x) != list.end();
}

std::string JoinList(const std::vector<std::string>& list) {
  std::string out;
  for (const auto& s : list) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// The manifest's torch version, its CUDA / HIP versions ("" when null or absent).
std::string ManifestVersion(const nlohmann::json& manifest, const char* key) {
  if (!manifest.contains("versions") || !manifest["versions"].is_object()) return "";
  const auto& v = manifest["versions"];
  return v.contains(key) && v[key].is_string() ? v[key].get<std::string>() : "";
}

// "linux-x86_64" from the manifest's `platform` {system, machine} when recorded; "" otherwise.
std::string ManifestPlatform(const nlohmann::json& manifest) {
  if (!manifest.contains("platform") || !manifest["platform"].is_object()) return "";
  std::string system = ToolText(manifest["platform"], "system"), machine = ToolText(manifest["platform"], "machine");
  if (system.empty() || machine.empty()) return "";
  std::transform(system.begin(), system.end(), system.begin(), [](unsigned char c) { return std::tolower(c); });
  if (machine == "AMD64" || machine == "amd64") machine = "x86_64";
  if (machine == "arm64") machine = system == "darwin" ? "arm64" : "aarch64";
  return system + "-" + machine;
}

}  // namespace

std::vector<int> ParseVersion(const std::string& text) {
  std::vector<int> out;
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    int n = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) n = n * 10 + (text[i++] - '0');
    out.push_back(n);
    if (i < text.size() && text[i] == '.') {
      ++i;
    } else {
      break;
    }
  }
  return out;
}

bool VersionLess(const std::vector<int>& a, const std::vector<int>& b) {
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const int x = i < a.size() ? a[i] : 0, y = i < b.size() ? b[i] : 0;
    if (x != y) return x < y;
  }
  return false;
}

Result<ToolTable> ParseToolTable(const nlohmann::json& json, const std::string& where) {
  if (!json.is_object() || json.value("schema", "") != "simreplay.tool_compatibility/1") {
    return Status::InvalidArgument(where + ": expected schema simreplay.tool_compatibility/1");
  }
  ToolTable table;
  table.checked = ToolText(json, "checked");
  if (table.checked.empty()) return Status::InvalidArgument(where + ": 'checked' (the date) is missing");
  if (!json.contains("tools") || !json["tools"].is_array()) return Status::InvalidArgument(where + ": 'tools' must be an array");
  for (const auto& t : json["tools"]) {
    if (!t.is_object() || ToolText(t, "name").empty() || !t.contains("requires") || !t["requires"].is_object() ||
        ToolStrings(t, "sources").empty()) {
      return Status::InvalidArgument(where + ": every tool needs 'name', 'requires' and 'sources'");
    }
    table.tools.push_back(t);
  }
  return table;
}

Result<ToolTable> BuiltinToolTable() {
  auto json = nlohmann::json::parse(kToolCompatibilityJson, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return Status::Internal("advise/tool_compatibility.json: malformed JSON");
  return ParseToolTable(json, "advise/tool_compatibility.json");
}

std::vector<ToolCheck> CheckTools(const ToolTable& table, const nlohmann::json& manifest, const std::string& format_in) {
  std::vector<ToolCheck> out;
  const std::string torch = ManifestVersion(manifest, "torch"), cuda = ManifestVersion(manifest, "cuda"), hip = ManifestVersion(manifest, "hip");
  const bool has_versions = manifest.contains("versions") && manifest["versions"].is_object();
  const std::string platform = ManifestPlatform(manifest);
  std::string format = format_in;
  if (format.empty() && manifest.contains("data") && manifest["data"].is_object()) format = ToolText(manifest["data"], "format");
  std::vector<std::pair<std::string, int64_t>> media;  // data.mix: media -> samples
  if (manifest.contains("data") && manifest["data"].contains("mix") && manifest["data"]["mix"].is_object()) {
    for (const auto& [name, n] : manifest["data"]["mix"].items()) media.emplace_back(name, n.is_number() ? n.get<int64_t>() : 0);
  }
  for (const auto& t : table.tools) {
    ToolCheck c;
    c.name = ToolText(t, "name");
    c.tool = ToolText(t, "tool");
    c.simulated_as = ToolText(t, "simulated_as");
    c.sources = ToolStrings(t, "sources");
    const auto& req = t["requires"];
    auto fail = [&c](std::string why) {
      c.compatible = false;
      c.incompatible.push_back(std::move(why));
    };
    const std::string runtime = ToolText(req, "gpu_runtime");
    if (runtime == "cuda") {
      if (!has_versions) {
        c.unverified.push_back("CUDA: the manifest records no versions");
      } else if (cuda.empty()) {
        fail(fmt::format("needs a CUDA build of torch; the trace's torch {} has versions.cuda = null{}",
                         torch.empty() ? "(unknown)" : torch, hip.empty() ? "" : " (a ROCm build, HIP " + hip + ")"));
      } else if (!ToolText(req, "cuda_min").empty() && VersionLess(ParseVersion(cuda), ParseVersion(ToolText(req, "cuda_min")))) {
        fail(fmt::format("needs CUDA >= {}; the trace's torch was built for CUDA {}", ToolText(req, "cuda_min"), cuda));
      }
    }
    const std::string torch_min = ToolText(req, "torch_min");
    if (!torch_min.empty()) {
      if (torch.empty()) {
        c.unverified.push_back("torch >= " + torch_min + ": the manifest records no torch version");
      } else if (VersionLess(ParseVersion(torch), ParseVersion(torch_min))) {
        fail(fmt::format("needs torch >= {}; the trace ran torch {}", torch_min, torch));
      }
    }
    const auto platforms = ToolStrings(req, "platforms");
    if (!platforms.empty()) {
      if (platform.empty()) {
        c.unverified.push_back("platform (" + JoinList(platforms) + "): the manifest does not record the OS and architecture");
      } else if (!ListContains(platforms, platform)) {
        fail(fmt::format("runs on {}; the trace ran on {}", JoinList(platforms), platform));
      }
    }
    const auto supported_media = ToolStrings(req, "media");
    if (!supported_media.empty()) {
      if (media.empty()) c.unverified.push_back("media types: the manifest records no data.mix");
      for (const auto& [name, n] : media) {
        if (!ListContains(supported_media, name)) {
          fail(fmt::format("does not handle media '{}' ({} samples of the trace's dataset); it handles {}", name, n,
                           JoinList(supported_media)));
        }
      }
    }
    const auto formats = ToolStrings(req, "formats");
    if (!formats.empty() && !format.empty() && !ListContains(formats, format)) {
      const std::string note = ToolText(req, "format_note");
      if (ListContains(formats, "beton") && formats.size() == 1) {
        c.unverified.push_back("format: the dataset (" + format + ") must be converted first: " + note);
      } else {
        fail(fmt::format("reads {}; the job reads '{}'{}", JoinList(formats), format, note.empty() ? "" : " (" + note + ")"));
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace simreplay::advise
