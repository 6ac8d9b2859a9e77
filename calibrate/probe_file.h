// Reading a storage probe document (docs/probe-format.md, "simreplay.probe/1") back for calibration:
// which fit to use and its values, validated. Written by `simreplay probe storage`, but read as a file
// a person may have edited, so every field is checked for type and range.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace simreplay::calibrate {

// What the calibrator takes from a probe. A field the document lacks (or that is null) stays unset.
struct ProbeFileFit {
  // "random" when the document has a fit.random object (a shuffled map-style loader reads at random),
  // else "sequential" when it has fit.sequential; empty when it has neither (no usable fit).
  std::string pattern;
  nlohmann::json fit = nlohmann::json::object();  // fit.<pattern>, verbatim (for the quality report)
  std::optional<double> latency_s;                // >= 0
  std::optional<double> bandwidth_bytes_per_s;    // > 0 (a non-positive value is ignored, as unusable)
  std::optional<int> max_useful_concurrency;      // in [1, 64], the probe's concurrency range
  std::optional<double> page_cache_bytes_per_s;   // fit.page_cache.bandwidth_bytes_per_s, > 0
  std::string cache_drop;                         // how the page cache was dropped ("" when absent)
};

// Loads `path`. InvalidArgument "PATH:LINE: ..." for malformed JSON or a document that is not
// simreplay.probe/1; "PATH: fit.random.latency_s: ..." for a field of the wrong type or range.
Result<ProbeFileFit> LoadProbeFile(const std::string& path);
// The same for an already parsed document; `path` names it in errors.
Result<ProbeFileFit> ParseProbeDocument(const nlohmann::json& document, const std::string& path);

}  // namespace simreplay::calibrate
