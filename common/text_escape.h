// Escaping for the text outputs every report writer shares: CSV fields (RFC 4180) and HTML text.
#pragma once

#include <string>

namespace simreplay {

// `s` as one CSV field: quoted (inner quotes doubled) when it holds a comma, a quote or a newline.
std::string CsvEscape(const std::string& s);

// `s` with <, >, & and " as HTML entities (safe in element text and quoted attributes).
std::string HtmlEscape(const std::string& s);

}  // namespace simreplay
