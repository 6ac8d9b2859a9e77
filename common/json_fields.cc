#include "common/json_fields.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>

namespace simreplay {

namespace {

const char* TypeName(const nlohmann::json& v) { return v.type_name(); }

}  // namespace

Status JsonFields::GetInt(const char* key, int64_t* out, Sign sign) const {
  if (!object_.contains(key)) return Error(fmt_missing(key));
  const auto& v = object_[key];
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Error(std::string("field '") + key + "' is too large for a 64-bit integer");
    }
    *out = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    *out = v.get<int64_t>();
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d)) return Error(std::string("field '") + key + "' is not a finite number");
    if (std::fabs(d) >= 9.2e18) return Error(std::string("field '") + key + "' is too large for a 64-bit integer");
    return Error(std::string("field '") + key + "' must be an integer, found " + v.dump());
  } else {
    return Error(std::string("field '") + key + "' must be an integer, found " + TypeName(v));
  }
  if (sign == Sign::kNonNegative && *out < 0) {
    return Error(std::string("field '") + key + "' must be >= 0, found " + std::to_string(*out));
  }
  return Status::Ok();
}

Status JsonFields::GetOptionalInt(const char* key, int64_t* out, Sign sign) const {
  if (!Has(key)) return Status::Ok();
  return GetInt(key, out, sign);
}

Status JsonFields::GetDouble(const char* key, double* out, Sign sign) const {
  if (!object_.contains(key)) return Error(fmt_missing(key));
  const auto& v = object_[key];
  if (!v.is_number()) {
    return Error(std::string("field '") + key + "' must be a number, found " + TypeName(v));
  }
  double d = v.get<double>();
  if (!std::isfinite(d)) return Error(std::string("field '") + key + "' is not a finite number");
  if (sign == Sign::kNonNegative && d < 0) {
    return Error(std::string("field '") + key + "' must be >= 0, found " + v.dump());
  }
  *out = d;
  return Status::Ok();
}

Status JsonFields::GetOptionalDouble(const char* key, double* out, Sign sign) const {
  if (!Has(key)) return Status::Ok();
  return GetDouble(key, out, sign);
}

Status JsonFields::GetString(const char* key, std::string* out) const {
  if (!object_.contains(key)) return Error(fmt_missing(key));
  const auto& v = object_[key];
  if (!v.is_string()) return Error(std::string("field '") + key + "' must be a string, found " + TypeName(v));
  *out = v.get<std::string>();
  return Status::Ok();
}

Status JsonFields::GetOptionalString(const char* key, std::string* out) const {
  if (!Has(key)) return Status::Ok();
  return GetString(key, out);
}

Status JsonFields::GetOptionalBool(const char* key, bool* out) const {
  if (!Has(key)) return Status::Ok();
  const auto& v = object_[key];
  if (!v.is_boolean()) return Error(std::string("field '") + key + "' must be true or false, found " + TypeName(v));
  *out = v.get<bool>();
  return Status::Ok();
}

std::string JsonFields::fmt_missing(const char* key) { return std::string("missing required field '") + key + "'"; }

Result<nlohmann::json> ParseJson(const std::string& text, const std::string& where) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    static const std::regex kNonFinite(R"((^|[:,\[\s])-?(NaN|Infinity|inf|nan)\b)");
    if (std::regex_search(text, kNonFinite)) {
      return Status::InvalidArgument(where + ": NaN or infinite number (not valid JSON, not allowed)");
    }
    std::string what = e.what();
    auto pos = what.find("parse error");
    return Status::InvalidArgument(where + ": malformed JSON: " + (pos == std::string::npos ? what : what.substr(pos)));
  }
}

Result<nlohmann::json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open");
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // Map the byte offset to a line number so the error points at FILE:LINE.
    size_t offset = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    int64_t line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n');
    std::string what = e.what();
    auto pos = what.find("parse error");
    return Status::InvalidArgument(path + ":" + std::to_string(line) +
                                   ": malformed JSON: " + (pos == std::string::npos ? what : what.substr(pos)));
  }
}

}  // namespace simreplay
