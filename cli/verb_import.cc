// simreplay import kineto FILE... --out TRACE [--batch-size N]: torch.profiler Chrome traces to trace
// format v1 (docs/kineto-import.md).
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/verb_registry.h"
#include "replay/kineto_importer.h"

namespace simreplay::cli {
namespace {

int RunImport(int argc, char** argv) {
  CLI::App app{"Import traces from other tools into simreplay trace format v1", "simreplay import"};
  app.require_subcommand(1);
  replay::KinetoImportOptions options;
  std::string out_path;
  CLI::App* kineto = app.add_subcommand(
      "kineto", "torch.profiler (Kineto) Chrome traces (.json or .json.gz), one per rank -> one trace");
  kineto->add_option("files", options.input_paths, "Chrome trace files; rank = distributedInfo.rank, else position")
      ->required();
  kineto->add_option("--out,-o", out_path, "output trace (.jsonl or .jsonl.gz)")->required();
  kineto
      ->add_option("--batch-size", options.batch_size,
                   "samples per batch (default: derived from recorded input shapes)")
      ->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }

  auto imported = replay::KinetoImporter::Convert(options);
  if (!imported.ok()) {
    std::fprintf(stderr, "simreplay import: %s\n", imported.status().message().c_str());
    return kExitBadInput;
  }
  for (const std::string& warning : imported->warnings) {
    std::fprintf(stderr, "simreplay import: warning: %s\n", warning.c_str());
  }
  Status written = replay::KinetoImporter::Write(*imported, out_path);
  if (!written.ok()) {
    std::fprintf(stderr, "simreplay import: %s\n", written.message().c_str());
    return kExitFailure;
  }
  std::printf("imported %zu rank(s), batch size %lld (%s) -> %s\n", imported->ranks.size(),
              static_cast<long long>(imported->batch_size), imported->batch_size_source.c_str(), out_path.c_str());
  for (const replay::KinetoRankSummary& r : imported->ranks) {
    auto mean_ms = [](int64_t total_ns, int64_t n) { return n > 0 ? total_ns / 1e6 / static_cast<double>(n) : 0.0; };
    std::printf(
        "  rank %lld: %lld steps, mean step %.3f ms, mean wait %.3f ms, H2D %lld bytes, NCCL %.3f ms "
        "(exposed %.3f ms)\n",
        static_cast<long long>(r.rank), static_cast<long long>(r.steps), mean_ms(r.step_ns_total, r.steps),
        mean_ms(r.wait_ns_total, r.batches), static_cast<long long>(r.h2d_bytes_total), r.nccl_ns / 1e6,
        r.comm_ns_total / 1e6);
  }
  return kExitOk;
}

}  // namespace

SIMREPLAY_REGISTER_VERB("import", "convert torch.profiler (Kineto) traces to a simreplay trace", RunImport);

}  // namespace simreplay::cli
