// Maps JSON pointers ("/cases/2/set/num_workers") of a JSON text to the line where that value starts,
// so that semantic errors in a hand-written spec can point at FILE:LINE like parse errors do.
// nlohmann::json keeps no positions, hence this small scanner. It assumes the text is valid JSON
// (parse it first); on invalid text it indexes what it can and never fails.
#pragma once

#include <map>
#include <string>

namespace simreplay {

class JsonLocator {
 public:
  explicit JsonLocator(const std::string& text);
  // Line (from 1) of the value at `pointer`; for a missing key, the nearest existing ancestor's line;
  // 1 for "" or when nothing matches.
  int Line(const std::string& pointer) const;

 private:
  std::map<std::string, int> lines_;
};

}  // namespace simreplay
