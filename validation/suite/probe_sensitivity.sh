#!/usr/bin/env bash
# How much the development suite's predictions move with the CPU probe's draw: re-analyses one recorded
# run of the suite (`validation/suite/run.sh OUT`, its OUT) with its own probe and with every other
# probe given (probe-cpu.json files of the same probe dataset and pipeline, e.g. the multi-node runs'
# in docs/measurements/multinode-*/; their points above the suite probe's max_workers are left out), by
# `simreplay validate --ingest`: the same real runs, another probe each time. Writes OUT_DIR/<probe>/
# (each re-analysis) and OUT_DIR/summary.csv (probe, median and per-case train-throughput errors, %),
# and prints the table. docs/probe-cpu.md, "Each point at the trace's page-fault level".
#
# usage: validation/suite/probe_sensitivity.sh RUN_DIR OUT_DIR PROBE.json...
# env:   SIMREPLAY_BIN (build/simreplay), SIMREPLAY_VALIDATION_DATA (build/validation-data)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=${SIMREPLAY_BIN:-$repo/build/simreplay}
data=${SIMREPLAY_VALIDATION_DATA:-$repo/build/validation-data}
[ $# -ge 2 ] || { echo "usage: $0 RUN_DIR OUT_DIR PROBE.json..." >&2; exit 2; }
run=$(cd "$1" && pwd); out=$2; shift 2
[ -f "$run/runs.json" ] && [ -f "$run/probe-cpu.json" ] || { echo "$run: no runs.json or probe-cpu.json (not a suite run)" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
analyse() {  # NAME PROBE_FILE
  local ing="$out/$1.ingest" dest="$out/$1"
  rm -rf "$ing" "$dest"
  mkdir -p "$ing"
  for f in "$run"/*; do [ "$(basename "$f")" = probe-cpu.json ] || ln -s "$f" "$ing/$(basename "$f")"; done
  /usr/bin/python3 - "$2" "$ing/probe-cpu.json" "$repo/validation/suite/suite.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
max_workers = json.load(open(sys.argv[3]))["calibration"]["cpu_probe"]["max_workers"]
d["points"] = [p for p in d["points"] if p["workers"] <= max_workers]
json.dump(d, open(sys.argv[2], "w"))
PY
  "$bin" validate "$repo/validation/suite/suite.json" --out "$dest" --ingest "$ing" --data "$data" > "$dest.log" 2>&1 || true
  [ -f "$dest/validation.json" ] || { echo "$1: the re-analysis failed; see $dest.log" >&2; exit 1; }
  rm -rf "$ing"
}
names=(own)
analyse own "$run/probe-cpu.json"
for p in "$@"; do
  # A probe-cpu.json is named by its directory (a suite or multi-node run's), any other file by itself.
  name=$(basename "$p" .json)
  [ "$name" != probe-cpu ] || name=$(basename "$(dirname "$p")")
  analyse "$name" "$p"
  names+=("$name")
done
/usr/bin/python3 - "$out" "${names[@]}" <<'PY'
import json, sys
out, names = sys.argv[1], sys.argv[2:]
rows = []
for n in names:
    t = json.load(open(f"{out}/{n}/validation.json"))["thresholds"]
    errs = {c["case"]: c.get("train_throughput_error_pct") for c in t["per_case"]}
    rows.append((n, t["median_abs_train_throughput_error_pct"]["value"], errs))
cases = list(rows[0][2])
with open(f"{out}/summary.csv", "w") as f:
    f.write("probe,median_abs_train_error_pct," + ",".join(f"{c}_train_error_pct" for c in cases) + "\n")
    for n, med, errs in rows:
        f.write(f"{n},{med:.2f}," + ",".join(f"{errs[c]:.2f}" for c in cases) + "\n")
print("| probe | median | " + " | ".join(cases) + " |")
print("|---" * (len(cases) + 2) + "|")
for n, med, errs in rows:
    print(f"| {n} | {med:.1f}% | " + " | ".join(f"{errs[c]:+.1f}%" for c in cases) + " |")
print("| range | | " + " | ".join(f"{min(r[2][c] for r in rows):+.1f} to {max(r[2][c] for r in rows):+.1f}" for c in cases) + " |")
PY
