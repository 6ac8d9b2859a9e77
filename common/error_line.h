// Adds the line to an error about a JSON file: "FILE: section: 'key' must be ..." becomes
// "FILE:LINE: section: 'key' must be ...", LINE being where the offending key is written. Validators
// work on parsed JSON, which has no line numbers; the file's text has them, and is read only when an
// error is reported.
#pragma once

#include <string>

#include "common/status.h"

namespace simreplay {

// REQUIRES nothing of `status`: one already located ("FILE:N: ..."), one about another file, an OK
// status or an unreadable file come back unchanged. The key is the first 'quoted' name in the message,
// searched after the section named before it ("loader: 'num_workers' ..." looks for "num_workers"
// after "loader"); without a key found the error points at line 1 (the document as a whole).
Status WithLineFromFile(const Status& status, const std::string& path);

// The 1-based line of the first `"key"` in `text` at or after the first `"section"` (section may be
// empty); 0 when the key is not there.
int LineOfKey(const std::string& text, const std::string& section, const std::string& key);

}  // namespace simreplay
