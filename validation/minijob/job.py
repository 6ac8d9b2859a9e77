#!/usr/bin/env python3
"""A miniature training job, run for real (docs/planning.md, "Checked against real jobs").

Real: a torch DataLoader over the capture package's bench dataset (its files on disk, decoded and
augmented by simreplay_capture.bench.pipeline), evaluation pauses, and checkpoints written as a real
job writes them (torch.save of a state of --state-bytes to a temporary file, fsync, os.rename, fsync of
the directory). Emulated: the accelerator step is a sleep of --step-s (no GPU), and so is the
evaluation pass (--eval-s); both are labelled `emulated` in the events.

On start the job resumes from the last checkpoint in --ckpt-dir, if any: its optimizer-step count and
data position (epoch, batch within the epoch; the epoch's order is a permutation seeded by
--seed + epoch, so the resumed run reads exactly the batches the lost one would have). After step n it
evaluates when n % --eval-every == 0 and then saves when n % --ckpt-every == 0 or n is the last step.

Events go to --events (JSON lines, appended and flushed at once so that a SIGKILL loses none that
happened): {"event", "t" (time.time()), ...}: start (process up, imports done), resumed (step, load_s),
loader_ready, first_batch (step), step (n, t0: the step's start, t: its end) unless --no-step-events,
eval (n, dur_s), ckpt (n, dur_s, bytes), done (n).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Dict, Iterator, List

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "capture"))
from simreplay_capture.bench.pipeline import BenchDataset, multimodal_collate  # noqa: E402

CKPT = "ckpt.pt"


class Events:
    def __init__(self, path: str) -> None:
        self.f = open(path, "a")

    def emit(self, event: str, **kw: Any) -> None:
        self.f.write(json.dumps(dict(event=event, t=time.time(), pid=os.getpid(), **kw)) + "\n")
        self.f.flush()


class EpochOrder(torch.utils.data.Sampler):
    """The sample order of one epoch (a permutation seeded by seed + epoch), from batch `start_batch` on:
    a resumed job continues the epoch where its checkpoint left it."""

    def __init__(self, n: int, seed: int, epoch: int, start_sample: int) -> None:
        g = torch.Generator()
        g.manual_seed(seed + epoch)
        self.order = torch.randperm(n, generator=g)[start_sample:].tolist()

    def __iter__(self) -> Iterator[int]:
        return iter(self.order)

    def __len__(self) -> int:
        return len(self.order)


def save_checkpoint(ckpt_dir: str, state: Dict[str, Any]) -> int:
    """Atomic and durable: write a temporary file, fsync it, rename it over the last one, fsync the
    directory (the rename itself must survive a crash). Returns the bytes written."""
    tmp = os.path.join(ckpt_dir, CKPT + ".tmp")
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
        size = f.tell()
    os.rename(tmp, os.path.join(ckpt_dir, CKPT))
    d = os.open(ckpt_dir, os.O_RDONLY)
    try:
        os.fsync(d)
    finally:
        os.close(d)
    return size


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="a bench dataset (simreplay_capture.bench make-dataset)")
    ap.add_argument("--ckpt-dir", required=True)
    ap.add_argument("--events", required=True)
    ap.add_argument("--steps", type=int, required=True, help="target optimizer steps of the whole job")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--prefetch-factor", type=int, default=2)
    ap.add_argument("--image-size", type=int, default=96)
    ap.add_argument("--frames", type=int, default=4)
    ap.add_argument("--step-s", type=float, default=0.08, help="emulated accelerator step (a sleep)")
    ap.add_argument("--eval-every", type=int, default=60)
    ap.add_argument("--eval-s", type=float, default=1.0, help="emulated evaluation pass (a sleep)")
    ap.add_argument("--ckpt-every", type=int, default=30)
    ap.add_argument("--state-bytes", type=int, default=32 << 20, help="size of the checkpointed state")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-step-events", action="store_true")
    a = ap.parse_args(argv)

    ev = Events(a.events)
    ev.emit("start")
    torch.manual_seed(a.seed)
    os.makedirs(a.ckpt_dir, exist_ok=True)
    step = 0
    # The model state: --state-bytes of float32 (its values do not matter, its size does).
    weights = torch.rand(max(1, a.state_bytes // 4), generator=torch.Generator().manual_seed(a.seed))
    path = os.path.join(a.ckpt_dir, CKPT)
    if os.path.exists(path):
        t0 = time.perf_counter()
        state = torch.load(path, weights_only=False)  # our own file; torch >= 2.6 defaults to True
        weights, step = state["weights"], int(state["step"])
        ev.emit("resumed", step=step, load_s=time.perf_counter() - t0, bytes=os.path.getsize(path))
    ds = BenchDataset(a.data, "files", a.image_size, a.frames)
    per_epoch = len(ds) // a.batch_size  # drop_last: every epoch has the same batches
    kw: Dict[str, Any] = dict(batch_size=a.batch_size, drop_last=True, num_workers=a.workers,
                              collate_fn=multimodal_collate)
    if a.workers > 0:
        kw["prefetch_factor"] = a.prefetch_factor
    first = True
    while step < a.steps:
        epoch, within = divmod(step, per_epoch)
        loader = torch.utils.data.DataLoader(ds, sampler=EpochOrder(len(ds), a.seed, epoch, within * a.batch_size),
                                             **kw)
        it = iter(loader)
        if first:
            ev.emit("loader_ready", step=step)
        for batch in it:
            t0 = time.time()
            if first:
                ev.emit("first_batch", step=step)
                first = False
            time.sleep(a.step_s)  # emulated accelerator step
            weights[step % weights.numel()] += float(batch["index"].sum())  # the state changes with the data
            step += 1
            if not a.no_step_events:
                ev.emit("step", n=step, t0=t0, emulated=True)
            if a.eval_every > 0 and step % a.eval_every == 0:
                te = time.perf_counter()
                time.sleep(a.eval_s)  # emulated evaluation pass
                ev.emit("eval", n=step, dur_s=time.perf_counter() - te, emulated=True)
            if step % a.ckpt_every == 0 or step == a.steps:
                tc = time.perf_counter()
                size = save_checkpoint(a.ckpt_dir, {"weights": weights, "step": step,
                                                    "epoch": step // per_epoch, "batch_in_epoch": step % per_epoch})
                ev.emit("ckpt", n=step, dur_s=time.perf_counter() - tc, bytes=size)
            if step >= a.steps or step % per_epoch == 0:
                break
        del it, loader
    ev.emit("done", n=step)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
