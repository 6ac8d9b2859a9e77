#!/usr/bin/env bash
# Cost of simulating large clusters at the settings plans use (docs/performance.md, "Large clusters"):
# for each size, one `simreplay what-if` of a scenario with no sweep axes (one simulation in a child
# process), timed by /usr/bin/time -v: wall seconds, CPU seconds and peak resident set.
#
# Scenario (written to OUT/scenario-NODES.json): NODES x 8 GPUs, fat-tree (leaves of 8 nodes, no
# oversubscription), 8 NICs of 50 GB/s per node, hierarchical all-reduce of 400 MB per optimizer step
# in 16 buckets of 25 MB (16: the most the planner simulates, plan/candidate_sim.h) with 0.6 of the
# step overlapped, 8 DataLoader workers per rank, batch 8, 64 cores per node, 0.25 s GPU steps, batch
# fidelity (--fidelity), the quickstart's captured costs (examples/quickstart/model.json), 1000 steps.
#
# Usage: scripts/scale_benchmark.sh [--binary PATH] [--nodes "1 8 32 128 512"] [--steps N] [--workers N]
#                                   [--fidelity batch|sample] [--rank-folding auto|off] [--step-time S]
#                                   [--gradient-bytes B] [--out DIR]
# (--workers: DataLoader workers per rank, 8 by default; 0 with few steps times mostly the start-up.
#  --fidelity: replay.fidelity, batch by default as plans use; sample is the default of `simulate`.
#  --rank-folding: replay.rank_folding, auto by default; off simulates every node in full.
#  --step-time, --gradient-bytes: the GPU step (0.25 s) and the gradients per step (400e6 bytes).)
# Prints one line per size: gpus nodes wall_s cpu_s peak_rss_mb results_sha256 (the digest of
# results.json, to check that two binaries give identical outputs). The machine should be otherwise
# idle; on a shared one compare binaries within one run, as ratios.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
binary="$repo/build/simreplay"
nodes_list="1 8 32 128 512"
steps=1000
workers=8
fidelity=batch
folding=auto
step_time=0.25
gradient_bytes=400e6
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --binary) binary="$2"; shift 2 ;;
    --nodes) nodes_list="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    --fidelity) fidelity="$2"; shift 2 ;;
    --rank-folding) folding="$2"; shift 2 ;;
    --step-time) step_time="$2"; shift 2 ;;
    --gradient-bytes) gradient_bytes="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: $0 [--binary PATH] [--nodes \"1 8 32\"] [--steps N] [--workers N] [--fidelity batch|sample] [--rank-folding auto|off] [--step-time S] [--gradient-bytes B] [--out DIR]" >&2; exit 2 ;;
  esac
done
[[ -x "$binary" ]] || { echo "$0: no simreplay binary at $binary (build it, or pass --binary)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "$0: needs GNU time at /usr/bin/time (Debian package time)" >&2; exit 2; }
if [[ -z "$out" ]]; then out="$(mktemp -d)"; fi
persistent=true
if [[ "$workers" == 0 ]]; then persistent=false; fi  # PyTorch refuses persistent workers without workers
mkdir -p "$out"

printf "%-6s %-6s %-9s %-9s %-12s %s\n" gpus nodes wall_s cpu_s peak_rss_mb results_sha256
for nodes in $nodes_list; do
  scenario="$out/scenario-$nodes.json"
  cat > "$scenario" <<JSON
{
  "name": "scale benchmark: $nodes nodes x 8 GPUs, plan-like settings",
  "model": "$repo/examples/quickstart/model.json",
  "loader": {"num_workers": $workers, "batch_size": 8, "prefetch_factor": 2, "pin_memory": true,
             "persistent_workers": $persistent},
  "hardware": {"cpu_cores": 64, "gpus": 8},
  "train": {"steps": $steps, "step_time_s": $step_time, "dataset_samples": 1281167},
  "replay": {"fidelity": "$fidelity", "rank_folding": "$folding"},
  "cluster": {"nodes": $nodes, "topology": "fat-tree", "fat_tree": {"nodes_per_switch": 8, "oversubscription": 1},
              "network": {"nic_bytes_per_s": 50e9, "nic_latency_s": 5e-6, "nics_per_node": 8}},
  "collective": {"algorithm": "hierarchical", "gradient_bytes": $gradient_bytes, "bucket_bytes": 25e6, "overlap": 0.6},
  "seed": 0
}
JSON
  run="$out/run-$nodes"
  rm -rf "$run"
  if ! /usr/bin/time -v -o "$out/time-$nodes.txt" "$binary" what-if "$scenario" --out "$run" --jobs 1 \
      > "$out/stdout-$nodes.txt" 2> "$out/stderr-$nodes.txt"; then
    echo "$0: $nodes nodes failed (see $out/stderr-$nodes.txt)" >&2
    exit 1
  fi
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0; for (i = 1; i <= n; ++i) s = s * 60 + p[i]; print s}' "$out/time-$nodes.txt")
  cpu=$(awk -F': ' '/User time/ {u = $2} /System time/ {s = $2} END {printf "%.2f", u + s}' "$out/time-$nodes.txt")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$out/time-$nodes.txt")
  digest=$(grep -v "\"scenario_file\"" "$run/results.json" | sha256sum | cut -c1-16)
  printf "%-6s %-6s %-9s %-9s %-12s %s\n" $((nodes * 8)) "$nodes" "$wall" "$cpu" "$rss" "$digest"
done
