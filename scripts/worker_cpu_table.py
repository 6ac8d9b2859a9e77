#!/usr/bin/env python3
"""Where a loader's per-sample CPU goes by worker count and by position in a worker's life, from traces.

    scripts/worker_cpu_table.py TRACE.jsonl.gz [TRACE.jsonl.gz ...]

For each trace (a `simreplay.trace/1` capture), one Markdown row: the loader's worker count, the mean
and median thread CPU per sample (`cpu_ns`), then the median and mean CPU per unit (pixels x frames)
of the samples at each position in their process's life (ordinals 0-9, 10-19, 20-39, 40-79, 80-159,
160+; a worker process is (rank, epoch, worker) without persistent workers, (rank, worker) with them;
the main process is one process), relative to the trace's own median. It answers "does the same
sample cost more in a worker than in the main process, and does that fade as the worker warms up"
(docs/validation-log.md, 2026-12-04 evening). Exit 2 on a file that is not a trace (named, with the
reason).
"""
import gzip
import json
import statistics
import sys
from collections import defaultdict

BINS = [(0, 10), (10, 20), (20, 40), (40, 80), (80, 160), (160, None)]


def read_trace(path):
    """(manifest, samples with cpu_ns) of one trace; ValueError naming the problem otherwise."""
    opener = gzip.open if path.endswith(".gz") else open
    manifest, samples = None, []
    with opener(path, "rt") as f:
        for n, line in enumerate(f, 1):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"line {n}: not JSON ({e.msg})")
            if rec.get("type") == "header":
                manifest = rec.get("manifest") or {}
            elif rec.get("type") == "sample" and rec.get("cpu_ns", -1) >= 0:
                samples.append(rec)
    if manifest is None:
        raise ValueError("no header record: not a simreplay trace")
    return manifest, samples


def units(s):
    return max(1, s.get("width", 0) * s.get("height", 0) * max(1, s.get("frames", 1)))


def row(path):
    manifest, samples = read_trace(path)
    loader = manifest.get("loader") or {}
    persistent = bool(loader.get("persistent_workers"))
    if not samples:
        return f"| {path} | {loader.get('num_workers', '?')} | no samples with cpu_ns |" + " |" * len(BINS)
    level = statistics.median(s["cpu_ns"] / units(s) for s in samples)
    procs = defaultdict(list)
    for s in samples:
        key = (s.get("rank", 0), 0 if persistent or s.get("worker", -1) < 0 else s.get("epoch", 0), s.get("worker", -1))
        procs[key].append(s)
    by_bin = defaultdict(list)
    for lst in procs.values():
        lst.sort(key=lambda s: s.get("t_start_ns", 0))
        for o, s in enumerate(lst):
            for lo, hi in BINS:
                if o >= lo and (hi is None or o < hi):
                    by_bin[(lo, hi)].append(s["cpu_ns"] / units(s) / level)
    cpu_ms = [s["cpu_ns"] / 1e6 for s in samples]
    cells = []
    for b in BINS:
        v = by_bin.get(b)
        cells.append(f"{statistics.median(v):.2f} / {statistics.mean(v):.2f} ({len(v)})" if v else "-")
    return (f"| {path.rsplit('/', 1)[-1]} | {loader.get('num_workers', '?')} | {statistics.mean(cpu_ms):.2f} | "
            f"{statistics.median(cpu_ms):.2f} | " + " | ".join(cells) + " |")


def main(argv):
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    head = ("| trace | workers | CPU/sample mean (ms) | median (ms) | "
            + " | ".join(f"ordinal {lo}-{hi - 1 if hi else ''}".rstrip("-") + ("+" if hi is None else "") for lo, hi in BINS)
            + " |")
    lines = [head, "|" + "---|" * (4 + len(BINS))]
    for path in argv:
        try:
            lines.append(row(path))
        except (OSError, ValueError, EOFError) as e:
            print(f"worker_cpu_table: {path}: {e}", file=sys.stderr)
            return 2
    print("\n".join(lines))
    print("\nOrdinal cells: median / mean CPU per unit over the trace's median (samples).")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
