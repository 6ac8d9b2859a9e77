// Reads a whole trace through TraceReader and checks what every caller relies on (fuzz targets only).
#pragma once

#include <string>

namespace simreplay::fuzz {

// Opens `path`, reads every record, and aborts when a property fails: an error message must start with
// `path`; each typed record must serialise (ToJson) to a line that ParseRecordLine accepts again.
void ReadWholeTrace(const std::string& path);

}  // namespace simreplay::fuzz
