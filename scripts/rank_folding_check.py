#!/usr/bin/env python3
"""Rank folding against the full simulation (docs/performance.md, "Rank folding").

For each cluster size and variant, runs scripts/scale_benchmark.sh twice, with replay.rank_folding
"auto" and "off", and compares the metrics a plan reads: train throughput and the p95 step time must
agree within --limit-pct (1%, issue 25); GPU idle, mean step and mean data wait are reported. Variants:
  plan     the scale benchmark's plan settings (8 workers per rank, batch fidelity, 0.25 s steps)
  sample   the same at per-sample fidelity
  data     data-bound: one worker per rank, 4 ms steps, 4 MB of gradients (ranks wait for data)

Writes OUT/rank-folding-check.json (schema simreplay.rank-folding-check/1, docs/validation-format.md: one
row per size and variant with both runs' figures, the differences in percent and the CPU seconds of
each) and prints a table. Exit 0 when every row is within the limit, 1 when one is not, 2 on a usage or run error.

usage: scripts/rank_folding_check.py [--nodes "16 32 128"] [--steps 1000] [--variants "plan sample data"]
                                     [--binary build/simreplay] [--limit-pct 1] --out DIR
       scripts/rank_folding_check.py --table DIR/rank-folding-check.json   (its rows as a Markdown table)
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VARIANTS = {
    "plan": [],
    "sample": ["--fidelity", "sample"],
    "data": ["--workers", "1", "--step-time", "0.004", "--gradient-bytes", "4e6"],
}
GATED = ("train_throughput_samples_per_s", "step_time_p95_s")


def fail(message):
    """One line on stderr and exit 2 (a usage or run error; 1 is kept for a row outside the limit)."""
    print("rank_folding_check: " + message, file=sys.stderr)
    sys.exit(2)


def advice_run():
    """validation/advice/run.py, the one home of a harness's date, commit and host (run_meta)."""
    spec = importlib.util.spec_from_file_location("advice_run", os.path.join(REPO, "validation", "advice", "run.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_benchmark(binary, nodes, steps, variant, folding, out):
    cmd = [os.path.join(REPO, "scripts", "scale_benchmark.sh"), "--binary", binary, "--nodes", str(nodes),
           "--steps", str(steps), "--rank-folding", folding, "--out", out] + VARIANTS[variant]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        fail("%s failed: %s" % (" ".join(cmd), (done.stderr.strip().splitlines() or ["no message"])[-1]))
    # The benchmark's line: gpus nodes wall_s cpu_s peak_rss_mb digest
    fields = done.stdout.strip().splitlines()[-1].split()
    metrics = json.load(open(os.path.join(out, "run-%d" % nodes, "results.json")))["points"][0]["result"]["metrics"]
    return {
        "train_throughput_samples_per_s": metrics["train_throughput_samples_per_s"],
        "step_time_p95_s": metrics["step_time_s"]["p95"],
        "step_time_mean_s": metrics["step_time_s"]["mean"],
        "gpu_idle_fraction": metrics["gpu_idle_fraction"],
        "data_wait_mean_s": metrics["data_wait_s"]["mean"],
        # the nodes simulated in full when a fold was made or refused (refused: all of them)
        "folded_to_nodes": metrics.get("cluster", {}).get("rank_folding", {}).get("simulated_nodes"),
        "fold_refused": "refused" in metrics.get("cluster", {}).get("rank_folding", {}),
        "wait_spread": metrics.get("cluster", {}).get("rank_folding", {}).get("wait_spread"),
        "cpu_s": float(fields[3]),
        "peak_rss_mb": float(fields[4]),
    }


def folding_label(figures, nodes):
    simulated = figures["folded_to_nodes"]
    if simulated is None:
        return "not folded"
    return "refused: all %d simulated" % nodes if simulated == nodes else "%d nodes" % simulated


def markdown_table(path):
    try:
        with open(path) as f:
            doc = json.load(f)
        if doc.get("schema") != "simreplay.rank-folding-check/1":
            raise ValueError("not a simreplay.rank-folding-check/1 document")
    except (OSError, ValueError) as e:  # json.JSONDecodeError is a ValueError and names the line
        fail("%s: %s" % (path, e))
    meta = doc.get("meta", doc)  # runs before 2026-12-05 07:30 UTC kept date and commit at the top
    lines = ["Run %s on commit %s (`scripts/rank_folding_check.py`), %d steps; limit %.1f%% on throughput and p95 step."
             % (meta["date"], meta["commit"], doc["rows"][0]["steps"] if doc["rows"] else 0, doc["limit_pct"]), "",
             "| variant | GPUs (nodes) | folded to | throughput diff | p95 step diff | GPU idle diff | CPU s folded / full |"
             " peak RSS MiB folded / full |",
             "|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        f, full, d = r["folded"], r["full"], r["diff_pct"]
        lines.append("| %s | %d (%d) | %s | %+.3f%% | %+.3f%% | %+.3f pp | %.2f / %.2f | %.0f / %.0f |" % (
            r["variant"], r["gpus"], r["nodes"], folding_label(f, r["nodes"]),
            d["train_throughput_samples_per_s"], d["step_time_p95_s"], r["gpu_idle_diff_pp"], f["cpu_s"],
            full["cpu_s"], f["peak_rss_mb"], full["peak_rss_mb"]))
    lines.append("")
    lines.append("Result: %s." % ("every row within the limit" if doc["pass"] else "a row OUTSIDE the limit"))
    return "\n".join(lines)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        print(markdown_table(sys.argv[2]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="16 32 128")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--variants", default="plan sample data")
    ap.add_argument("--binary", default=os.path.join(REPO, "build", "simreplay"))
    ap.add_argument("--limit-pct", type=float, default=1.0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    try:
        node_counts = [int(n) for n in args.nodes.split()]
    except ValueError:
        ap.error("--nodes takes node counts, found %r" % args.nodes)
    variants = args.variants.split()
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        ap.error("unknown variant(s) %s (known: %s)" % (", ".join(unknown), ", ".join(VARIANTS)))
    os.makedirs(args.out, exist_ok=True)
    rows = []
    print("%-7s %-6s %-7s %12s %12s %9s %22s %8s %8s" % ("variant", "nodes", "gpus", "thr diff %", "p95 diff %",
                                                         "idle pp", "folded to", "cpu s", "full cpu"))
    for variant in variants:
        for nodes in node_counts:
            base = os.path.join(args.out, "%s-%d" % (variant, nodes))
            folded = run_benchmark(args.binary, nodes, args.steps, variant, "auto", base + "-folded")
            full = run_benchmark(args.binary, nodes, args.steps, variant, "off", base + "-full")
            diff = {k: 100.0 * (folded[k] - full[k]) / full[k] for k in GATED + ("step_time_mean_s",)}
            ok = all(abs(diff[k]) <= args.limit_pct for k in GATED)
            rows.append({"variant": variant, "nodes": nodes, "gpus": nodes * 8, "steps": args.steps,
                         "folded": folded, "full": full, "diff_pct": diff,
                         "gpu_idle_diff_pp": 100.0 * (folded["gpu_idle_fraction"] - full["gpu_idle_fraction"]),
                         "within_limit": ok})
            print("%-7s %-6d %-7d %+12.3f %+12.3f %+9.3f %22s %8.2f %8.2f%s" % (
                variant, nodes, nodes * 8, diff["train_throughput_samples_per_s"], diff["step_time_p95_s"],
                rows[-1]["gpu_idle_diff_pp"], folding_label(folded, nodes), folded["cpu_s"], full["cpu_s"],
                "" if ok else "  OUTSIDE %.1f%%" % args.limit_pct))
    doc = {"schema": "simreplay.rank-folding-check/1", "meta": advice_run().run_meta(steps=args.steps),
           "limit_pct": args.limit_pct, "gated": list(GATED), "rows": rows, "pass": all(r["within_limit"] for r in rows)}
    with open(os.path.join(args.out, "rank-folding-check.json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    print("rank folding check: %s (limit %.1f%% on %s)" % ("PASS" if doc["pass"] else "FAIL", args.limit_pct,
                                                          ", ".join(GATED)))
    return 0 if doc["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
