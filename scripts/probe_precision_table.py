#!/usr/bin/python3
"""Markdown tables of CPU probes' shared-core slowdown and its precision (docs/probe-cpu.md,
"Precision pairs"). Per probe file: the precision pairs run, the k = 1 windows, and on each curve the
slowdown s = exp(beta) - 1 of the linear fit with its standard error, from the rounds alone (the
points of rounds < method.rounds: what the probe gave before precision pairs existed) and from all
points. Then, per group and curve, the mean and the standard deviation of s over the probes.

usage: scripts/probe_precision_table.py GROUP=FILE[,FILE...] ...
"""
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "capture"))
from simreplay_capture.probe_cpu import slowdown_estimates  # noqa: E402

CURVES = ("throughput", "thread_cpu")


def slowdowns(points, cores):
    return {curve: (math.exp(beta) - 1, se) for curve, (beta, se) in slowdown_estimates(points, cores).items()}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print("| group | probe | pairs run | k = 1 windows (samples/s) | s throughput: rounds / all (se) "
          "| s thread CPU: rounds / all (se) |")
    print("|---|---|---|---|---|---|")
    spread = {}
    for arg in sys.argv[1:]:
        group, _, files = arg.partition("=")
        for path in files.split(","):
            with open(path) as f:
                doc = json.load(f)
            cores = doc["host"]["cores"]
            rounds = [p for p in doc["points"] if p["round"] < doc["method"]["rounds"]]
            before, after = slowdowns(rounds, cores), slowdowns(doc["points"], cores)
            cells = []
            for curve in CURVES:
                spread.setdefault((group, curve, "rounds"), []).append(before[curve][0])
                spread.setdefault((group, curve, "all"), []).append(after[curve][0])
                cells.append(f"{before[curve][0]:.3f} ({before[curve][1]:.3f}) / "
                             f"{after[curve][0]:.3f} ({after[curve][1]:.3f})")
            w1 = ", ".join(f"{p['throughput_samples_per_s']:.0f}" for p in doc["points"] if p["workers"] == 1)
            pairs = (doc.get("precision") or {}).get("pairs_run", 0)
            print(f"| {group} | {os.path.basename(path)} | {pairs} | {w1} | {cells[0]} | {cells[1]} |")
    print()
    print("| group | curve | points used | probes | s mean | s standard deviation |")
    print("|---|---|---|---|---|---|")
    for (group, curve, used), values in spread.items():
        sd = f"{statistics.stdev(values):.3f}" if len(values) > 1 else "–"
        print(f"| {group} | {curve} | {used} | {len(values)} | {statistics.mean(values):.3f} | {sd} |")


if __name__ == "__main__":
    main()
