#!/usr/bin/python3
"""Where the page-fault churn of a DataLoader comes from, per process lifetime (docs/modelling.md,
"Page-fault churn", "What drives it").

Captures the bench (the validation suite's dataset and pipeline, seed 0) at each worker count, twice,
and reads every sample's minor page faults (`minflt`) per process lifetime: a worker process from its
fork to its exit (one per epoch without persistent workers), or the main process when it loads inline.
Reports, per configuration and repetition, each lifetime's faults per sample (all samples, and after
its first 10, the start-up that `cpu.worker_warmup_cpu_s` charges); the faults by position in the
lifetime; and the faults by how large a sample's decoded image is against the largest one decoded
before it in the same lifetime (glibc raises its mmap threshold to the largest block freed, so a
sample larger than what came before is mapped fresh). Nothing is gated: this measures a mechanism.

It also tries the size rule as a predictor (not used by the simulator; docs/modelling.md says why):
from the first capture of `--predict-from` workers it takes the mean faults of a "larger" sample and
of any other after the start-up, reassigns that capture's batches to k workers as the DataLoader does
(batch b to worker b mod k, a fresh process every epoch; inline: one process), and compares the
faults per sample it expects after the start-up with each configuration's measured ones.

usage: validation/allocator/lifetimes.py --out DIR [--data DIR] [--workers 0,1,2,4,6] [--reps 2]
                                         [--predict-from 2]
       validation/allocator/lifetimes.py --out DIR --traces T1 [T2 ...]   (analyse existing traces)
env:   SIMREPLAY_BIN (build/simreplay: the host screen around each captured run; nothing is simulated)
exit:  0 written; 3 a trace that cannot be read (one line naming the file and line, nothing written)
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys
from typing import Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
# The relief check's pipeline and, through it, the advice harness's bench runs: one home for each.
_spec = importlib.util.spec_from_file_location("allocator_run", os.path.join(HERE, "run.py"))
allocator = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(allocator)
advice, sc, REPO, PIPELINE = allocator.advice, allocator.sc, allocator.REPO, allocator.PIPELINE

STARTUP_SAMPLES = 10  # calibrate/cpu_stage.cc's kWarmupSamples: a worker's start-up excess
LARGER_THAN = 0.5     # advise/observed_faults.h's kLargerThanLargest
POSITIONS = [(0, 10), (10, 50), (50, 100), (100, 200), (200, 10**9)]
RATIOS = [("new largest", 1.0, float("inf")), ("0.8-1 of largest", 0.8, 1.0), ("0.5-0.8", 0.5, 0.8),
          ("below 0.5", 0.0, 0.5)]


def pixels(s: dict) -> int:
    return s["width"] * s["height"] * max(1, s["frames"])


def larger_flags(lifetime: List[dict]) -> List[bool]:
    """Whether each sample decodes more pixels than LARGER_THAN x the largest before it in its lifetime."""
    flags, largest = [], 0
    for s in lifetime:
        flags.append(pixels(s) > LARGER_THAN * largest)
        largest = max(largest, pixels(s))
    return flags


def steady_faults(lts: List[List[dict]], per_sample) -> float:
    """Mean of per_sample(sample, larger) over every lifetime's samples after its start-up."""
    v = [per_sample(s, f) for lt in lts for i, (s, f) in enumerate(zip(lt, larger_flags(lt))) if i >= STARTUP_SAMPLES]
    return mean(v)


def reassigned(samples: List[dict], workers: int) -> List[List[dict]]:
    """The capture's samples in stream order dealt to `workers` fresh processes per epoch as the DataLoader
    deals batches (batch b to worker b mod workers); inline (0): one process for the run."""
    by: Dict[Tuple[int, int], List[dict]] = {}
    for s in sorted(samples, key=lambda s: (s["epoch"], s["batch"], s["t_start_ns"])):
        by.setdefault((0, -1) if workers == 0 else (s["epoch"], s["batch"] % workers), []).append(s)
    return list(by.values())


Lifetimes = List[Tuple[str, List[dict]]]  # (name, samples in start order), as lifetimes() reads them


def rule_check(base_name: str, base_lts: Lifetimes, by_workers: Dict[int, Lifetimes]) -> dict:
    base = [lt for _, lt in base_lts]
    flagged = [(s["minflt"], f) for lt in base for i, (s, f) in enumerate(zip(lt, larger_flags(lt)))
               if i >= STARTUP_SAMPLES]
    f_larger = mean([m for m, f in flagged if f])
    f_other = mean([m for m, f in flagged if not f])
    base_samples = [s for lt in base for s in lt]
    rows = []
    for k, lts in sorted(by_workers.items()):
        expected = steady_faults(reassigned(base_samples, k), lambda s, f: f_larger if f else f_other)
        measured = steady_faults([lt for _, lt in lts], lambda s, f: s["minflt"])
        rows.append({"workers": k, "expected_faults_per_sample": expected, "measured_faults_per_sample": measured})
    return {"from": base_name, "larger_sample_faults": f_larger, "other_sample_faults": f_other,
            "configurations": rows}


def lifetimes(trace: str) -> Lifetimes:
    """The trace's samples by process lifetime, each in start order. Key: rank, epoch (unless the workers
    are persistent), worker; the main process (worker < 0) lives for the whole run."""
    t = sc.read_trace(trace)
    persistent = bool(t.manifest.get("loader", {}).get("persistent_workers", False))
    by: Dict[Tuple[int, int, int], List[dict]] = {}
    for s in t.of("sample"):
        if "minflt" not in s:
            continue
        w = s["worker"]
        by.setdefault((s["rank"], 0 if (persistent or w < 0) else s["epoch"], w), []).append(s)
    out = []
    for (rank, epoch, w), v in sorted(by.items()):
        v.sort(key=lambda s: s["t_start_ns"])
        out.append((f"rank {rank} " + ("main" if w < 0 else f"epoch {epoch} worker {w}"), v))
    return out


def mean(v: List[float]) -> float:
    return statistics.fmean(v) if v else float("nan")


def analyse(trace_name: str, lts: Lifetimes) -> dict:
    per_lifetime = []
    by_position: Dict[str, List[int]] = {f"{a}-{b - 1 if b < 10**9 else ''}": [] for a, b in POSITIONS}
    by_ratio: Dict[str, List[int]] = {name: [] for name, _, _ in RATIOS}
    for name, v in lts:
        faults = [s["minflt"] for s in v]
        per_lifetime.append({"lifetime": name, "samples": len(v), "faults_per_sample": mean(faults),
                             "faults_per_sample_after_startup": mean(faults[STARTUP_SAMPLES:])})
        largest = 0
        for i, s in enumerate(v):
            for (a, b), key in zip(POSITIONS, by_position):
                if a <= i < b:
                    by_position[key].append(s["minflt"])
            area = s["width"] * s["height"]
            if i >= STARTUP_SAMPLES and s["format"] == "jpeg" and largest > 0:
                r = area / largest
                for rname, lo, hi in RATIOS:
                    if lo <= r < hi or (hi == float("inf") and r >= lo):
                        by_ratio[rname].append(s["minflt"])
                        break
            if s["format"] == "jpeg":
                largest = max(largest, area)
    all_faults = sorted((s["minflt"] for _, v in lts for s in v), reverse=True)
    top = all_faults[:max(1, len(all_faults) // 10)]
    return {
        "trace": trace_name,
        "samples": len(all_faults),
        "faults_per_sample": mean(all_faults),
        "share_of_faults_in_top_tenth_of_samples": sum(top) / max(1, sum(all_faults)),
        "lifetimes": per_lifetime,
        "by_position": {k: {"samples": len(x), "faults_per_sample": mean(x)} for k, x in by_position.items() if x},
        "by_size_against_largest_before": {
            k: {"samples": len(x), "faults_per_sample": mean(x),
                "share_over_100_faults": sum(f > 100 for f in x) / len(x)} for k, x in by_ratio.items() if x},
    }


def text(results: List[dict]) -> str:
    lines = []
    for r in results:
        lines.append(f"{r['trace']}: {r['samples']} samples, {r['faults_per_sample']:.0f} faults per sample, "
                     f"{r['share_of_faults_in_top_tenth_of_samples']:.0%} of them in the top tenth of samples")
        lines.append("  lifetimes (faults per sample, all / after its first 10): " + ", ".join(
            f"{lt['samples']} samples {lt['faults_per_sample']:.0f}/{lt['faults_per_sample_after_startup']:.0f}"
            for lt in r["lifetimes"]))
        lines.append("  by position in the lifetime: " + ", ".join(
            f"{k}: {v['faults_per_sample']:.0f}" for k, v in r["by_position"].items()))
        lines.append("  JPEGs by size against the largest before (after the first 10): " + ", ".join(
            f"{k}: {v['faults_per_sample']:.0f} ({v['samples']}, {v['share_over_100_faults']:.0%} over 100)"
            for k, v in r["by_size_against_largest_before"].items()))
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--data", default=os.path.join(REPO, "build", "validation-data"))
    ap.add_argument("--workers", default="0,1,2,4,6")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--traces", nargs="*", help="analyse these traces instead of capturing")
    ap.add_argument("--predict-from", type=int, default=2,
                    help="the worker count whose first capture the size rule predicts the others from")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    traces = list(a.traces or [])
    first_of: Dict[int, str] = {}  # worker count -> its first capture (captured here)
    if not traces:
        for w in (int(x) for x in a.workers.split(",")):
            cfg = {"workers": w, "prefetch_factor": 2, "persistent_workers": False}
            for rep in range(a.reps):
                t = os.path.join(a.out, f"w{w}.r{rep}.trace.jsonl.gz")
                advice.run_bench(advice.bench_cmd(a.data, PIPELINE, cfg, a.steps, ["--trace", t]),
                                 os.path.join(a.out, f"w{w}.r{rep}.summary.json"))
                traces.append(t)
                first_of.setdefault(w, t)
                advice.log(f"captured {os.path.basename(t)}")
    try:
        read = {t: lifetimes(t) for t in traces}  # each trace read once
    except (sc.TraceError, OSError) as e:  # TraceError reads "FILE:LINE: ..."
        print(f"lifetimes.py: {e}", file=sys.stderr)
        return 3
    results = [analyse(os.path.basename(t), lts) for t, lts in read.items()]
    rule = None
    if a.predict_from in first_of:
        base = first_of[a.predict_from]
        rule = rule_check(os.path.basename(base), read[base], {k: read[t] for k, t in first_of.items()})
    doc = {"schema": "simreplay.churn-lifetimes/1", "meta": advice.run_meta(data=a.data, steps=a.steps),
           "results": results, "size_rule": rule}
    with open(os.path.join(a.out, "lifetimes.json"), "w") as f:
        json.dump(doc, f, indent=2, sort_keys=True)
    report = text(results)
    if rule:
        report += (f"size rule from {rule['from']}: a larger sample {rule['larger_sample_faults']:.0f} faults, another "
                   f"{rule['other_sample_faults']:.0f}; expected / measured faults per sample after the start-up: " +
                   ", ".join(f"{r['workers']} workers {r['expected_faults_per_sample']:.0f} / "
                             f"{r['measured_faults_per_sample']:.0f}" for r in rule["configurations"]) + "\n")
    with open(os.path.join(a.out, "lifetimes.txt"), "w") as f:
        f.write(report)
    print(report, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
