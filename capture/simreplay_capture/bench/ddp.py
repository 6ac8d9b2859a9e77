"""`bench ddp`: the bench pipeline as one rank of a DistributedDataParallel job (run it under torchrun).

Per rank: the real image/video DataLoader over a DistributedSampler shard; a step made of
1. emulated accelerator compute (a sleep of --step-time-s; --straggler-rank R adds --straggler-extra-s
   on rank R), marked as compute in the trace, and
2. a real forward/backward of a small real model whose gradient size is set by --grad-mb, wrapped in
   DistributedDataParallel (gradient buckets of --bucket-cap-mb, all-reduced by gloo, or nccl on CUDA),
   then an SGD step.
Capture: Recorder + DistributedCapture (collectives from the DDP communication hook). Rank 0 writes the
summary (--summary-json) with the global throughput and every rank's numbers.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from typing import Any, Dict, List, Optional

import torch

from .. import procfs
from .pipeline import BenchDataset, multimodal_collate
from .run import _MemPeak, _NoCapture, _stats, _StepTimes

WIDTH = 1024
IN_FEATURES = 3 * 16 * 16


class GradModel(torch.nn.Module):
    """Batch-mean pooled pixels -> Linear(768, W) -> L x Linear(W, W) -> Linear(W, 10), ReLU between; L is chosen
    so that the parameters (= the gradient all-reduced per step) come closest to the requested bytes."""

    def __init__(self, grad_bytes: int) -> None:
        super().__init__()
        fixed = IN_FEATURES * WIDTH + WIDTH + WIDTH * 10 + 10
        per_layer = WIDTH * WIDTH + WIDTH
        hidden = max(0, round((grad_bytes / 4 - fixed) / per_layer))
        layers: List[torch.nn.Module] = [torch.nn.Linear(IN_FEATURES, WIDTH), torch.nn.ReLU()]
        for _ in range(hidden):
            layers += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU()]
        layers.append(torch.nn.Linear(WIDTH, 10))
        self.net = torch.nn.Sequential(*layers)
        self.hidden_layers = hidden

    def forward(self, batch: Dict[str, Any]) -> torch.Tensor:
        imgs, vids = batch["images"], batch["videos"]
        x = imgs
        if vids.numel():
            x = torch.cat([imgs, vids.flatten(0, 1)]) if imgs.numel() else vids.flatten(0, 1)
        # one row, the batch mean of the pooled pixels: the step's CPU cost stays a few ms on these 2
        # cores while the gradients keep their full size
        feats = torch.nn.functional.adaptive_avg_pool2d(x, (16, 16)).flatten(1).mean(0, keepdim=True)
        return self.net(feats)

    @property
    def grad_bytes(self) -> int:
        return sum(p.numel() * p.element_size() for p in self.parameters())


def add_parser(sub: Any) -> argparse.ArgumentParser:
    r = sub.add_parser("ddp", help="one DDP rank of the bench (under torchrun): real loader + gloo all-reduce")
    r.add_argument("--data", required=True)
    r.add_argument("--format", default="files", choices=["files", "tar", "lmdb", "hdf5"])
    r.add_argument("--trace", help="trace path; .rank<R> is inserted per rank")
    r.add_argument("--no-capture", action="store_true")
    r.add_argument("--workers", type=int, default=1)
    r.add_argument("--batch-size", type=int, default=8)
    r.add_argument("--prefetch-factor", type=int, default=2)
    r.add_argument("--steps", type=int, default=30, help="steps per rank")
    r.add_argument("--warmup-steps", type=int, default=5)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--step-time-s", type=float, default=0.05, help="emulated accelerator compute per step")
    r.add_argument("--step-dist", default="constant", choices=["constant", "normal", "lognormal"])
    r.add_argument("--step-cv", type=float, default=0.0)
    r.add_argument("--image-size", type=int, default=96)
    r.add_argument("--frames", type=int, default=4)
    r.add_argument("--grad-mb", type=float, default=16.0, help="gradient size of the model, MiB")
    r.add_argument("--bucket-cap-mb", type=float, default=25.0, help="DDP bucket_cap_mb")
    r.add_argument("--straggler-rank", type=int, default=-1, help="rank whose compute is slowed")
    r.add_argument("--straggler-extra-s", type=float, default=0.0, help="extra compute per step on it")
    r.add_argument("--backend", default="auto", choices=["auto", "gloo", "nccl"])
    r.add_argument("--summary-json", help="written by rank 0")
    return r


def run_ddp(args: argparse.Namespace) -> Dict[str, Any]:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    if not args.no_capture and not args.trace:
        raise SystemExit("ddp: --trace is required unless --no-capture")
    backend = args.backend
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() and dist.is_nccl_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend)
    torch.set_num_threads(1)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)  # same initial weights on every rank (DDP also broadcasts them)
    device = torch.device("cuda") if backend == "nccl" else torch.device("cpu")
    extra_s = args.straggler_extra_s if rank == args.straggler_rank else 0.0
    steptimes = _StepTimes(args.step_time_s, args.step_dist, args.step_cv, args.seed + rank)
    model = GradModel(int(args.grad_mb * (1 << 20))).to(device)
    notes = {"bench": "simreplay_capture.bench ddp", "format": args.format, "image_size": args.image_size,
             "frames": args.frames, "step_time_s": args.step_time_s, "step_dist": args.step_dist,
             "step_cv": args.step_cv, "grad_bytes": model.grad_bytes, "hidden_layers": model.hidden_layers,
             "bucket_cap_mb": args.bucket_cap_mb, "straggler_rank": args.straggler_rank,
             "straggler_extra_s": args.straggler_extra_s, "backend": backend,
             "step": "emulated compute (sleep) + real DDP forward/backward of GradModel + SGD step"}
    mem = _MemPeak()
    mem.start()
    if args.no_capture:
        rec: Any = _NoCapture()
        dc: Any = None
    else:
        from ..distributed import DistributedCapture
        from ..recorder import Recorder
        rec = Recorder(args.trace, seed=args.seed, notes=notes, data_path=args.data)
        dc = DistributedCapture(rec)
    ddp = DDP(model, bucket_cap_mb=args.bucket_cap_mb)
    if dc is not None:
        dc.attach_ddp(ddp)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-4)
    base = BenchDataset(args.data, args.format, args.image_size, args.frames)
    ds = rec.wrap_dataset(base)
    sampler = torch.utils.data.distributed.DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True,
                                                              seed=args.seed, drop_last=True)
    kw: Dict[str, Any] = dict(batch_size=args.batch_size, sampler=sampler, num_workers=args.workers,
                              collate_fn=multimodal_collate, drop_last=True)
    if args.workers > 0:
        kw["prefetch_factor"] = args.prefetch_factor
    loader = rec.wrap_loader(torch.utils.data.DataLoader(ds, **kw))
    if len(loader) == 0:
        raise SystemExit("ddp: the dataset shard holds less than one batch per rank")
    waits: List[float] = []
    steps: List[float] = []
    comms: List[float] = []
    computes: List[float] = []
    intervals: List[float] = []  # between consecutive step ends: wait + step, the simulator's step_time_s
    t_prev_end: Optional[float] = None
    n = samples_after = epoch = 0
    t_warm: Optional[float] = None
    t_start = time.perf_counter()
    t_first: Optional[float] = None
    with rec:
        while n < args.steps:
            sampler.set_epoch(epoch)
            it = iter(loader)
            while n < args.steps:
                t0 = time.perf_counter()
                try:
                    batch = next(it)
                except StopIteration:
                    break
                t1 = time.perf_counter()
                t_first = t_first if t_first is not None else t1 - t_start
                if n == args.warmup_steps:
                    t_warm = t0
                batch = {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in batch.items()}
                ctx = dc.step() if dc is not None else rec.step()
                with ctx:
                    with (dc.compute() if dc is not None else _NoCapture()):
                        time.sleep(steptimes.next() + extra_s)
                    loss = ddp(batch).float().pow(2).mean()
                    loss.backward()  # DDP all-reduces the gradient buckets (overlapping backward)
                    opt.step()
                    opt.zero_grad(set_to_none=True)
                    if device.type == "cuda":
                        torch.cuda.synchronize()
                t2 = time.perf_counter()
                if n >= args.warmup_steps and t_prev_end is not None:
                    intervals.append(t2 - t_prev_end)
                t_prev_end = t2
                if n >= args.warmup_steps:
                    samples_after += int(batch["index"].numel())
                    waits.append(t1 - t0)
                    steps.append(t2 - t1)
                    # exposed communication of the step (0 without capture: not measured)
                    c = ctx.inner.comm_ns / 1e9 if dc is not None else 0.0
                    comms.append(c)
                    computes.append(t2 - t1 - c)
                n += 1
            del it
            epoch += 1
        t_end = time.perf_counter()
        if dc is not None:
            dc.close()
    peak = max(mem.stop(), getattr(rec, "mem_peak_bytes", 0) or 0)
    wall = (t_end - t_warm) if t_warm is not None else 0.0
    # DDP's invariant, checked by the validation suite: every rank ends with the same parameters.
    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.detach().cpu().contiguous().numpy().tobytes())
    mine = {"rank": rank, "samples": samples_after, "wall_s": wall,
            "throughput_samples_per_s": samples_after / wall if wall > 0 else 0.0,
            "data_wait_s": _stats(waits), "step_time_s": _stats(steps), "collective_time_s": _stats(comms),
            "step_interval_s": _stats(intervals),
            "gpu_idle_fraction": max(0.0, 1 - sum(computes) / wall) if wall > 0 else None,
            "time_to_first_batch_s": t_first, "peak_host_memory_bytes": peak,
            "trace": None if args.no_capture else rec.path, "straggler": rank == args.straggler_rank,
            "steps": n, "param_sha256": digest.hexdigest()}
    everyone: List[Any] = [None] * world
    dist.all_gather_object(everyone, mine)
    # no destroy_process_group(): the process leaves with os._exit (main_ddp), see the note there
    walls = [e["wall_s"] for e in everyone]
    total = sum(e["samples"] for e in everyone)
    summary = dict(mine)
    summary.update({
        "kind": "train", "world_size": world, "backend": backend,
        "throughput_samples_per_s": total / max(walls) if max(walls) > 0 else 0.0,
        "samples": total, "wall_s": max(walls), "batches": max(0, args.steps - args.warmup_steps),
        "warmup_steps_excluded": args.warmup_steps, "ranks": everyone,
        "gpu_idle_fraction": sum(e["gpu_idle_fraction"] or 0.0 for e in everyone) / world,
        "accelerator": "cuda" if device.type == "cuda" else "emulated",
        "pipeline_note": f"emulated accelerator step ({args.step_dist}, mean {args.step_time_s}s) + real "
                         f"DDP all-reduce of {model.grad_bytes} gradient bytes over {backend}",
        "grad_bytes": model.grad_bytes, "capture": not args.no_capture,
        "config": {k: v for k, v in vars(args).items() if k != "func"},
    })
    return summary


def main_ddp(args: argparse.Namespace) -> int:
    s = run_ddp(args)
    if s["rank"] == 0:
        st, c = s["step_time_s"], s["collective_time_s"]
        print(f"ddp x{s['world_size']}: {s['samples']} samples in {s['wall_s']:.2f}s -> "
              f"{s['throughput_samples_per_s']:.1f} samples/s; step mean {st['mean'] * 1e3:.1f} ms, "
              f"collective mean {c['mean'] * 1e3:.1f} ms, GPU idle {s['gpu_idle_fraction']:.1%} "
              f"({s['accelerator']}); grad {s['grad_bytes'] / 2**20:.1f} MiB")
        if args.summary_json:
            tmp = args.summary_json + ".tmp"
            with open(tmp, "w") as f:
                json.dump(s, f, indent=1, sort_keys=True)
            os.replace(tmp, args.summary_json)
    # torch 1.13 + gloo: interpreter teardown can deadlock when the DDP reducer's last reference drops
    # (~ProcessGroupGloo holds its work mutex while a gloo thread waits for the GIL to run a future
    # callback; seen with 4 ranks, gdb backtrace in docs/distributed.md). Everything is written and
    # closed here, so leave without teardown.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
