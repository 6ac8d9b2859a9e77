#include "models/accelerator_catalogue.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "common/check.h"
#include "common/json_fields.h"

namespace simreplay::models {

// Defined in the file CMake generates from models/accelerator_catalogue.json.
extern const char kAcceleratorCatalogueJson[];

Result<AcceleratorCatalogue> AcceleratorCatalogue::Parse(const nlohmann::json& json, const std::string& where) {
  JsonFields f(json, where);
  if (!json.is_object()) return f.Error("a catalogue must be a JSON object");
  std::string schema;
  SIMREPLAY_RETURN_IF_ERROR(f.GetString("schema", &schema));
  if (schema != kAcceleratorSchema) {
    return f.Error(std::string("expected schema \"") + kAcceleratorSchema + "\", found \"" + schema + "\"");
  }
  if (!json.contains("accelerators") || !json["accelerators"].is_array() || json["accelerators"].empty()) {
    return f.Error("'accelerators' must be a non-empty array");
  }
  AcceleratorCatalogue catalogue;
  std::set<std::string> seen;
  for (size_t i = 0; i < json["accelerators"].size(); ++i) {
    const auto& item = json["accelerators"][i];
    JsonFields a(item, where + ": accelerators[" + std::to_string(i) + "]");
    if (!item.is_object()) return a.Error("must be an object");
    Accelerator acc;
    SIMREPLAY_RETURN_IF_ERROR(a.GetString("name", &acc.name));
    SIMREPLAY_RETURN_IF_ERROR(a.GetOptionalString("description", &acc.description));
    SIMREPLAY_RETURN_IF_ERROR(a.GetDouble("memory_bytes", &acc.memory_bytes));
    SIMREPLAY_RETURN_IF_ERROR(a.GetDouble("hbm_bytes_per_s", &acc.hbm_bytes_per_s));
    SIMREPLAY_RETURN_IF_ERROR(a.GetDouble("bf16_flops_per_s", &acc.bf16_flops_per_s));
    SIMREPLAY_RETURN_IF_ERROR(a.GetDouble("intra_node_bytes_per_s", &acc.intra_node_bytes_per_s));
    SIMREPLAY_RETURN_IF_ERROR(a.GetOptionalString("intra_node_link", &acc.intra_node_link));
    SIMREPLAY_RETURN_IF_ERROR(a.GetOptionalString("source", &acc.source));
    if (item.contains("device_names")) {
      const auto& names = item["device_names"];
      if (!names.is_array()) return a.Error("'device_names' must be an array of strings");
      for (const auto& n : names) {
        if (!n.is_string() || n.get<std::string>().empty()) {
          return a.Error("'device_names' must hold non-empty strings, found " + n.dump());
        }
        acc.device_names.push_back(n.get<std::string>());
      }
    }
    SIMREPLAY_RETURN_IF_ERROR(a.GetOptionalString("software_stack", &acc.software_stack));
    if (acc.software_stack != "cuda" && acc.software_stack != "rocm" && acc.software_stack != "emulated") {
      return a.Error("'software_stack' must be \"cuda\", \"rocm\" or \"emulated\", found \"" + acc.software_stack +
                     "\"");
    }
    if (acc.name.empty()) return a.Error("'name' must not be empty");
    if (!seen.insert(acc.name).second) return a.Error("duplicate accelerator '" + acc.name + "'");
    if (acc.memory_bytes <= 0 || acc.hbm_bytes_per_s <= 0 || acc.bf16_flops_per_s <= 0 ||
        acc.intra_node_bytes_per_s <= 0) {
      return a.Error("memory, bandwidths and peak of '" + acc.name + "' must be > 0");
    }
    catalogue.accelerators_.push_back(std::move(acc));
  }
  return catalogue;
}

Result<AcceleratorCatalogue> AcceleratorCatalogue::Load(const std::string& path) {
  auto json = ReadJsonFile(path);
  if (!json.ok()) return json.status();
  return Parse(*json, path);
}

const AcceleratorCatalogue& AcceleratorCatalogue::Builtin() {
  static const AcceleratorCatalogue catalogue = [] {
    auto parsed = Parse(nlohmann::json::parse(kAcceleratorCatalogueJson), "models/accelerator_catalogue.json");
    SIMREPLAY_CHECK(parsed.ok());  // the built-in file is checked by tests/models/accelerator_catalogue_test.cc
    return std::move(*parsed);
  }();
  return catalogue;
}

const Accelerator* AcceleratorCatalogue::Find(const std::string& name) const {
  for (const auto& acc : accelerators_) {
    if (acc.name == name) return &acc;
  }
  return nullptr;
}

namespace {
std::string LowerAscii(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}
}  // namespace

bool Accelerator::MatchesDeviceName(const std::string& device_name) const {
  const std::string name = LowerAscii(device_name);
  for (const auto& pattern : device_names) {
    if (name.find(LowerAscii(pattern)) != std::string::npos) return true;
  }
  return false;
}

const Accelerator* AcceleratorCatalogue::FindByDeviceName(const std::string& device_name) const {
  for (const auto& acc : accelerators_) {
    if (acc.MatchesDeviceName(device_name)) return &acc;
  }
  return nullptr;
}

std::string AcceleratorCatalogue::Names() const {
  std::string out;
  for (const auto& acc : accelerators_) out += (out.empty() ? "" : ", ") + acc.name;
  return out;
}

double ScaleStepTimeS(double step_from_s, const Accelerator& from, const Accelerator& to,
                      double compute_bound_fraction) {
  SIMREPLAY_CHECK(compute_bound_fraction >= 0 && compute_bound_fraction <= 1);
  const double c = compute_bound_fraction;
  return step_from_s *
         (c * from.bf16_flops_per_s / to.bf16_flops_per_s + (1 - c) * from.hbm_bytes_per_s / to.hbm_bytes_per_s);
}

}  // namespace simreplay::models
