#include "common/error_line.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace simreplay {

namespace {

Status SameKind(const Status& status, std::string message) {
  switch (status.code()) {
    case Status::Code::kInvalidArgument:
      return Status::InvalidArgument(std::move(message));
    case Status::Code::kNotFound:
      return Status::NotFound(std::move(message));
    case Status::Code::kCorruption:
      return Status::Corruption(std::move(message));
    case Status::Code::kIoError:
      return Status::IoError(std::move(message));
    default:
      return Status::Internal(std::move(message));
  }
}

}  // namespace

int LineOfKey(const std::string& text, const std::string& section, const std::string& key) {
  size_t from = 0;
  if (!section.empty()) {
    const size_t s = text.find("\"" + section + "\"");
    if (s != std::string::npos) from = s;
  }
  const size_t at = text.find("\"" + key + "\"", from);
  if (at == std::string::npos) return 0;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

Status WithLineFromFile(const Status& status, const std::string& path) {
  const std::string prefix = path + ": ";
  if (status.ok() || path.empty() || status.message().rfind(prefix, 0) != 0) return status;
  std::ifstream in(path, std::ios::binary);
  if (!in) return status;
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string rest = status.message().substr(prefix.size());
  // "section: 'key' ..." or "'key' ...": the section is the word before the first ": ".
  std::string section, key;
  const size_t q1 = rest.find('\'');
  const size_t q2 = q1 == std::string::npos ? q1 : rest.find('\'', q1 + 1);
  if (q2 != std::string::npos) key = rest.substr(q1 + 1, q2 - q1 - 1);
  const size_t colon = rest.find(": ");
  if (colon != std::string::npos && colon < q1) {
    section = rest.substr(0, colon);
    const size_t space = section.find_last_of(" .");
    if (space != std::string::npos) section = section.substr(space + 1);
  }
  int line = key.empty() ? 0 : LineOfKey(buffer.str(), section, key);
  if (line == 0 && !section.empty()) line = LineOfKey(buffer.str(), "", section);
  if (line == 0) line = 1;
  return SameKind(status, path + ":" + std::to_string(line) + ": " + rest);
}

}  // namespace simreplay
