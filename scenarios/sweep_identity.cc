#include "scenarios/sweep_identity.h"

#include <algorithm>
#include <map>

#include "common/sha256.h"
#include "models/model_params.h"

#ifndef SIMREPLAY_VERSION
#error "SIMREPLAY_VERSION must be defined by the build (CMakeLists.txt)"
#endif

namespace simreplay::scenarios {

const char* SimreplayVersion() { return SIMREPLAY_VERSION; }

Result<std::vector<std::string>> SweepInputFiles(const std::vector<SweepPoint>& points) {
  std::vector<std::string> files;
  auto add = [&files](const std::string& path) {
    if (!path.empty() && std::find(files.begin(), files.end(), path) == files.end()) files.push_back(path);
  };
  std::map<std::string, std::string> model_trace;  // model path -> the trace it names, resolved
  for (const auto& point : points) {
    const Scenario& s = point.scenario;
    add(s.model_path);
    if (!s.trace_path.empty()) {
      add(s.trace_path);
      continue;
    }
    if (s.model_path.empty()) continue;
    auto known = model_trace.find(s.model_path);
    if (known == model_trace.end()) {
      auto model = models::LoadModelFile(s.model_path);
      if (!model.ok()) return model.status();
      // Same rule as the simulation's (sim/point_runner.cc): relative to the model file's directory.
      const std::string& t = model->trace_path;
      known =
          model_trace.emplace(s.model_path, (t.empty() || t[0] == '/') ? t : DirectoryOf(s.model_path) + "/" + t).first;
    }
    add(known->second);
  }
  return files;
}

Result<SweepIdentity> IdentifySweep(const nlohmann::json& definition, const std::string& scenario_file,
                                    const std::vector<SweepPoint>& points) {
  auto files = SweepInputFiles(points);
  if (!files.ok()) return files.status();
  Sha256 hash;
  hash.Update("simreplay.sweep-identity/1\n");
  hash.Update(std::string("simreplay ") + SimreplayVersion() + "\n");
  hash.Update(definition.dump() + "\n");
  for (const auto& file : *files) {
    auto digest = Sha256OfFile(file);
    if (!digest.ok()) return digest.status();
    hash.Update("input " + *digest + "\n");
  }
  return SweepIdentity{hash.HexDigest(), points.size(), scenario_file};
}

}  // namespace simreplay::scenarios
