// Renders the results of a what-if sweep: results.csv (one row per point: axis values, then metrics),
// results.json (schema simreplay.sweep/1), a text table for the terminal and report.html with SVG
// charts. Pure functions of the results, with fixed number formatting, so outputs are byte-stable.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "models/scaling_knee.h"
#include "scenarios/scenario.h"

namespace simreplay::scenarios {

inline constexpr const char* kSweepSchema = "simreplay.sweep/1";

struct SweepResult {
  std::vector<std::pair<std::string, nlohmann::json>> axes;
  nlohmann::json result;  // result.json of the point
};

// The metric columns of results.csv, in order (dotted paths into "metrics").
const std::vector<std::string>& CsvMetricColumns();

std::string SweepCsv(const std::vector<SweepResult>& points);

// The scaling curve of a sweep over cluster.nodes (models/scaling_knee.h: the knee definition plan
// shares) for the points whose other axes equal the first point's. `knee` is the index of the knee at
// kScalingKneeFraction, -1 when none. Empty when cluster.nodes is not swept.
inline constexpr double kScalingKneeFraction = models::kDefaultKneeFraction;
using ScalingPoint = models::ScalingPoint;
std::vector<ScalingPoint> ScalingCurve(const std::vector<SweepResult>& points, int* knee);
// An SVG chart of the curve with the knee marked ("" without a cluster.nodes axis).
std::string ScalingChart(const std::vector<SweepResult>& points);
nlohmann::json SweepJson(const std::string& scenario_path, const std::vector<SweepResult>& points);
std::string SweepTable(const std::vector<SweepResult>& points);
// The best point by predicted end-to-end throughput, its interval and its margin over the next best
// (a margin under models::kMinActionableGain is said to be no difference to act on); "" for fewer
// than two points. SweepTable and SweepHtml show it.
std::string BestPointLine(const std::vector<SweepResult>& points);
std::string SweepHtml(const std::string& scenario_path, const std::vector<SweepResult>& points);
// "loader.num_workers=3" (the point's axes, as the table shows them).
std::string PointLabel(const SweepResult& p);
// The points' warnings, one line per kind (the same text but for its numbers) in first-seen order,
// each with the points it concerns: "extrapolating: num_workers = 0 outside ... (loader.num_workers=0;
// likewise, with its own figures, at 1, 3, 4, 6)". The report and the terminal show these.
std::vector<std::string> GroupedWarnings(const std::vector<SweepResult>& points);

// Writes DIR/results.csv, DIR/results.json and DIR/report.html, each atomically. `what-if` and `merge`
// both write through here, so a merged sweep is byte-identical to one simulated in a single process.
Status WriteSweepFiles(const std::string& dir, const std::string& scenario_path,
                       const std::vector<SweepResult>& points);

}  // namespace simreplay::scenarios
