#!/usr/bin/env bash
# The validation suite (docs/validation.md): builds the bench dataset from opencv-doc media (cached, and
# rebuilt when it was made with other parameters), runs `simreplay validate` on the development cases
# (validation/suite/suite.json) and exits with its code: 0 pass, 4 when a check fails (median or
# per-case error limits, the persistence baseline, correctness, or completeness: a failed run or a case
# without prediction or measurement), 1-3 on errors. Then it runs the held-out cases
# (validation/suite/heldout.json) into OUT/heldout for reporting only: their result never changes the
# exit code unless the held-out validation itself errs (exit 1-3).
#
# usage: validation/suite/run.sh [OUT_DIR]      (default build/validation-suite)
# env:   SIMREPLAY_BIN (build/simreplay), SIMREPLAY_VALIDATION_DATA (build/validation-data),
#        SIMREPLAY_VALIDATION_REPS (the spec's 6), SIMREPLAY_VALIDATION_HELDOUT=0 skips the held-out
#        cases, SIMREPLAY_VALIDATION_RECORD=1 appends the result to validation/suite/history.csv (the
#        trend in docs/validation.md).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=${SIMREPLAY_BIN:-$repo/build/simreplay}
data=${SIMREPLAY_VALIDATION_DATA:-$repo/build/validation-data}
out=${1:-$repo/build/validation-suite}
reps=${SIMREPLAY_VALIDATION_REPS:-}
start=$(date +%s)
# 320 real JPEGs + 8 clips of 8 frames cut from the real AVIs; deterministic for a seed. The parameters
# are stamped into the dataset: a cached dataset made with others is rebuilt, never silently reused.
dataset_args=(--images 320 --videos 8 --frames 8 --formats files,tar --seed 0)
stamp="make-dataset ${dataset_args[*]}"
if [ ! -f "$data/dataset.json" ] || [ "$(cat "$data/.simreplay-dataset-args" 2>/dev/null)" != "$stamp" ]; then
  [ -e "$data" ] && echo "validation suite: rebuilding $data (made with other parameters or incomplete)"
  rm -rf "$data"
  PYTHONPATH="$repo/capture" /usr/bin/python3 -m simreplay_capture.bench make-dataset --out "$data" "${dataset_args[@]}"
  echo "$stamp" > "$data/.simreplay-dataset-args"
fi
rm -rf "$out"
set +e
"$bin" validate "$repo/validation/suite/suite.json" --out "$out" --data "$data" ${reps:+--reps "$reps"}
rc=$?
set -e
dev_elapsed=$(( $(date +%s) - start ))
echo "validation suite (development cases): exit $rc in ${dev_elapsed}s; report $out/report.md"
if [ "${SIMREPLAY_VALIDATION_HELDOUT:-1}" = 1 ]; then
  set +e
  "$bin" validate "$repo/validation/suite/heldout.json" --out "$out/heldout" --data "$data"
  heldout_rc=$?
  set -e
  echo "validation suite (held-out cases, reported only): exit $heldout_rc; report $out/heldout/report.md"
  if [ "$heldout_rc" -ne 0 ] && [ "$heldout_rc" -ne 4 ]; then rc=$heldout_rc; fi
fi
elapsed=$(( $(date +%s) - start ))
echo "validation suite: exit $rc in ${elapsed}s (budget 900 s)"
if [ "${SIMREPLAY_VALIDATION_RECORD:-0}" = 1 ] && [ -f "$out/validation.json" ]; then
  /usr/bin/python3 - "$out/validation.json" "$repo/validation/suite/history.csv" "$elapsed" <<'PY'
import datetime, json, os, subprocess, sys
v = json.load(open(sys.argv[1]))
t = v["thresholds"]
commit = subprocess.run(["git", "-C", os.path.dirname(sys.argv[2]), "rev-parse", "--short", "HEAD"],
                        capture_output=True, text=True).stdout.strip() or "unknown"
row = [datetime.date.today().isoformat(), commit, str(v["method"]["repetitions"]),
       "%.1f" % (t["median_abs_train_throughput_error_pct"]["value"] or float("nan")),
       "%.1f" % (t["max_abs_gpu_idle_error_pp"]["value"] or float("nan")),
       "pass" if v["pass"] else "fail", sys.argv[3]]
new = not os.path.exists(sys.argv[2])
with open(sys.argv[2], "a") as f:
    if new:
        f.write("date,commit,reps,median_abs_train_error_pct,max_abs_gpu_idle_error_pp,result,suite_seconds\n")
    f.write(",".join(row) + "\n")
PY
fi
exit $rc
