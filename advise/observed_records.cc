#include "advise/observed_records.h"

namespace simreplay::advise {

int64_t ManifestInt(const nlohmann::json& m, const char* section, const char* key, int64_t fallback) {
  if (!m.is_object() || !m.contains(section) || !m[section].is_object()) return fallback;
  const auto& s = m[section];
  return s.contains(key) && s[key].is_number_integer() ? s[key].get<int64_t>() : fallback;
}

}  // namespace simreplay::advise
