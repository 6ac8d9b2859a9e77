// simreplay merge-traces TRACE... --out MERGED: joins the per-rank traces of a distributed run into one
// trace on one time base (replay/trace_merge.h, docs/distributed.md).
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/cli_util.h"
#include "cli/verb_registry.h"
#include "replay/trace_merge.h"

namespace simreplay::cli {
namespace {

int RunMergeTraces(int argc, char** argv) {
  CLI::App app{"Join the per-rank traces of one distributed run into one trace, clocks aligned to rank 0",
               "simreplay merge-traces"};
  std::vector<std::string> inputs;
  std::string out_path;
  bool no_align = false;
  app.add_option("traces", inputs, "one trace per rank (trace.rank<R>.jsonl.gz)")->required();
  app.add_option("--out,-o", out_path, "merged trace (.jsonl or .jsonl.gz), written atomically")->required();
  app.add_flag("--no-align", no_align, "keep every rank's own time base (no clock shift)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  replay::MergeOptions options;
  options.align_clocks = !no_align;
  auto merged = replay::MergeTraces(inputs, out_path, options);
  if (!merged.ok()) return Fail("simreplay merge-traces", merged.status());
  for (const std::string& w : merged->warnings)
    std::fprintf(stderr, "simreplay merge-traces: warning: %s\n", w.c_str());
  std::printf("merged %zu rank(s) of world size %lld -> %s\n", merged->inputs.size(),
              static_cast<long long>(merged->world_size), out_path.c_str());
  for (const replay::MergedInput& in : merged->inputs) {
    std::printf("  rank %lld: %lld records, shift %+.6f ms (+/- %.6f ms, %s)%s\n", static_cast<long long>(in.rank),
                static_cast<long long>(in.records), in.shift_ns / 1e6, in.uncertainty_ns / 1e6, in.method.c_str(),
                in.host_records_dropped > 0 ? ", host records of a shared node dropped" : "");
  }
  return kExitOk;
}

}  // namespace

SIMREPLAY_REGISTER_VERB("merge-traces", "join per-rank traces of a distributed run (clocks aligned)", RunMergeTraces);

}  // namespace simreplay::cli
