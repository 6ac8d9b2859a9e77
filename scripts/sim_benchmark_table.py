#!/usr/bin/env python3
"""Renders simulation_benchmark results (Google Benchmark JSON, --benchmark_out) as the markdown table of
docs/performance.md: per file (LABEL=FILE) and benchmark, the median over the repetitions of simulated
samples and sample-events per wall second, and their ratio to the first file's.

Usage: scripts/sim_benchmark_table.py before=old.json after=new.json
Exit 2 with one line on a missing, malformed or empty file.
"""
import json
import re
import statistics
import sys

NAME = re.compile(r"BM_EightGpuNode/workers:(\d+)/steps:(\d+)/batch_fidelity:(\d)/real_time$")


def fail(message):
    print(f"sim_benchmark_table.py: {message}", file=sys.stderr)
    sys.exit(2)


def load(label, path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        fail(f"{path}: {e}")
    runs = {}
    for b in doc.get("benchmarks", []):
        m = NAME.match(b.get("name", ""))
        if not m or b.get("run_type") != "iteration" or "error_occurred" in b:
            continue
        key = (int(m.group(1)), "batch" if m.group(3) == "1" else "sample")
        runs.setdefault(key, []).append((b["samples_per_s"], b["sample_events_per_s"]))
    if not runs:
        fail(f"{path}: no BM_EightGpuNode iterations (was it written with --benchmark_out?)")
    date = doc.get("context", {}).get("date", "?")
    return label, date, {k: (statistics.median(s for s, _ in v), statistics.median(e for _, e in v), len(v))
                         for k, v in runs.items()}


def main(argv):
    if not argv or any("=" not in a for a in argv):
        fail("usage: sim_benchmark_table.py LABEL=FILE [LABEL=FILE ...]")
    tables = [load(*a.split("=", 1)) for a in argv]
    base = tables[0][2]
    print("| binary | started | workers/rank | fidelity | runs | simulated samples / wall s | "
          "sample-events / wall s | vs " + tables[0][0] + " |")
    print("|---|---|---|---|---|---|---|---|")
    for label, date, runs in tables:
        for key in sorted(runs, key=lambda k: (k[1] != "sample", k[0])):
            samples, events, n = runs[key]
            ratio = f"{events / base[key][1]:.2f}x" if key in base else "-"
            print(f"| {label} | {date} | {key[0]} | {key[1]} | {n} | {samples / 1e3:.0f}k | "
                  f"{events / 1e6:.2f}M | {ratio} |")


if __name__ == "__main__":
    main(sys.argv[1:])
