// simreplay stats REQUEST.json: the validation statistics for scripts — the seeded percentile
// bootstrap interval of a median (validation/statistics) and gates judged against their limits
// (validation/gate) — so that the multi-node suite (validation/suite/multinode.py) judges its
// results with the same code as `simreplay validate`. Request and answer: docs/validation-format.md,
// "simreplay stats".
#include <cmath>
#include <cstdio>
#include <iostream>
#include <iterator>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/cli_util.h"
#include "cli/verb_registry.h"
#include "common/json_fields.h"
#include "validation/gate.h"
#include "validation/statistics.h"

namespace simreplay::cli {
namespace {

constexpr const char* kStatsVerb = "simreplay stats";

// A JSON array of finite numbers at `where`.
Result<std::vector<double>> Numbers(const nlohmann::json& j, const std::string& where) {
  if (!j.is_array()) return Status::InvalidArgument(where + ": must be an array of numbers");
  std::vector<double> out;
  for (const auto& x : j) {
    if (!x.is_number() || !std::isfinite(x.get<double>()))
      return Status::InvalidArgument(fmt::format("{}: must be an array of finite numbers, found {}", where, x.dump()));
    out.push_back(x.get<double>());
  }
  return out;
}

Result<nlohmann::json> Answer(const nlohmann::json& request, const std::string& path) {
  if (!request.is_object() || request.value("schema", "") != "simreplay.stats-request/1")
    return Status::InvalidArgument(path + ": not a stats request (schema must be \"simreplay.stats-request/1\")");
  validation::BootstrapOptions bootstrap;
  if (request.contains("bootstrap")) {
    JsonFields f(request["bootstrap"], path + ": bootstrap");
    int64_t resamples = bootstrap.resamples, seed = static_cast<int64_t>(bootstrap.seed);
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("resamples", &resamples));
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("seed", &seed));
    SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalDouble("confidence", &bootstrap.confidence));
    if (resamples < 1 || resamples > 1000000 || !(bootstrap.confidence > 0 && bootstrap.confidence < 1))
      return f.Error("resamples must be in 1..1000000 and confidence in (0, 1)");
    bootstrap.resamples = static_cast<int>(resamples);
    bootstrap.seed = static_cast<uint64_t>(seed);
  }
  nlohmann::json answer = {{"schema", "simreplay.stats-answer/1"},
                           {"intervals", nlohmann::json::object()},
                           {"limits", nlohmann::json::array()}};
  const nlohmann::json intervals = request.value("intervals", nlohmann::json::object());
  for (const auto& [name, values] : intervals.items()) {
    auto v = Numbers(values, path + ": intervals." + name);
    if (!v.ok()) return v.status();
    if (v->empty()) return Status::InvalidArgument(path + ": intervals." + name + ": no values");
    const auto ci = validation::BootstrapInterval(*v, validation::Statistic::kMedian, bootstrap);
    answer["intervals"][name] = {{"median", validation::Median(*v)}, {"ci", {ci.low, ci.high}}, {"n", v->size()}};
  }
  bool pass = true;
  const nlohmann::json limits = request.value("limits", nlohmann::json::array());
  for (size_t i = 0; i < limits.size(); ++i) {
    const std::string where = fmt::format("{}: limits[{}]", path, i);
    JsonFields f(limits[i], where);
    std::string name, statistic;
    double limit = 0;
    SIMREPLAY_RETURN_IF_ERROR(f.GetString("name", &name));
    SIMREPLAY_RETURN_IF_ERROR(f.GetString("statistic", &statistic));
    SIMREPLAY_RETURN_IF_ERROR(f.GetDouble("limit", &limit));
    validation::GateStatistic s;
    if (!validation::ParseGateStatistic(statistic, &s)) return f.Error("statistic must be \"median\" or \"max\"");
    auto errors = Numbers(limits[i].value("errors", nlohmann::json::array()), where + ".errors");
    if (!errors.ok()) return errors.status();
    const validation::GateCheck check = validation::JudgeLimit(name, s, *errors, limit);
    pass = pass && check.pass;
    answer["limits"].push_back(check.ToJson());
  }
  answer["pass"] = pass;
  return answer;
}

int RunStats(int argc, char** argv) {
  CLI::App app{
      "Median bootstrap intervals and error gates for validation scripts, computed by the same code as\n"
      "`simreplay validate`. Reads a simreplay.stats-request/1 JSON (FILE or - for stdin), prints the\n"
      "answer as JSON on stdout (docs/validation-format.md)."};
  app.name(argv[0]);
  std::string path;
  app.add_option("request", path, "request file, or - for standard input")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  std::string stdin_text;
  if (path == "-") stdin_text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  const std::string where = path == "-" ? "<stdin>" : path;
  auto request = path == "-" ? ParseJsonText(stdin_text, where) : ReadJsonFile(path);
  if (!request.ok()) return Fail(kStatsVerb, request.status());
  auto answer = Answer(*request, where);
  if (!answer.ok()) return Fail(kStatsVerb, answer.status());
  std::printf("%s\n", answer->dump(1).c_str());
  return kExitOk;
}

}  // namespace

SIMREPLAY_REGISTER_VERB("stats", "median bootstrap intervals and error gates for validation scripts (JSON)",
                        RunStats);

}  // namespace simreplay::cli
