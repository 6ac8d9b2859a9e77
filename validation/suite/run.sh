#!/usr/bin/env bash
# The validation suite (docs/validation.md): builds the bench datasets from opencv-doc media (cached, and
# rebuilt when made with other parameters), runs `simreplay validate` on the development cases
# (validation/suite/suite.json), then on the frozen held-out sets (validation/suite/heldout.json,
# heldout-video.json), each on a dataset of its own, and exits with the worst code: 0 pass, 4 when a
# check fails (median or per-case error limits, GPU idle, correctness, or completeness: a failed run or
# a case without prediction or measurement; on the development set also the persistence baseline),
# 1-3 on errors of any set. On the held-out sets the persistence comparison is reported, not gated
# (see below).
#
# usage: validation/suite/run.sh [OUT_DIR]      (default build/validation-suite)
# env:   SIMREPLAY_BIN (build/simreplay), SIMREPLAY_VALIDATION_DATA (build/validation-data; the held-out
#        datasets go beside it, DATA-heldout and DATA-heldout-video), SIMREPLAY_VALIDATION_REPS (each
#        spec's own), SIMREPLAY_VALIDATION_HELDOUT=0 skips the held-out sets, SIMREPLAY_VALIDATION_RECORD=1
#        appends each set's result to validation/suite/history.csv (the trend in docs/validation.md).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=${SIMREPLAY_BIN:-$repo/build/simreplay}
data=${SIMREPLAY_VALIDATION_DATA:-$repo/build/validation-data}
out=${1:-$repo/build/validation-suite}
reps=${SIMREPLAY_VALIDATION_REPS:-}
start=$(date +%s)

# A bench dataset in DIR made with ARGS (deterministic for a seed). The parameters are stamped into the
# dataset: a cached dataset made with others is rebuilt, never silently reused.
make_data() {
  local dir=$1; shift
  local stamp="make-dataset $*"
  if [ ! -f "$dir/dataset.json" ] || [ "$(cat "$dir/.simreplay-dataset-args" 2>/dev/null)" != "$stamp" ]; then
    [ -e "$dir" ] && echo "validation suite: rebuilding $dir (made with other parameters or incomplete)"
    rm -rf "$dir"
    PYTHONPATH="$repo/capture" /usr/bin/python3 -m simreplay_capture.bench make-dataset --out "$dir" "$@"
    echo "$stamp" > "$dir/.simreplay-dataset-args"
  fi
}

# Appends one set's result to history.csv (SIMREPLAY_VALIDATION_RECORD=1): the commit it ran on.
record() {
  [ "${SIMREPLAY_VALIDATION_RECORD:-0}" = 1 ] && [ -f "$2/validation.json" ] || return 0
  /usr/bin/python3 - "$1" "$2/validation.json" "$repo/validation/suite/history.csv" "$3" <<'PY'
import datetime, json, os, subprocess, sys
name, path, history, seconds = sys.argv[1:]
v = json.load(open(path))
t = v["thresholds"]
commit = subprocess.run(["git", "-C", os.path.dirname(history), "rev-parse", "--short", "HEAD"],
                        capture_output=True, text=True).stdout.strip() or "unknown"
per_case = [abs(c["train_throughput_error_pct"]) for c in t.get("per_case", [])
            if c.get("train_throughput_error_pct") is not None]
row = [datetime.date.today().isoformat(), commit, name, str(v["method"]["repetitions"]),
       "%.1f" % (t["median_abs_train_throughput_error_pct"]["value"] or float("nan")),
       "%.1f" % (max(per_case) if per_case else float("nan")),
       "%.1f" % (t["max_abs_gpu_idle_error_pp"]["value"] or float("nan")),
       "pass" if v["pass"] else "fail", seconds]
new = not os.path.exists(history)
with open(history, "a") as f:
    if new:
        f.write("date,commit,set,reps,median_abs_train_error_pct,max_abs_train_error_pct,"
                "max_abs_gpu_idle_error_pp,result,seconds\n")
    f.write(",".join(row) + "\n")
PY
}

# Exit 0 when DIR's validation.json passes every check but the persistence comparison (the error
# limits, correctness and completeness), else 4; the held-out sets gate on this (docs/validation.md).
errors_only_verdict() {
  /usr/bin/python3 - "$1/validation.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
t = v["thresholds"]
ok = (not t["enabled"] or t["error_limits_pass"]) and v["correctness"]["pass"] and v["completeness"]["pass"]
p = t["beats_persistence"]
print("validation suite: persistence comparison (reported, not gated on held-out sets): model %s%% vs "
      "baseline %s%%, margin %s pp: %s" % (p["model_median_abs_error_pct"], p["baseline_median_abs_error_pct"],
                                          p["margin_pp"], "pass" if p["pass"] else "FAIL"))
sys.exit(0 if ok else 4)
PY
}

# Runs one spec on one dataset into OUT/NAME (the development set into OUT itself) and folds its
# exit code into rc: an error (1-3) wins over a failed check (4), which wins over a pass. A set run
# with GATE=errors gates on every check but the persistence comparison, which it reports.
rc=0
run_set() {
  local name=$1 spec=$2 dataset=$3 dir=$4 gate=${5:-all} t0
  t0=$(date +%s)
  rm -rf "$dir"
  set +e
  "$bin" validate "$spec" --out "$dir" --data "$dataset" ${reps:+--reps "$reps"}
  local set_rc=$?
  if [ "$gate" = errors ] && [ "$set_rc" -eq 4 ]; then
    errors_only_verdict "$dir"
    set_rc=$?
  fi
  set -e
  echo "validation suite ($name): exit $set_rc in $(( $(date +%s) - t0 ))s$([ "$gate" = all ] || echo ' (gated on error limits, correctness and completeness)'); report $dir/report.md"
  record "$name" "$dir" "$(( $(date +%s) - t0 ))"
  if [ "$set_rc" -ne 0 ] && { [ "$rc" -eq 0 ] || [ "$rc" -eq 4 ]; }; then rc=$set_rc; fi
}

make_data "$data" --images 320 --videos 8 --frames 8 --formats files,tar --seed 0
run_set development "$repo/validation/suite/suite.json" "$data" "$out"
if [ "${SIMREPLAY_VALIDATION_HELDOUT:-1}" = 1 ]; then
  make_data "$data-heldout" --images 200 --videos 36 --frames 6 --image-scale 1.25 --formats files --seed 3
  # Gated on the error limits, correctness and completeness (docs/validation.md, "Held-out cases");
  # the persistence comparison is reported: the first run of the other-media-mix set (2026-12-02,
  # commit 505e123) failed it (model 1.5% vs baseline 4.5%, a 5 pp margin required), which no model
  # can meet where the factor moves throughput by less than the margin, and it stays failing.
  run_set heldout "$repo/validation/suite/heldout.json" "$data-heldout" "$out/heldout" errors
  make_data "$data-heldout-video" --images 60 --videos 90 --frames 8 --formats files --seed 4
  run_set heldout-video "$repo/validation/suite/heldout-video.json" "$data-heldout-video" "$out/heldout-video" errors
fi
echo "validation suite: exit $rc in $(( $(date +%s) - start ))s"
exit $rc
