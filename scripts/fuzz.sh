#!/usr/bin/env bash
# Runs every libFuzzer target of build-sanitize/fuzz (scripts/build_sanitize.sh) from its seed corpus
# (fuzz/corpus/<target>) with its dictionary (fuzz/dict/<target>.dict). Fails when any target reports
# a crash, a leak, a sanitizer error, a timeout or running out of memory; the reproducer is kept in
# the artifacts directory and its path printed (then: add a regression test named after the bug).
#
#   scripts/fuzz.sh [--seconds 60] [--runs N] [--jobs J] [--build DIR] [--out DIR] [TARGET...]
#
# --seconds S  wall time per target (default 60); --runs N: stop each target after N executions instead
#              (both given: whichever comes first).
# --jobs J     targets fuzzed at once (default: the number of CPUs).
# --out DIR    where each target's working corpus, log and crash artifacts go (default build-sanitize/fuzz-runs).
# TARGETs default to every *_fuzzer in the build. Exit: 0 all clean, 1 a target failed, 2 bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
seconds_given=0
runs=""
jobs="$(nproc)"
build="build-sanitize"
out=""
targets=()
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; seconds_given=1; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
out="${out:-$build/fuzz-runs}"
if ((${#targets[@]} == 0)); then
  for f in "$build"/fuzz/*_fuzzer; do [ -x "$f" ] && targets+=("$(basename "$f" _fuzzer)"); done
fi
if ((${#targets[@]} == 0)); then
  echo "fuzz.sh: no fuzz targets in $build/fuzz: run scripts/build_sanitize.sh first" >&2
  exit 2
fi

# Leaks count as failures (detect_leaks=1); stack-use-after-return detection stays off as in the test
# preset (docs/reliability.md). The limits make a slow or huge input a reported failure, not a hang.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=0:strict_string_checks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# Readable stack traces: Debian installs the symbolizer outside PATH (package llvm-14).
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && [ -x /usr/lib/llvm-14/bin/llvm-symbolizer ]; then
  export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-14/bin/llvm-symbolizer
fi
limit=(-timeout=25 -rss_limit_mb=2048 -max_len=65536)
[ -n "$runs" ] && limit+=(-runs="$runs")
if [ -z "$runs" ] || ((seconds_given)); then limit+=(-max_total_time="$seconds"); fi

run_one() {
  local t="$1" dir="$out/$1"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  local started=$SECONDS
  # -dict: the format's keys; seeds are read from fuzz/corpus, new inputs written to $dir/corpus only.
  if "$build/fuzz/${t}_fuzzer" "${limit[@]}" -print_final_stats=1 -dict="fuzz/dict/$t.dict" \
      -artifact_prefix="$dir/artifacts/" "$dir/corpus" "fuzz/corpus/$t" >"$dir/log" 2>&1; then
    local execs
    execs="$(grep -oP 'stat::number_of_executed_units:\s*\K[0-9]+' "$dir/log" || echo '?')"
    echo "fuzz: $t clean: $execs executions in $((SECONDS - started)) s"
  else
    echo "fuzz: $t FAILED (log $dir/log):"
    grep -E 'ERROR|SUMMARY|Test unit written|fuzz property' "$dir/log" | head -8 | sed 's/^/  /'
    return 1
  fi
}

pids=()
names=()
failed=0
for t in "${targets[@]}"; do
  if [ ! -f "fuzz/dict/$t.dict" ]; then echo "fuzz.sh: no dictionary fuzz/dict/$t.dict for target $t" >&2; exit 2; fi
  run_one "$t" &
  pids+=("$!")
  names+=("$t")
  # At most $jobs at once: wait for the oldest running one.
  if ((${#pids[@]} >= jobs)); then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done
if ((failed)); then
  echo "fuzz: at least one target failed: reproduce with $build/fuzz/<target>_fuzzer <artifact>"
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets clean"
