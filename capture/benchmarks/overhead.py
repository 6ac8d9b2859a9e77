"""Capture overhead on the real bench pipeline: capture off vs on, interleaved ABBA, several reps, for
persistent and non-persistent workers.

    PYTHONPATH=capture python3 capture/benchmarks/overhead.py --data DIR [--reps 4] [--mode pipeline|train]
        [--workers-mode both|persistent|non-persistent] [--seed 1]

Each run is a fresh process (`python3 -m simreplay_capture.bench run`), so page cache and worker
start-up are treated alike; the first run of each worker mode is a discarded warm-up. Time runs from
the end of the warm-up steps through `Recorder.close()` (the bench's `wall_through_close_s`): the
flush, the final worker records and the footer are part of what capture costs. Non-persistent workers
are restarted every epoch, so each epoch pays the workers' capture start-up again.

For each worker mode it prints per-run throughput, the per-pair on/off throughput ratios, and the
overhead 1 - median ratio with a 95% percentile-bootstrap interval over the pairs (2000 resamples,
seeded: the same runs give the same interval). With few pairs the interval is wide; that is the point.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from typing import Dict, List, Tuple

BOOTSTRAP_RESAMPLES = 2000


def one(args: argparse.Namespace, capture: bool, persistent: bool, tmp: str, k: int) -> dict:
    summ = os.path.join(tmp, f"s{k}.json")
    cmd = [sys.executable, "-m", "simreplay_capture.bench", "run", "--data", args.data,
           "--format", args.format, "--workers", str(args.workers), "--batch-size", str(args.batch_size),
           "--epochs", str(args.epochs), "--warmup-steps", "3", "--image-size", str(args.image_size),
           "--persistent-workers" if persistent else "--no-persistent-workers", "--summary-json", summ]
    if args.mode == "pipeline":
        cmd.append("--pipeline-only")
    else:
        cmd += ["--step-time-s", str(args.step_time_s)]
    cmd += ["--trace", os.path.join(tmp, f"t{k}.jsonl.gz")] if capture else ["--no-capture"]
    env = dict(os.environ)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = here + os.pathsep + env.get("PYTHONPATH", "")
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    with open(summ) as f:
        return json.load(f)


def bootstrap_median_interval(values: List[float], seed: int, level: float = 0.95) -> Tuple[float, float]:
    """Percentile bootstrap interval of the median of `values` (resampled with replacement)."""
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(BOOTSTRAP_RESAMPLES))
    lo = medians[int((1 - level) / 2 * (BOOTSTRAP_RESAMPLES - 1))]
    hi = medians[int((1 + level) / 2 * (BOOTSTRAP_RESAMPLES - 1))]
    return lo, hi


def measure(a: argparse.Namespace, persistent: bool, tmp: str) -> Dict[str, float]:
    label = "persistent" if persistent else "non-persistent"
    off: List[dict] = []
    on: List[dict] = []
    base = 1000 if persistent else 2000
    one(a, False, persistent, tmp, base + 999)  # warm-up (page cache, imports)
    k = base
    for r in range(a.reps):
        for capture in ((False, True) if r % 2 == 0 else (True, False)):  # ABBA order
            s = one(a, capture, persistent, tmp, k)
            k += 1
            (on if capture else off).append(s)
            print(f"{label} rep {r} capture={'on ' if capture else 'off'} "
                  f"{s['throughput_through_close_samples_per_s']:8.1f} samples/s through close "
                  f"({s['throughput_samples_per_s']:8.1f} before close) "
                  + (f"{s['cpu_s_per_sample'] * 1e3:7.2f} ms CPU/sample" if persistent else ""), flush=True)
    thr_on = [s["throughput_through_close_samples_per_s"] for s in on]
    thr_off = [s["throughput_through_close_samples_per_s"] for s in off]
    ratios = [x / y for x, y in zip(thr_on, thr_off)]
    ratio = statistics.median(ratios)
    lo, hi = bootstrap_median_interval(ratios, a.seed)
    print(f"{label}: off median {statistics.median(thr_off):.1f} samples/s, on median {statistics.median(thr_on):.1f}"
          f" (timed through Recorder.close())")
    print(f"{label}: throughput ratio on/off per pair {', '.join(f'{x:.3f}' for x in ratios)}")
    # overhead = 1 - ratio: the interval's ends swap.
    print(f"{label}: overhead {100 * (1 - ratio):.2f}% (95% bootstrap interval {100 * (1 - hi):.2f}% .. "
          f"{100 * (1 - lo):.2f}%, {len(ratios)} pairs)")
    # CPU per sample (main + workers, timed window) is far less sensitive to noisy neighbours than wall
    # throughput on a shared machine; on a CPU-bound pipeline its ratio bounds the throughput cost.
    # Only with persistent workers: the window's CPU is read from the live process tree, and
    # non-persistent workers exit every epoch taking their CPU time with them.
    if persistent:
        c_on = statistics.median(s["cpu_s_per_sample"] for s in on)
        c_off = statistics.median(s["cpu_s_per_sample"] for s in off)
        print(f"{label}: CPU per sample off {c_off * 1e3:.2f} ms, on {c_on * 1e3:.2f} ms "
              f"-> {100 * (c_on / c_off - 1):+.2f}%")
    else:
        print(f"{label}: CPU per sample not measured (workers exit each epoch; their CPU leaves the tree)")
    return {"overhead": 1 - ratio, "overhead_low": 1 - hi, "overhead_high": 1 - lo}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--format", default="files")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--image-size", type=int, default=128)
    ap.add_argument("--reps", type=int, default=4, help="ABBA pairs per worker mode")
    ap.add_argument("--mode", choices=["pipeline", "train"], default="pipeline")
    ap.add_argument("--workers-mode", choices=["both", "persistent", "non-persistent"], default="both")
    ap.add_argument("--step-time-s", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=1, help="seed of the bootstrap resampling")
    a = ap.parse_args()
    if a.reps < 1:
        ap.error("--reps must be >= 1")
    modes = {"both": [True, False], "persistent": [True], "non-persistent": [False]}[a.workers_mode]
    with tempfile.TemporaryDirectory() as tmp:
        for persistent in modes:
            measure(a, persistent, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
