#!/usr/bin/env bash
# Kills what-if sweeps with SIGKILL at random moments and resumes them until they finish, then checks
# that every finished sweep is byte-identical to an uninterrupted run, that no point file was rewritten
# after a kill (same inode) and that no temporary is left. The figures in docs/reliability-sweeps.md
# come from this script.
#
# Usage: scripts/sweep_kill_campaign.sh [BINARY] [CAMPAIGNS]     (defaults: build/simreplay, 30)
set -euo pipefail
BIN=$(readlink -f "${1:-build/simreplay}")
CAMPAIGNS=${2:-30}
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/simreplay-kill-campaign.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
cp "$SRC/examples/quickstart/model.json" "$SRC/examples/quickstart/trace.jsonl.gz" .
# The quickstart with 12 points (6 worker counts x 2 prefetch factors) of 12 steps each.
python3 - "$SRC/examples/quickstart/scenario.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["train"]["steps"] = 12
s["sweep"] = {"loader.num_workers": [1, 2, 3, 4, 5, 6], "loader.prefetch_factor": [2, 4]}
json.dump(s, open("scenario.json", "w"), indent=2)
PY
"$BIN" what-if scenario.json --out ref --jobs 2 >/dev/null
kills=0 identical=0 rewritten=0 temporaries=0 start=$(date +%s)
for _ in $(seq "$CAMPAIGNS"); do
  rm -rf out
  : >seen.txt
  while true; do
    setsid "$BIN" what-if scenario.json --out out --jobs 2 --resume >/dev/null 2>&1 &
    pid=$!
    sleep "0.$(printf %02d $((RANDOM % 55 + 5)))"  # 0.05 to 0.59 s
    if kill -0 "$pid" 2>/dev/null; then
      kill -9 -- "-$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      kills=$((kills + 1))
      ls -i out/points 2>/dev/null | grep '\.json$' >>seen.txt || true
    else
      wait "$pid"
      break
    fi
  done
  ls -i out/points | grep '\.json$' >final.txt
  rewritten=$((rewritten + $(sort -u seen.txt | grep -cvxFf final.txt || true)))
  temporaries=$((temporaries + $(ls out/points out/failed | grep -c '\.tmp\.' || true)))
  same=1
  for f in results.csv results.json report.html; do cmp -s "ref/$f" "out/$f" || same=0; done
  [ "$(ls out/points | grep -c '\.json$')" -eq 12 ] || same=0
  identical=$((identical + same))
done
echo "$CAMPAIGNS campaigns, $kills SIGKILLs, $identical byte-identical to the uninterrupted run," \
  "$rewritten point files rewritten after a kill, $temporaries temporaries left;" \
  "$(($(date +%s) - start)) s, load average $(cut -d' ' -f1 /proc/loadavg)"
[ "$identical" -eq "$CAMPAIGNS" ] && [ "$rewritten" -eq 0 ] && [ "$temporaries" -eq 0 ]
