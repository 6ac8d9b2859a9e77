#include "common/json_locator.h"

#include <cctype>
#include <cstring>
#include <vector>

namespace simreplay {

namespace {

// RFC 6901 escaping of one reference token.
std::string Escape(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

class Scanner {
 public:
  Scanner(const std::string& text, std::map<std::string, int>* lines) : text_(text), lines_(lines) {}

  void Value(const std::string& pointer) {
    Skip();
    if (pos_ >= text_.size()) return;
    (*lines_)[pointer] = line_;
    char c = text_[pos_];
    if (c == '{') {
      ++pos_;
      Skip();
      if (Peek() == '}') {
        ++pos_;
        return;
      }
      while (pos_ < text_.size()) {
        Skip();
        std::string key = String();
        Skip();
        if (Peek() == ':') ++pos_;
        Value(pointer + "/" + Escape(key));
        Skip();
        if (Peek() == ',') {
          ++pos_;
          continue;
        }
        if (Peek() == '}') ++pos_;
        return;
      }
    } else if (c == '[') {
      ++pos_;
      Skip();
      if (Peek() == ']') {
        ++pos_;
        return;
      }
      for (int i = 0; pos_ < text_.size(); ++i) {
        Value(pointer + "/" + std::to_string(i));
        Skip();
        if (Peek() == ',') {
          ++pos_;
          continue;
        }
        if (Peek() == ']') ++pos_;
        return;
      }
    } else if (c == '"') {
      String();
    } else {
      while (pos_ < text_.size() && !std::strchr(",}] \t\r\n", text_[pos_])) ++pos_;
    }
  }

 private:
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void Skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) {
      if (text_[pos_] == '\n') ++line_;
      ++pos_;
    }
  }
  // A string token; returns its raw content (escapes other than \" and \\ are kept as written, which
  // is enough for keys of a spec).
  std::string String() {
    std::string out;
    if (Peek() != '"') return out;
    ++pos_;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) {
        ++pos_;
        if (text_[pos_] != '"' && text_[pos_] != '\\') out += '\\';
      }
      if (text_[pos_] == '\n') ++line_;
      out += text_[pos_++];
    }
    ++pos_;
    return out;
  }

  const std::string& text_;
  std::map<std::string, int>* lines_;
  size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

JsonLocator::JsonLocator(const std::string& text) { Scanner(text, &lines_).Value(""); }

int JsonLocator::Line(const std::string& pointer) const {
  std::string p = pointer;
  while (true) {
    auto it = lines_.find(p);
    if (it != lines_.end()) return it->second;
    auto slash = p.rfind('/');
    if (slash == std::string::npos || p.empty()) return 1;
    p = p.substr(0, slash);
  }
}

}  // namespace simreplay
