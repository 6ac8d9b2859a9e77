// Which data-loading tools (DALI-style GPU decoding, FFCV, torchdata) the traced job could adopt: the
// dated table advise/tool_compatibility.json (compiled in) checked against the trace's manifest. A
// tool that fails a check is never suggested; `tune` reports every tool with its reasons
// (docs/advice.md, "Loader tools").
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace simreplay::advise {

struct ToolCheck {
  std::string name;          // stable id: "dali_gpu_decode", "ffcv", ...
  std::string tool;          // in words
  std::string simulated_as;  // the scenario setting that simulates it ("decode.device=gpu"); "" = not simulated
  bool compatible = true;    // no check failed
  std::vector<std::string> incompatible;  // each failed check, with the manifest's value
  std::vector<std::string> unverified;    // checks the manifest cannot answer (a key it does not record)
  std::vector<std::string> sources;
};

struct ToolTable {
  std::string checked;  // the date the table was checked against its sources
  std::vector<nlohmann::json> tools;
};

// The compiled-in table. Fails only if the data file is malformed (a build error in practice).
Result<ToolTable> BuiltinToolTable();
Result<ToolTable> ParseToolTable(const nlohmann::json& json, const std::string& where);

// Every tool of `table` checked against `manifest` (a trace header's manifest, docs/manifest.md).
// `format`: the container the job reads (the manifest's data.format when empty).
std::vector<ToolCheck> CheckTools(const ToolTable& table, const nlohmann::json& manifest, const std::string& format);

// "1.13.0a0" -> {1, 13, 0}: the leading numeric components; empty when there are none.
std::vector<int> ParseVersion(const std::string& text);
// a < b, comparing components in order (missing components count as 0).
bool VersionLess(const std::vector<int>& a, const std::vector<int>& b);

}  // namespace simreplay::advise
