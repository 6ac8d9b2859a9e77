// Typed lookups in a trace manifest (docs/trace-format.md, "header"): the manifest is free-form, so
// every lookup has a fallback for a missing section, key or a value of another type.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace simreplay::replay {

// manifest[section][key] as an int, or `fallback`.
int ManifestInt(const nlohmann::json& manifest, const char* section, const char* key, int fallback);
// manifest[section][key] when it is true; false otherwise.
bool ManifestBool(const nlohmann::json& manifest, const char* section, const char* key);
// manifest[section][key] as a number, or `fallback`.
double ManifestDouble(const nlohmann::json& manifest, const char* section, const char* key, double fallback);
// The storage container a trace was captured in: data.format ("files", "tar", "lmdb", "hdf5"),
// falling back to notes.format; "files" when neither is given.
std::string ContainerOfManifest(const nlohmann::json& manifest);

}  // namespace simreplay::replay
