// Typed, validated access to the fields of one JSON object, with errors that name where the object
// came from ("FILE:LINE") and which field was wrong. Shared by the trace, scenario and model loaders.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace simreplay {

class JsonFields {
 public:
  // `where` prefixes every error message, e.g. "trace.jsonl:12".
  JsonFields(const nlohmann::json& object, std::string where) : object_(object), where_(std::move(where)) {}

  bool Has(const char* key) const { return object_.contains(key) && !object_[key].is_null(); }

  // Integers: must be JSON integers that fit int64. kNonNegative rejects values < 0.
  enum class Sign { kAny, kNonNegative };
  Status GetInt(const char* key, int64_t* out, Sign sign = Sign::kNonNegative) const;
  Status GetOptionalInt(const char* key, int64_t* out, Sign sign = Sign::kNonNegative) const;
  // Finite numbers (integers accepted).
  Status GetDouble(const char* key, double* out, Sign sign = Sign::kNonNegative) const;
  Status GetOptionalDouble(const char* key, double* out, Sign sign = Sign::kNonNegative) const;
  Status GetString(const char* key, std::string* out) const;
  Status GetOptionalString(const char* key, std::string* out) const;
  Status GetOptionalBool(const char* key, bool* out) const;

  Status Error(const std::string& message) const { return Status::InvalidArgument(where_ + ": " + message); }
  const std::string& where() const { return where_; }

 private:
  static std::string fmt_missing(const char* key);
  const nlohmann::json& object_;
  std::string where_;
};

// Parses `text` as JSON, mapping nlohmann's exceptions to a Status naming `where`. Recognises NaN and
// Infinity literals (which some writers emit) and reports them as such.
Result<nlohmann::json> ParseJson(const std::string& text, const std::string& where);

// Parses the whole text of the file `path` (already read): errors are "PATH:LINE: ...". Never throws,
// also not for a number no double holds (nlohmann's out_of_range 406, which is not a parse_error).
Result<nlohmann::json> ParseJsonText(const std::string& text, const std::string& path);

// Reads and parses a whole JSON file (scenario, model): errors carry FILE:LINE.
Result<nlohmann::json> ReadJsonFile(const std::string& path);

}  // namespace simreplay
