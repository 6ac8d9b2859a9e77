// The human report of a validation (report.md) and the suite's one-table summary, both rendered from
// validation.json alone with fixed number formatting, so the same document gives the same bytes.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace simreplay::validation {

// Markdown: experiment matrix, manifest, method (warm-up, page cache, noise), results with intervals,
// predicted vs measured with errors, rankings, correctness, observed bottlenecks and hypotheses (apart),
// A/B decisions with deployment and rollback checks, thresholds.
std::string RenderMarkdownReport(const nlohmann::json& validation);

// The per-case table of predicted vs measured throughput and GPU idle with errors (for docs/validation.md
// and the terminal).
std::string RenderSuiteTable(const nlohmann::json& validation);

}  // namespace simreplay::validation
