#include "replay/manifest.h"

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
