#include "common/json_reader.h"

#include <cmath>

#include <fmt/format.h>

namespace simreplay {

namespace {

std::string List(const std::set<std::string>& names) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return list;
}

}  // namespace

Status JsonReader::Error(const std::string& pointer, const std::string& message) const {
  return Status::InvalidArgument(fmt::format("{}:{}: {}", path_, locator_.Line(pointer), message));
}

Status JsonReader::Keys(const nlohmann::json& object, const std::string& pointer,
                        const std::set<std::string>& known) const {
  if (!object.is_object())
    return Error(pointer, fmt::format("'{}' must be an object, found {}", Dotted(pointer), object.type_name()));
  for (const auto& [key, value] : object.items()) {
    if (!known.count(key)) {
      return Error(pointer + "/" + key,
                   fmt::format("unknown key '{}' in '{}' (expected one of: {})", key, Dotted(pointer), List(known)));
    }
  }
  return Status::Ok();
}

Status JsonReader::Number(const nlohmann::json& object, const std::string& pointer, const char* key, double* out,
                          bool required, double lo, double hi, bool* given) const {
  const std::string p = pointer + "/" + key;
  if (!object.contains(key) || object[key].is_null()) {
    if (required) return Error(pointer, fmt::format("missing required number '{}'", Dotted(p)));
    return Status::Ok();
  }
  const nlohmann::json& v = object[key];
  if (!v.is_number()) return Error(p, fmt::format("'{}' must be a number, found {}", Dotted(p), v.dump()));
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) {
    return Error(p, fmt::format("'{}' must be a number in [{:g}, {:g}], found {}", Dotted(p), lo, hi, v.dump()));
  }
  *out = d;
  if (given != nullptr) *given = true;
  return Status::Ok();
}

Status JsonReader::Int(const nlohmann::json& object, const std::string& pointer, const char* key, int64_t* out,
                       bool required, int64_t lo, int64_t hi) const {
  const std::string p = pointer + "/" + key;
  if (!object.contains(key) || object[key].is_null()) {
    if (required) return Error(pointer, fmt::format("missing required number '{}'", Dotted(p)));
    return Status::Ok();
  }
  const nlohmann::json& v = object[key];
  // Integers are compared as integers (a seed near INT64_MAX does not survive a double); a float
  // must be whole.
  int64_t x = 0;
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return RangeError(p, lo, hi, v);
    }
    x = v.get<int64_t>();
  } else if (v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() == std::floor(v.get<double>()) &&
             std::fabs(v.get<double>()) < 9.2e18) {
    x = static_cast<int64_t>(v.get<double>());
  } else if (v.is_number()) {
    return Error(p, fmt::format("'{}' must be a whole number, found {}", Dotted(p), v.dump()));
  } else {
    return Error(p, fmt::format("'{}' must be a number, found {}", Dotted(p), v.dump()));
  }
  if (x < lo || x > hi) return RangeError(p, lo, hi, v);
  *out = x;
  return Status::Ok();
}

Status JsonReader::RangeError(const std::string& p, int64_t lo, int64_t hi, const nlohmann::json& v) const {
  return Error(p, fmt::format("'{}' must be a number in [{:g}, {:g}], found {}", Dotted(p), static_cast<double>(lo),
                              static_cast<double>(hi), v.dump()));
}

Status JsonReader::Bool(const nlohmann::json& object, const std::string& pointer, const char* key, bool* out,
                        bool required) const {
  const std::string p = pointer + "/" + key;
  if (!object.contains(key) || object[key].is_null()) {
    if (required) return Error(pointer, fmt::format("missing required true/false '{}'", Dotted(p)));
    return Status::Ok();
  }
  if (!object[key].is_boolean())
    return Error(p, fmt::format("'{}' must be true or false, found {}", Dotted(p), object[key].dump()));
  *out = object[key].get<bool>();
  return Status::Ok();
}

Status JsonReader::String(const nlohmann::json& object, const std::string& pointer, const char* key, std::string* out,
                          bool required, const std::set<std::string>& allowed) const {
  const std::string p = pointer + "/" + key;
  if (!object.contains(key) || object[key].is_null()) {
    if (required) return Error(pointer, fmt::format("missing required string '{}'", Dotted(p)));
    return Status::Ok();
  }
  if (!object[key].is_string()) {
    return Error(p, fmt::format("'{}' must be a string, found {}", Dotted(p), object[key].dump()));
  }
  std::string s = object[key].get<std::string>();
  if (!allowed.empty() && !allowed.count(s)) {
    return Error(p, fmt::format("'{}' must be one of {}, found \"{}\"", Dotted(p), List(allowed), s));
  }
  if (required && s.empty()) return Error(p, fmt::format("'{}' must not be empty", Dotted(p)));
  *out = std::move(s);
  return Status::Ok();
}

std::string JsonReader::Dotted(const std::string& pointer) {
  std::string out = pointer.empty() ? "" : pointer.substr(1);
  for (char& c : out) {
    if (c == '/') c = '.';
  }
  return out;
}

}  // namespace simreplay
