#!/usr/bin/env python3
"""Where a multi-node run's CPU goes, per case, from its rank traces (docs/validation-log.md, 2026-12-06).

usage: scripts/multinode_cpu_table.py OUT [--warmup-steps N]   (OUT: a `simreplay validate multinode.json` out dir)

Prints a Markdown table: the loop thread's host CPU per step (`cpu_ns` of the step records: mean over
all steps, mean over the steps after the run's warm-up, median of those), and the loader's thread CPU
and minor page faults per sample, over every run and rank of the case.
"""
import argparse
import glob
import gzip
import json
import os
import statistics


def case_rows(out: str, warmup_steps: int):
    cases = sorted({os.path.basename(d).rsplit(".r", 1)[0] for d in glob.glob(os.path.join(out, "runs", "*.r*"))})
    for case in cases:
        all_steps, steady, cpu, faults = [], [], [], []
        for path in glob.glob(os.path.join(out, "runs", f"{case}.r*", "t*.jsonl.gz")):
            with gzip.open(path, "rt") as f:
                for line in f:
                    r = json.loads(line)
                    if r.get("type") == "step" and r.get("cpu_ns", -1) >= 0:
                        all_steps.append(r["cpu_ns"] / 1e6)
                        if r["step"] >= warmup_steps:
                            steady.append(r["cpu_ns"] / 1e6)
                    elif r.get("type") == "sample" and r.get("cpu_ns", -1) >= 0:
                        cpu.append(r["cpu_ns"] / 1e6)
                        if r.get("minflt", -1) >= 0:
                            faults.append(r["minflt"])
        if steady and cpu:  # steady implies all_steps
            yield case, all_steps, steady, cpu, faults


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--warmup-steps", type=int, default=5)
    a = ap.parse_args()
    print("| case | step host CPU ms, mean of all steps | mean after warm-up | median after warm-up | "
          "sample thread CPU ms, mean | median | faults per sample, mean | samples |")
    print("|---|---|---|---|---|---|---|---|")
    mean, med = statistics.mean, statistics.median
    for case, all_steps, steady, cpu, faults in case_rows(a.out, a.warmup_steps):
        fault_mean = f"{mean(faults):.0f}" if faults else "n/a"
        print(f"| {case} | {mean(all_steps):.1f} | {mean(steady):.1f} | {med(steady):.1f} | {mean(cpu):.2f} | "
              f"{med(cpu):.2f} | {fault_mean} | {len(cpu)} |")


if __name__ == "__main__":
    main()
