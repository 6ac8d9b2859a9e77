"""CPU contention probe: how a dataset's loading throughput changes with the number of worker processes.

A trace taken at one worker count sees one point of the host's contention curve; the simulator needs
the whole curve to predict other worker counts (more workers than cores in particular). This probe
measures it for the user's own dataset: it replays a fixed sample of real ``__getitem__`` calls
through a real ``torch.utils.data.DataLoader`` with k worker processes, k = 1 .. 2 x cores (the main
process receiving every batch: its per-batch work runs too), and records per point the throughput,
the per-sample wall and thread CPU time of ``__getitem__``, and the CPU of the main process and the
workers. Points are measured in rounds (k ascending, then descending, ...) so slow drift of the host
hits every k alike; each point runs for ``seconds_per_point`` after a warm-up, and the whole probe
stops at ``max_total_s`` (the points not reached are listed as such). After the rounds, while the
shared-core slowdown is known less precisely than ``precision_target_se`` (its standard error from
the points, see ``slowdown_standard_error``), the probe measures more adjacent pairs of k = 1 and
k = cores, up to ``precision_pairs`` of them: the slowdown rests on that contrast alone, and a single
window of a noisy host can move it by 0.2 (docs/probe-cpu.md, "Precision pairs").

Output: ``probe-cpu.json``, schema ``simreplay.probe-cpu/1`` (docs/probe-cpu.md). ``simreplay
calibrate --cpu-probe probe-cpu.json`` fits the simulator's CPU model to it.

Usage::

    python3 -m simreplay_capture.probe_cpu --dataset mypkg.data:make_dataset --out probe-cpu.json
    python3 -m simreplay_capture.probe_cpu --bench-data DIR [--format files --image-size 96 --frames 4]

or from Python: ``probe_cpu.run_probe(dataset, out_path="probe-cpu.json", collate_fn=...)``.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import platform
import random
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import procfs
from .probe_network import _write_atomically
from .worker_side import thread_minflt

SCHEMA = "simreplay.probe-cpu/1"


class _TimedItems:
    """Dataset view over a fixed list of indices, cycled; each item carries its wall and thread CPU ns.

    Picklable (DataLoader workers are forked, but a spawn context must work too). The user's dataset
    is only read: its order and random state are never touched outside the probe's own processes.
    """

    def __init__(self, dataset: Any, indices: Sequence[int], length: int) -> None:
        self.dataset = dataset
        self.indices = list(indices)
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int) -> Any:
        idx = self.indices[i % len(self.indices)]
        f0 = thread_minflt()
        t0 = time.perf_counter_ns()
        c0 = time.thread_time_ns()
        item = self.dataset[idx]
        c1 = time.thread_time_ns()
        t1 = time.perf_counter_ns()
        return item, t1 - t0, c1 - c0, thread_minflt() - f0 if f0 >= 0 else -1


class _TimedCollate:
    def __init__(self, collate_fn: Optional[Callable[[List[Any]], Any]]) -> None:
        self.collate_fn = collate_fn

    def __call__(self, items: List[Any]) -> Any:
        import torch.utils.data as tud
        fn = self.collate_fn or tud.default_collate
        return (fn([it[0] for it in items]), [it[1] for it in items], [it[2] for it in items],
                [it[3] for it in items])


def _children_cpu_ns(pid: int) -> int:
    """CPU (utime+stime) of the live direct children of pid (the DataLoader workers)."""
    return procfs.tree_cpu_ns(pid) - procfs.process_cpu_ns(pid)


def _timed_sleep_overrun_s(sleep_s: float) -> float:
    """Sleeps sleep_s and returns how much later than asked the thread ran again (the scheduler's wake-up delay)."""
    t = time.perf_counter()
    time.sleep(sleep_s)
    return max(0.0, time.perf_counter() - t - sleep_s)


def _baseline_wake_delay(sleep_s: float, count: int) -> Dict[str, Any]:
    """The wake-up delay of the main process with no worker running (timer slack, idle-core wake-up)."""
    over = [_timed_sleep_overrun_s(sleep_s) for _ in range(count)]
    return {"sleeps": count, "delay_s_mean": sum(over) / len(over)}


def _measure_point(items: _TimedItems, collate: _TimedCollate, k: int, batch_size: int, prefetch_factor: int,
                   warmup_s: float, seconds: float, wake_sleep_s: float = 0.0, wake_every: int = 4) -> Dict[str, Any]:
    """One DataLoader with k workers: warm up, then count delivered samples for `seconds`.

    With wake_sleep_s > 0 the main loop sleeps that long after every `wake_every`-th batch, as a
    training loop blocks in its step, and records how late it wakes up while the k workers run: the
    scheduler's wake-up delay at that concurrency (the simulator adds it when the loop resumes).
    """
    import warnings
    import torch.utils.data as tud
    with warnings.catch_warnings():
        # torch warns when workers outnumber cores: that is the point of the probe
        warnings.simplefilter("ignore", UserWarning)
        loader = tud.DataLoader(items, batch_size=batch_size, shuffle=False, num_workers=k,
                                prefetch_factor=prefetch_factor, collate_fn=collate, persistent_workers=False)
        it = iter(loader)
    pid = os.getpid()
    t_start = time.perf_counter()
    # Warm-up: workers started, every worker has delivered, and warmup_s passed.
    batches = 0
    while batches < 2 * k or time.perf_counter() - t_start < warmup_s:
        next(it)
        batches += 1
    load0 = procfs.loadavg_1m()
    t0 = time.perf_counter()
    main0 = time.process_time_ns()
    work0 = _children_cpu_ns(pid)
    host0 = procfs.host_sample()[2]
    samples = 0
    walls: List[int] = []
    cpus: List[int] = []
    faults: List[int] = []
    wakes: List[float] = []
    batch = 0
    while True:
        _, w, c, f = next(it)
        samples += len(w)
        walls.extend(w)
        cpus.extend(c)
        faults.extend(f)
        batch += 1
        if wake_sleep_s > 0 and batch % wake_every == 0:
            wakes.append(_timed_sleep_overrun_s(wake_sleep_s))
        if time.perf_counter() - t0 >= seconds:
            break
    t1 = time.perf_counter()
    main1 = time.process_time_ns()
    work1 = _children_cpu_ns(pid)
    host1 = procfs.host_sample()[2]
    load1 = procfs.loadavg_1m()
    del it  # shuts the workers down
    wall = t1 - t0
    n = max(1, len(walls))
    return {
        "workers": k,
        "samples": samples,
        "wall_s": wall,
        "throughput_samples_per_s": samples / wall if wall > 0 else 0.0,
        "getitem_wall_s_mean": sum(walls) / n * 1e-9,
        "getitem_cpu_s_mean": sum(cpus) / n * 1e-9,
        **_faults_field(faults),
        "main_cpu_s": (main1 - main0) * 1e-9,
        "workers_cpu_s": max(0, work1 - work0) * 1e-9,
        "host_busy_cores": (host1 - host0) * 1e-9 / wall if wall > 0 else 0.0,
        "loadavg_1m": [load0, load1],
        **({"wake_sleeps": len(wakes), "wake_delay_s_mean": sum(wakes) / len(wakes)} if wakes else {}),
    }


def _faults_field(faults: Sequence[int]) -> Dict[str, float]:
    """{"minflt_per_sample_mean": ...} when every sample's page faults were counted, else {}."""
    if not faults or min(faults) < 0:
        return {}
    return {"minflt_per_sample_mean": sum(faults) / len(faults)}


def _measure_inline(items: _TimedItems, collate: _TimedCollate, batch_size: int, warmup_s: float,
                    seconds: float) -> Dict[str, Any]:
    """The same items loaded by the main process itself (num_workers=0) for `seconds` after a warm-up:
    the per-sample cost of inline loading. It can differ from a worker's beyond contention: a fresh
    worker's allocator can return and re-fault each sample's buffers where a long-lived process keeps
    them (docs/modelling.md, "Page-fault churn"). Measured after every worker point, so the workers
    the points fork are not forked from a process that has decoded.

    The warm-up also covers one pass over the items (for at most 2 x `seconds` beyond `warmup_s`): an
    inline loader's allocator churns until it has decoded the largest samples and then settles, and a
    training run's warm-up steps are past that, so a window that opened earlier would measure the
    settling instead (docs/modelling.md, "Page-fault churn")."""
    import torch.utils.data as tud
    it = iter(tud.DataLoader(items, batch_size=batch_size, shuffle=False, num_workers=0, collate_fn=collate))
    t_start = time.perf_counter()
    batches = 0
    warm_samples = 0
    while (batches < 2 or time.perf_counter() - t_start < warmup_s
           or (warm_samples < len(items.indices) and time.perf_counter() - t_start < warmup_s + 2 * seconds)):
        warm_samples += len(next(it)[1])
        batches += 1
    t0 = time.perf_counter()
    walls: List[int] = []
    cpus: List[int] = []
    faults: List[int] = []
    while time.perf_counter() - t0 < seconds:
        _, w, c, f = next(it)
        walls.extend(w)
        cpus.extend(c)
        faults.extend(f)
    wall = time.perf_counter() - t0
    n = max(1, len(walls))
    return {"samples": len(walls), "wall_s": wall, "throughput_samples_per_s": len(walls) / wall,
            "getitem_wall_s_mean": sum(walls) / n * 1e-9, "getitem_cpu_s_mean": sum(cpus) / n * 1e-9,
            "warmup_samples": warm_samples, **_faults_field(faults)}


def _curve_points(points: Sequence[Dict[str, Any]], cores: int) -> Dict[str, List[tuple]]:
    """(n, cost, round) of both curves calibrate fits: core-seconds per delivered sample, and the mean
    thread CPU time of one __getitem__ (the same definitions as calibrate/cpu_probe.cc)."""
    throughput, thread_cpu = [], []
    for p in points:
        if p["throughput_samples_per_s"] > 0 and p["wall_s"] > 0:
            main_cores = min(1.0, max(0.0, p["main_cpu_s"] / p["wall_s"]))
            usable = min(p["workers"], max(1e-3, cores - main_cores))
            throughput.append((p["workers"], usable / p["throughput_samples_per_s"], p["round"]))
        if p["getitem_cpu_s_mean"] > 0:
            thread_cpu.append((p["workers"], p["getitem_cpu_s_mean"], p["round"]))
    return {"throughput": throughput, "thread_cpu": thread_cpu}


def _slowdown_of_curve(curve: Sequence[tuple], cores: int) -> tuple:
    """(beta, its standard error) of the linear form of calibrate's fit:
    log cost = level(round) + beta x (min(n, C) - 1) / (C - 1) + gamma x max(0, n - C) / C, least
    squares (levels removed by demeaning within each round); beta ~ log(1 + s). The error is inf when
    the points cannot tell it (fewer than one residual degree of freedom, or no contrast in n)."""
    rounds: Dict[int, List[tuple]] = {}
    for n, cost, r in curve:
        a = (min(n, cores) - 1) / (cores - 1)
        b = max(0, n - cores) / cores
        rounds.setdefault(r, []).append((a, b, math.log(cost)))
    rows = []
    for pts in rounds.values():
        ma, mb, my = (sum(x[i] for x in pts) / len(pts) for i in range(3))
        rows += [(a - ma, b - mb, y - my) for a, b, y in pts]
    saa = sum(a * a for a, _, _ in rows)
    sbb = sum(b * b for _, b, _ in rows)
    sab = sum(a * b for a, b, _ in rows)
    say = sum(a * y for a, _, y in rows)
    sby = sum(b * y for _, b, y in rows)
    with_b = sbb > 1e-12 and saa * sbb - sab * sab > 1e-12 * max(1.0, saa * sbb)
    if saa <= 1e-12:
        return math.nan, math.inf
    if with_b:
        det = saa * sbb - sab * sab
        beta, gamma = (sbb * say - sab * sby) / det, (saa * sby - sab * say) / det
        inv_aa = sbb / det
    else:
        beta, gamma, inv_aa = say / saa, 0.0, 1.0 / saa
    dof = len(rows) - len(rounds) - (2 if with_b else 1)
    if dof < 1:
        return beta, math.inf
    rss = sum((y - beta * a - gamma * b) ** 2 for a, b, y in rows)
    return beta, math.sqrt(rss / dof * inv_aa)


def slowdown_estimates(points: Sequence[Dict[str, Any]], cores: int) -> Dict[str, tuple]:
    """(beta ~ log(1 + s), standard error) of the shared-core slowdown on each curve calibrate fits."""
    if cores < 2:
        return {}
    return {name: _slowdown_of_curve(curve, cores) for name, curve in _curve_points(points, cores).items()}


def slowdown_standard_error(points: Sequence[Dict[str, Any]], cores: int) -> Dict[str, float]:
    """The standard error of the shared-core slowdown (log units) on each curve calibrate fits."""
    return {name: se for name, (_, se) in slowdown_estimates(points, cores).items()}


def run_probe(dataset: Any, out_path: Optional[str] = None, collate_fn: Optional[Callable] = None,
              cores: Optional[int] = None, max_workers: Optional[int] = None, batch_size: int = 8,
              prefetch_factor: int = 2, samples: int = 512, seconds_per_point: float = 2.0,
              warmup_s: float = 0.5, rounds: int = 2, max_total_s: float = 90.0, seed: int = 0,
              source: str = "", warmup_pass_s: float = 3.0, wake_sleep_s: float = 0.02,
              wake_every: int = 4, precision_target_se: float = 0.04, precision_pairs: int = 4,
              inline_point: bool = True) -> Dict[str, Any]:
    """Measures the contention curve and returns (and writes, when out_path is given) the document."""
    n = len(dataset)
    if n <= 0:
        raise ValueError("the dataset is empty")
    cores = cores or len(os.sched_getaffinity(0))
    max_workers = max_workers or 2 * cores
    rng = random.Random(seed)  # the probe's own generator: the user's random state is untouched
    indices = rng.sample(range(n), min(samples, n))
    # Long enough never to run out within a point: the loader stops at len(items).
    items = _TimedItems(dataset, indices, length=10**9)
    collate = _TimedCollate(collate_fn)
    ks = list(range(1, max_workers + 1))
    order: List[int] = []
    for r in range(rounds):
        order += ks if r % 2 == 0 else ks[::-1]
    t_probe = time.perf_counter()
    if warmup_pass_s > 0:
        # One unrecorded point at k = cores first: the host's first-use costs (page cache, codec and
        # allocator initialisation in fresh processes) otherwise land on round 0's first points (a quiet
        # run measured 282 samples/s for 2 workers in round 0 against 380 in round 1).
        _measure_point(items, collate, min(cores, max_workers), batch_size, prefetch_factor, 0.0, warmup_pass_s)
    baseline = _baseline_wake_delay(wake_sleep_s, 25) if wake_sleep_s > 0 else None
    t_begin = time.perf_counter()  # max_total_s bounds the rounds; the warm-up pass is bounded by its own time
    points: List[Dict[str, Any]] = []
    skipped: List[int] = []
    # The longest a point has taken so far, start-up of its workers included (a point of 3 s took 4-5 s
    # on the 2-core VM): the budget checks use it, so the pairs cannot eat the inline point's time.
    longest_point_s = seconds_per_point + warmup_s

    def measure(k: int) -> bool:
        nonlocal longest_point_s
        t_point = time.perf_counter()
        if t_point - t_begin + longest_point_s > max_total_s:
            return False
        p = _measure_point(items, collate, k, batch_size, prefetch_factor, warmup_s, seconds_per_point, wake_sleep_s,
                           wake_every)
        p["round"] = sum(1 for q in points if q["workers"] == k)
        points.append(p)
        longest_point_s = max(longest_point_s, time.perf_counter() - t_point)
        return True

    for k in order:
        if not measure(k):
            skipped.append(k)
    # Precision pairs: (1, C), (C, 1), ... each pair its own round (one level, one contrast), until the
    # slowdown's standard error on both curves is within the target, the pairs or the time run out.
    ran = list(order)
    pairs_run = 0
    # The inline point's longest time: its warm-up (a pass over the items, _measure_inline) and window.
    inline_room_s = warmup_s + 3 * seconds_per_point if inline_point else 0.0
    after_rounds = final = slowdown_standard_error(points, cores)
    pair_k = min(cores, max_workers)
    while (pair_k >= 2 and not skipped and pairs_run < precision_pairs
           and max(final.values(), default=0.0) > precision_target_se):
        pair = [1, pair_k] if pairs_run % 2 == 0 else [pair_k, 1]
        # the pairs leave room for the inline point after them
        if time.perf_counter() - t_begin + 2 * longest_point_s + inline_room_s > max_total_s:
            break
        for k in pair:
            measure(k)
        ran += pair
        pairs_run += 1
        final = slowdown_standard_error(points, cores)
    inline = None
    inline_skipped = None
    if inline_point and time.perf_counter() - t_begin + inline_room_s <= max_total_s:
        inline = _measure_inline(items, collate, batch_size, warmup_s, seconds_per_point)
    elif inline_point:
        inline_skipped = (f"max_total_s ({max_total_s:g} s) ran out before the inline point: calibrate then assumes "
                          "inline loading churns like the workers (cpu.inline_page_fault_ratio 1)")
    doc = {
        "schema": SCHEMA,
        "host": {"cores": cores, "cpu_model": _cpu_model(), "platform": platform.platform(),
                 "python": platform.python_version()},
        "dataset": {"source": source or type(dataset).__name__, "len": n, "sampled_indices": len(indices),
                    "seed": seed},
        "loader": {"batch_size": batch_size, "prefetch_factor": prefetch_factor,
                   "collate": getattr(collate_fn, "__name__", "default_collate") if collate_fn else "default_collate"},
        "method": {"seconds_per_point": seconds_per_point, "warmup_s": warmup_s, "rounds": rounds,
                   "max_total_s": max_total_s, "order": ran, "warmup_pass_s": warmup_pass_s,
                   "wake_sleep_s": wake_sleep_s, "wake_every": wake_every,
                   "precision_target_se": precision_target_se, "precision_pairs": precision_pairs},
        "precision": {"pairs_run": pairs_run,
                      "met": bool(final) and max(final.values()) <= precision_target_se,
                      "slowdown_se": {name: _finite_or_none(v) for name, v in final.items()},
                      "slowdown_se_after_rounds": {name: _finite_or_none(v) for name, v in after_rounds.items()}},
        "points": points,
        **({"inline": inline} if inline else {}),
        **({"inline_skipped": inline_skipped} if inline_skipped else {}),
        "skipped_points": skipped,
        **({"baseline_wake": baseline} if baseline else {}),
        "total_s": time.perf_counter() - t_probe,
        "created_unix_s": int(time.time()),
    }
    try:
        import torch
        doc["host"]["torch"] = torch.__version__
        doc["host"]["torch_threads"] = torch.get_num_threads()
    except Exception:  # pragma: no cover - torch is required by the DataLoader above
        pass
    if out_path:
        _write_atomically(out_path, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return doc


def _finite_or_none(x: float) -> Optional[float]:
    return x if math.isfinite(x) else None


def _cpu_model() -> str:
    return procfs.cpu_model() or platform.processor()


def _load_factory(spec: str, args_json: str) -> Any:
    mod, _, attr = spec.partition(":")
    if not mod or not attr:
        raise ValueError(f"--dataset: expected MODULE:CALLABLE, found {spec!r}")
    fn = getattr(importlib.import_module(mod), attr)
    kwargs = json.loads(args_json) if args_json else {}
    if not isinstance(kwargs, dict):
        raise ValueError(f"--dataset-kwargs: expected a JSON object, found {args_json!r}")
    return fn(**kwargs)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m simreplay_capture.probe_cpu", description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--dataset", help="MODULE:CALLABLE returning the map-style Dataset to probe")
    src.add_argument("--bench-data", help="a bench dataset directory (simreplay_capture.bench make-dataset)")
    ap.add_argument("--dataset-kwargs", default="", help="JSON object of keyword arguments for --dataset")
    ap.add_argument("--collate", default="", help="MODULE:CALLABLE collate_fn (default: torch's default_collate)")
    ap.add_argument("--format", default="files", help="bench dataset format")
    ap.add_argument("--image-size", type=int, default=96)
    ap.add_argument("--frames", type=int, default=4)
    ap.add_argument("--out", default="probe-cpu.json")
    ap.add_argument("--cores", type=int, default=0, help="cores to assume (default: this process's CPU affinity)")
    ap.add_argument("--max-workers", type=int, default=0, help="largest k (default 2 x cores)")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--prefetch-factor", type=int, default=2)
    ap.add_argument("--samples", type=int, default=512,
                    help="distinct indices replayed (cycled; all of them when the dataset is smaller)")
    ap.add_argument("--seconds-per-point", type=float, default=2.0)
    ap.add_argument("--warmup-s", type=float, default=0.5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--warmup-pass-s", type=float, default=3.0,
                    help="an unrecorded point at k = cores before the rounds (0: none)")
    ap.add_argument("--max-total-s", type=float, default=90.0)
    ap.add_argument("--precision-target-se", type=float, default=0.04,
                    help="after the rounds, measure pairs of k = 1 and k = cores while the shared-core "
                         "slowdown's standard error exceeds this (log units)")
    ap.add_argument("--precision-pairs", type=int, default=4, help="at most this many such pairs (0: none)")
    ap.add_argument("--wake-sleep-s", type=float, default=0.02,
                    help="the main loop sleeps this long after every --wake-every-th batch and records its "
                         "wake-up delay (0: not measured)")
    ap.add_argument("--wake-every", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-inline-point", dest="inline_point", action="store_false",
                    help="skip the final inline point (the main process loading itself, num_workers=0)")
    a = ap.parse_args(argv)
    for name in ("batch_size", "prefetch_factor", "samples", "rounds", "wake_every"):
        if getattr(a, name) < 1:
            print(f"probe_cpu: --{name.replace('_', '-')} must be >= 1, found {getattr(a, name)}", file=sys.stderr)
            return 3
    if (a.seconds_per_point <= 0 or a.max_total_s <= 0 or a.warmup_s < 0 or a.warmup_pass_s < 0 or a.cores < 0
            or a.max_workers < 0 or a.wake_sleep_s < 0 or a.precision_target_se < 0 or a.precision_pairs < 0):
        print("probe_cpu: times must be positive and --cores/--max-workers >= 0", file=sys.stderr)
        return 3
    collate = None
    try:
        if a.bench_data:
            from .bench.pipeline import BenchDataset, multimodal_collate
            ds = BenchDataset(a.bench_data, a.format, a.image_size, a.frames)
            collate = multimodal_collate
            source = f"bench {a.bench_data} ({a.format}, S={a.image_size}, {a.frames} frames)"
        else:
            ds = _load_factory(a.dataset, a.dataset_kwargs)
            source = a.dataset
        if a.collate:
            mod, _, attr = a.collate.partition(":")
            collate = getattr(importlib.import_module(mod), attr)
    except (ValueError, ImportError, AttributeError, OSError, json.JSONDecodeError) as e:
        print(f"probe_cpu: {e}", file=sys.stderr)
        return 3
    doc = run_probe(ds, a.out, collate_fn=collate, cores=a.cores or None, max_workers=a.max_workers or None,
                    batch_size=a.batch_size, prefetch_factor=a.prefetch_factor, samples=a.samples,
                    seconds_per_point=a.seconds_per_point, warmup_s=a.warmup_s, rounds=a.rounds,
                    max_total_s=a.max_total_s, seed=a.seed, source=source,
                    warmup_pass_s=a.warmup_pass_s, wake_sleep_s=a.wake_sleep_s, wake_every=a.wake_every,
                    precision_target_se=a.precision_target_se, precision_pairs=a.precision_pairs,
                    inline_point=a.inline_point)
    for p in doc["points"]:
        print(f"k={p['workers']}: {p['throughput_samples_per_s']:.1f} samples/s, getitem cpu "
              f"{p['getitem_cpu_s_mean'] * 1e3:.2f} ms wall {p['getitem_wall_s_mean'] * 1e3:.2f} ms, "
              f"{p.get('minflt_per_sample_mean', float('nan')):.0f} page faults, "
              f"wake-up delay {p.get('wake_delay_s_mean', float('nan')) * 1e3:.2f} ms, load {p['loadavg_1m'][0]:.2f}")
    if "inline" in doc:
        p = doc["inline"]
        print(f"inline: {p['throughput_samples_per_s']:.1f} samples/s, getitem cpu {p['getitem_cpu_s_mean'] * 1e3:.2f} ms, "
              f"{p.get('minflt_per_sample_mean', float('nan')):.0f} page faults")
    if "inline_skipped" in doc:
        print(f"probe_cpu: warning: {doc['inline_skipped']}", file=sys.stderr)
    prec = doc["precision"]
    se = ", ".join(f"{k} {v:.3f}" if v is not None else f"{k} unknown" for k, v in prec["slowdown_se"].items())
    print(f"probe_cpu: slowdown standard error {se or 'not applicable'} (target {a.precision_target_se}; "
          f"{prec['pairs_run']} precision pair(s){'' if prec['met'] else ', target not met'})")
    print(f"probe_cpu: {len(doc['points'])} points in {doc['total_s']:.1f} s -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
