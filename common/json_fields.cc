#include "common/json_fields.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>
#include <string_view>

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

namespace {

// 1-based line of byte `offset` of `text`.
int64_t LineAt(const std::string& text, size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n');
}

// What went wrong, for any exception nlohmann's parser throws. Besides parse_error it throws
// out_of_range 406 for a number no double holds ("1e400"): that one carries no offset, so the number's
// first occurrence in the text gives the line. *offset is the byte where the problem is.
std::string DescribeParseFailure(const nlohmann::json::exception& e, const std::string& text, size_t* offset) {
  std::string what = e.what();
  *offset = 0;
  if (const auto* parse = dynamic_cast<const nlohmann::json::parse_error*>(&e)) {
    *offset = parse->byte == 0 ? 0 : parse->byte - 1;
    // Some writers emit NaN and Infinity: say so rather than "invalid literal" (the parser stops inside
    // the word, so look a few bytes around the offset).
    static const std::regex kNonFiniteWord(R"((NaN|Infinity|inf|nan)\b)");
    const size_t from = *offset >= 3 ? *offset - 3 : 0;
    if (std::regex_search(text.substr(std::min(from, text.size()), 12), kNonFiniteWord)) {
      return "NaN or infinite number (not valid JSON, not allowed)";
    }
    auto pos = what.find("parse error");
    return "malformed JSON: " + (pos == std::string::npos ? what : what.substr(pos));
  }
  static constexpr std::string_view kOverflow = "number overflow parsing '";
  if (auto pos = what.find(kOverflow); pos != std::string::npos) {
    std::string number = what.substr(pos + kOverflow.size());
    number = number.substr(0, number.find('\''));
    if (auto at = text.find(number); at != std::string::npos) *offset = at;
    return "a number out of range: " + number + " does not fit a 64-bit float";
  }
  return "malformed JSON: " + what;
}

}  // namespace

Result<nlohmann::json> ParseJson(const std::string& text, const std::string& where) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    size_t offset = 0;
    return Status::InvalidArgument(where + ": " + DescribeParseFailure(e, text, &offset));
  }
}

Result<nlohmann::json> ParseJsonText(const std::string& text, const std::string& path) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    size_t offset = 0;
    std::string what = DescribeParseFailure(e, text, &offset);
    return Status::InvalidArgument(path + ":" + std::to_string(LineAt(text, offset)) + ": " + what);
  }
}

Result<nlohmann::json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParseJsonText(buffer.str(), path);
}

}  // namespace simreplay
