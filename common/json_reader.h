// Typed, range-checked reading of a whole hand-written JSON document (an experiment spec, a plan):
// every error names FILE:LINE of the offending value (JsonLocator) and its dotted key. The one home
// of these checks for documents; one-object-per-line records (traces) use JsonFields, which names
// the record's line.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "common/json_locator.h"
#include "common/status.h"

namespace simreplay {

class JsonReader {
 public:
  JsonReader(std::string path, const std::string& text) : path_(std::move(path)), locator_(text) {}

  // "PATH:LINE: message", LINE being where the value at `pointer` ("/job/checkpoint") starts.
  Status Error(const std::string& pointer, const std::string& message) const;

  // `object` (at `pointer`) must be an object whose every key is in `known`.
  Status Keys(const nlohmann::json& object, const std::string& pointer, const std::set<std::string>& known) const;

  // A finite number in [lo, hi] at object[key]; absent (or null) keeps *out unless required.
  // `given` (optional) is set when the key was present.
  Status Number(const nlohmann::json& object, const std::string& pointer, const char* key, double* out, bool required,
                double lo, double hi, bool* given = nullptr) const;

  // A whole number in [lo, hi]; absent (or null) keeps *out unless required.
  Status Int(const nlohmann::json& object, const std::string& pointer, const char* key, int64_t* out, bool required,
             int64_t lo, int64_t hi) const;
  template <typename T>
  Status IntAs(const nlohmann::json& object, const std::string& pointer, const char* key, T* out, bool required,
               int64_t lo, int64_t hi) const {
    int64_t v = static_cast<int64_t>(*out);
    Status s = Int(object, pointer, key, &v, required, lo, hi);
    if (s.ok()) *out = static_cast<T>(v);
    return s;
  }

  Status Bool(const nlohmann::json& object, const std::string& pointer, const char* key, bool* out,
              bool required = false) const;

  // A string, one of `allowed` when that is not empty; a required string must not be empty.
  Status String(const nlohmann::json& object, const std::string& pointer, const char* key, std::string* out,
                bool required, const std::set<std::string>& allowed = {}) const;

  // "/job/checkpoint" -> "job.checkpoint".
  static std::string Dotted(const std::string& pointer);

 private:
  Status RangeError(const std::string& p, int64_t lo, int64_t hi, const nlohmann::json& v) const;
  std::string path_;
  JsonLocator locator_;
};

}  // namespace simreplay
