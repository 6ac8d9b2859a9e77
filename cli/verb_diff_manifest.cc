// simreplay diff-manifest A B [--json OUT]: what differs between two runs' manifests (docs/manifest.md).
// A and B are traces (the header's manifest), preflight outputs (preflight.json or its directory) or
// bare manifest JSON files. Prints one line per difference, marked MATTERS or info, then a verdict.
// Exit 0 when nothing that matters differs, 1 when something does, 2 bad command line, 3 an input
// cannot be read. The same rule as `python3 -m simreplay_capture.diff_manifest`.
#include <cstdio>

#include <CLI/CLI.hpp>

#include "cli/cli_util.h"
#include "cli/verb_registry.h"
#include "common/atomic_file.h"
#include "replay/manifest.h"

namespace simreplay::cli {
namespace {

constexpr const char* kDiffManifestVerb = "simreplay diff-manifest";

int RunDiffManifestVerb(int argc, char** argv) {
  CLI::App app{
      "Compare two runs' manifests (traces, preflight outputs or manifest files): each difference is marked\n"
      "MATTERS (software stack, image, revisions, hardware: the runs' figures are not comparable) or info\n"
      "(docs/manifest.md). Exit 0: comparable; 1: something that matters differs; 3: an input cannot be read."};
  app.name(argv[0]);
  std::string a, b, json_out;
  std::string scope = "runs";
  app.add_option("a", a, "trace (.jsonl/.jsonl.gz), preflight.json (or its directory), or manifest JSON")->required();
  app.add_option("b", b, "the other run")->required();
  app.add_option("--json", json_out, "also write the differences as JSON (schema simreplay.manifest-diff/1)");
  app.add_option("--scope", scope,
                 "what matters (docs/manifest.md): runs = software, model and data revisions, hardware (repetitions "
                 "of one configuration); cases = the same without the data revisions (cases of one experiment, as "
                 "validate compares them); software = software and model revision only (as plan --preflight "
                 "combines a preflight with a capture)")
      ->check(CLI::IsMember({"runs", "cases", "software"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  auto ma = replay::LoadRunManifest(a);
  if (!ma.ok()) return Fail(kDiffManifestVerb, ma.status());
  auto mb = replay::LoadRunManifest(b);
  if (!mb.ok()) return Fail(kDiffManifestVerb, mb.status());
  const replay::ManifestScope which = scope == "software" ? replay::ManifestScope::kSoftware
                                     : scope == "cases"    ? replay::ManifestScope::kAcrossCases
                                                           : replay::ManifestScope::kRuns;
  const replay::ManifestDiff diff = replay::DiffManifests(*ma, *mb, which);
  std::fputs(replay::ManifestDiffText(diff, a, b).c_str(), stdout);
  if (!json_out.empty()) {
    Status s = WriteFileAtomically(json_out, replay::ManifestDiffJson(diff, a, b).dump(1) + "\n");
    if (!s.ok()) return Fail(kDiffManifestVerb, s);
  }
  return diff.matters() ? kExitFailure : kExitOk;
}

}  // namespace

SIMREPLAY_REGISTER_VERB("diff-manifest", "what differs between two runs' manifests, and whether it matters",
                        RunDiffManifestVerb);

}  // namespace simreplay::cli
