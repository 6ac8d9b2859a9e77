"""`bench run`: the real multimodal pipeline with every DataLoader knob, capture on or off."""
from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
from typing import Any, Dict, List, Optional

import torch

from .. import procfs
from .pipeline import BenchDataset, multimodal_collate


class _NoCapture:
    """Same surface as Recorder for --no-capture runs."""

    def __enter__(self) -> "_NoCapture":
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False

    def wrap_dataset(self, ds: Any, *a: Any) -> Any:
        return ds

    def wrap_loader(self, loader: Any) -> Any:
        return loader

    def step(self, **kw: Any) -> "_NoCapture":
        return self

    def to_device(self, batch: Any, device: Any, non_blocking: bool = True) -> Any:
        return _move(batch, device)


def _move(b: Any, device: Any) -> Any:
    if isinstance(b, torch.Tensor):
        return b.to(device, non_blocking=True)
    if isinstance(b, dict):
        return {k: _move(v, device) for k, v in b.items()}
    return b


class _MemPeak(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = 0
        self._stop_ev = threading.Event()

    def run(self) -> None:
        while True:
            self.peak = max(self.peak, procfs.host_sample()[0])
            if self._stop_ev.wait(0.5):
                return

    def stop(self) -> int:
        self._stop_ev.set()
        self.join()
        self.peak = max(self.peak, procfs.host_sample()[0])
        return self.peak


class _StepTimes:
    """Emulated accelerator step durations from their own seeded generator (never the global RNG)."""

    def __init__(self, mean_s: float, dist: str, cv: float, seed: int) -> None:
        import random
        self.mean, self.dist, self.cv = mean_s, dist, cv
        self.rng = random.Random(seed ^ 0x5EED)

    def next(self) -> float:
        if self.mean <= 0:
            return 0.0
        if self.dist == "constant" or self.cv <= 0:
            return self.mean
        if self.dist == "normal":
            return max(0.0, self.rng.gauss(self.mean, self.cv * self.mean))
        s2 = math.log(1 + self.cv ** 2)
        return self.rng.lognormvariate(math.log(self.mean) - s2 / 2, math.sqrt(s2))


def _stats(xs: List[float]) -> Dict[str, float]:
    if not xs:
        return {"mean": 0.0, "p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0}
    s = sorted(xs)

    def q(p: float) -> float:
        return s[min(len(s) - 1, int(round(p * (len(s) - 1))))]
    return {"mean": sum(s) / len(s), "p50": q(0.5), "p95": q(0.95), "p99": q(0.99), "max": s[-1]}


def build_loader(args: Any, ds: Any) -> torch.utils.data.DataLoader:
    g = torch.Generator()
    g.manual_seed(args.seed)
    kw: Dict[str, Any] = dict(batch_size=args.batch_size, shuffle=args.shuffle, drop_last=args.drop_last,
                              num_workers=args.workers, pin_memory=args.pin_memory,
                              collate_fn=multimodal_collate, generator=g)
    if args.workers > 0:
        kw.update(prefetch_factor=args.prefetch_factor, persistent_workers=args.persistent_workers)
    return torch.utils.data.DataLoader(ds, **kw)


def _model_step(model: Any, opt: Any, batch: Dict[str, Any], sync: bool) -> None:
    imgs, vids = batch["images"], batch["videos"]
    x = imgs
    if vids.numel():
        x = torch.cat([imgs, vids.flatten(0, 1)]) if imgs.numel() else vids.flatten(0, 1)
    y = torch.zeros(x.shape[0], dtype=torch.long, device=x.device)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    if sync:
        opt.step()
        opt.zero_grad(set_to_none=True)


def run(args: Any) -> Dict[str, Any]:
    torch.manual_seed(args.seed)
    import random
    random.seed(args.seed)
    cuda = torch.cuda.is_available() and not args.pipeline_only and not args.emulate
    device = torch.device("cuda") if cuda else torch.device("cpu")
    model = opt = None
    if cuda:
        import torchvision
        model = torchvision.models.resnet18(num_classes=10).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
    steptimes = _StepTimes(args.step_time_s, args.step_dist, args.step_cv, args.seed)
    mem = _MemPeak()
    mem.start()
    notes = {"bench": "simreplay_capture.bench", "format": args.format, "image_size": args.image_size,
             "frames": args.frames, "step_time_s": args.step_time_s, "step_dist": args.step_dist,
             "step_cv": args.step_cv, "grad_accum": args.grad_accum, "pipeline_only": args.pipeline_only,
             "model": "resnet18" if cuda else None}
    if args.no_capture:
        rec: Any = _NoCapture()
    else:
        from ..recorder import Recorder
        rec = Recorder(args.trace, seed=args.seed, notes=notes, data_path=args.data)
    if getattr(args, "stream", False):
        from .pipeline import bench_stream
        base = bench_stream(args.data, args.image_size, args.frames)
        args.shuffle = False  # an IterableDataset: the order is the shards' (each worker streams its own)
    else:
        base = BenchDataset(args.data, args.format, args.image_size, args.frames)
    ds = rec.wrap_dataset(base)
    loader = rec.wrap_loader(build_loader(args, ds))
    per_epoch = len(loader)
    total = args.steps if args.steps else per_epoch * args.epochs
    waits: List[float] = []
    steps: List[float] = []
    compute_s = 0.0
    n = 0
    samples_after = 0
    t_start = time.perf_counter()
    t_first: Optional[float] = None
    t_warm: Optional[float] = None
    cpu_warm = cpu_end = 0
    ga = max(1, args.grad_accum)
    with rec:
        while n < total:
            it = iter(loader)
            while n < total:
                t0 = time.perf_counter()
                try:
                    batch = next(it)
                except StopIteration:
                    break
                t1 = time.perf_counter()
                if t_first is None:
                    t_first = t1 - t_start
                if n == args.warmup_steps:
                    t_warm = t0
                    cpu_warm = procfs.tree_cpu_ns(os.getpid())
                bsz = int(batch["index"].numel())
                if n >= args.warmup_steps:
                    samples_after += bsz
                    waits.append(t1 - t0)
                if not args.pipeline_only:
                    mb = n % ga
                    if cuda:
                        b = rec.to_device(batch, device)
                        with rec.step(micro_batches=ga, micro_batch=mb, optimizer_step=mb == ga - 1):
                            _model_step(model, opt, b, mb == ga - 1)
                        # step time on the GPU: measured by capture (CUDA events); here wall for summary
                        ts = time.perf_counter() - t1
                    else:
                        d = steptimes.next()
                        with rec.step(micro_batches=ga, micro_batch=mb, optimizer_step=mb == ga - 1):
                            time.sleep(d)
                        ts = time.perf_counter() - t1
                    if n >= args.warmup_steps:
                        steps.append(ts)
                        compute_s += ts
                n += 1
            del it
        if cuda:
            torch.cuda.synchronize()
        t_end = time.perf_counter()
        # CPU of this process and its live workers over the timed window (persistent workers are
        # still alive here; non-persistent ones of earlier epochs are not counted)
        cpu_end = procfs.tree_cpu_ns(os.getpid())
    # Leaving `with rec` ran Recorder.close() (flush, worker records, footer): the capture's full cost
    # ends here, so the overhead benchmark times through this point.
    t_closed = time.perf_counter()
    peak = max(mem.stop(), getattr(rec, "mem_peak_bytes", 0) or 0)
    wall = (t_end - t_warm) if t_warm is not None else 0.0
    thr = samples_after / wall if wall > 0 else 0.0
    summary = {
        "samples": samples_after, "batches": max(0, n - args.warmup_steps), "wall_s": wall,
        "warmup_steps_excluded": args.warmup_steps,
        "throughput_samples_per_s": thr,
        "wall_through_close_s": (t_closed - t_warm) if t_warm is not None else 0.0,
        "throughput_through_close_samples_per_s": (samples_after / (t_closed - t_warm)
                                                   if t_warm is not None and t_closed > t_warm else 0.0),
        "kind": "pipeline" if args.pipeline_only else "train",
        "pipeline_note": ("pure data pipeline: no step" if args.pipeline_only else
                          ("real resnet18 step on CUDA" if cuda else
                           f"emulated accelerator step ({args.step_dist}, mean {args.step_time_s}s)")),
        "accelerator": "cuda" if cuda else ("none" if args.pipeline_only else "emulated"),
        "data_wait_s": _stats(waits), "step_time_s": _stats(steps),
        "gpu_idle_fraction": (max(0.0, 1 - compute_s / wall) if wall > 0 and not args.pipeline_only
                              else None),
        "time_to_first_batch_s": t_first,
        "window_cpu_s": (cpu_end - cpu_warm) / 1e9 if t_warm is not None else None,
        "cpu_s_per_sample": ((cpu_end - cpu_warm) / 1e9 / samples_after) if samples_after else None, "peak_host_memory_bytes": peak,
        "capture": not args.no_capture, "trace": None if args.no_capture else rec.path,
        "config": {k: v for k, v in vars(args).items() if k != "func"},
    }
    return summary


def main_run(args: Any) -> int:
    if not args.no_capture and not args.trace:
        raise SystemExit("run: --trace is required unless --no-capture")
    try:
        s = run(args)
    except OSError as e:
        from .dataset import is_url
        if not is_url(args.data):
            raise
        # a read over HTTP failed (unreachable, cut short, a missing shard): one line; the capture was
        # closed on the way out and keeps every sample recorded before it (docs/remote-storage.md)
        from ..remote import error_line
        msg = error_line(e)
        print(f"run: {msg if msg.startswith(args.data) else args.data + ': ' + msg}", file=sys.stderr)
        return 1
    w = s["data_wait_s"]
    idle = s["gpu_idle_fraction"]
    print(f"{s['kind']}: {s['samples']} samples in {s['wall_s']:.2f}s after {args.warmup_steps} warm-up "
          f"steps -> {s['throughput_samples_per_s']:.1f} samples/s; wait mean {w['mean'] * 1e3:.1f} ms "
          f"p95 {w['p95'] * 1e3:.1f} ms; "
          + (f"GPU idle {idle:.1%} ({s['accelerator']}); " if idle is not None else "")
          + f"first batch {s['time_to_first_batch_s']:.2f}s; peak host mem "
          f"{s['peak_host_memory_bytes'] / 2**20:.0f} MiB"
          + (f"; trace {s['trace']}" if s["trace"] else ""))
    if args.summary_json:
        with open(args.summary_json, "w") as f:
            json.dump(s, f, indent=1, sort_keys=True)
    return 0
