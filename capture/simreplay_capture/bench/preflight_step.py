"""The preflight's default step entry: the bench pipeline with a real small model.

`python3 -m simreplay_capture.preflight` uses it when `--step` is not given. Options (`--opt K=V`):
data (a `bench make-dataset` directory; built from opencv-doc media under DIR/entry when absent),
format (files|tar|lmdb|hdf5, default files), workers (2), batch_size (8), prefetch_factor (2),
image_size (64), frames (4), hidden (1024), lr (0.001), amp (1: fp16 autocast + GradScaler on CUDA),
eval_batches (2: the evaluation's fixed, unshuffled batches).

It offers every optional hook of the protocol except batch_at_sequence_length (images have no
sequence; the text entry, preflight_text_step, has one): evaluate (mean loss, accuracy and the first
batch's logits over `eval_batches` fixed batches, dropout off), set_precision (fp32, bf16, and fp16
with the GradScaler on CUDA), set_activation_checkpointing (torch.utils.checkpoint, non-reentrant,
around the convolutions) and the training configuration saved in every checkpoint.

The model is a small CNN (two strided convolutions, global average pool, a two-layer MLP head with
dropout) over the images and every clip frame of the multimodal batch; labels are `index mod 10`, so
the loss is a real function of the data. AdamW keeps optimizer state and a StepLR scheduler is extra
state, so a resume that forgets either shows. Under more than one rank the gradients are all-reduced
synchronously after backward (timed: that is `comm_s`) with a DistributedSampler.
"""
from __future__ import annotations

import os
import time
from typing import Any, Dict

import torch

from ..preflight_protocol import PreflightContext, PreflightJob
from .pipeline import BenchDataset, multimodal_collate


def prepare(opts: Dict[str, str], work_dir: str) -> Dict[str, str]:
    if "data" not in opts:
        from .dataset import make_dataset
        d = os.path.join(work_dir, "bench-data")
        fmt = opts.get("format", "files")
        if not os.path.exists(os.path.join(d, "dataset.json")):
            make_dataset(d, images=int(opts.get("images", 56)), videos=int(opts.get("videos", 8)),
                         formats=[fmt], frames=int(opts.get("frames", 4)), seed=0)
        opts["data"] = d
    return opts


class SmallNet(torch.nn.Module):
    def __init__(self, hidden: int, classes: int = 10) -> None:
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(32, 64, 3, stride=2, padding=1), torch.nn.ReLU())
        self.head = torch.nn.Sequential(
            torch.nn.Linear(64, hidden), torch.nn.ReLU(), torch.nn.Dropout(0.2),
            torch.nn.Linear(hidden, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, classes))
        self.checkpointing = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # mean over H, W instead of AdaptiveAvgPool2d: its CUDA backward has no deterministic kernel
        if self.checkpointing and torch.is_grad_enabled():
            import torch.utils.checkpoint as cp
            f = cp.checkpoint(self.features, x, use_reentrant=False)
        else:
            f = self.features(x)
        return self.head(f.mean(dim=(2, 3)))


def _inputs(batch: Dict[str, Any], device: Any) -> Any:
    imgs, vids = batch["images"], batch["videos"]
    idx, is_video = batch["index"], batch["is_video"]
    labels_img = (idx[~is_video] % 10)
    parts, labels = [], []
    if imgs.numel():
        parts.append(imgs)
        labels.append(labels_img)
    if vids.numel():
        k = vids.shape[1]
        parts.append(vids.flatten(0, 1))
        labels.append((idx[is_video] % 10).repeat_interleave(k))
    x = torch.cat(parts).to(device, non_blocking=True)
    y = torch.cat(labels).to(device, non_blocking=True)
    return x, y


def build(ctx: PreflightContext) -> PreflightJob:
    o = ctx.opts
    if "data" not in o:
        o = prepare(dict(o), ctx.work_dir)
    cuda = ctx.device.type == "cuda"
    workers, bs = int(o.get("workers", 2)), int(o.get("batch_size", 8))
    ds = BenchDataset(o["data"], o.get("format", "files"), int(o.get("image_size", 64)),
                      int(o.get("frames", 4)))
    g = torch.Generator()
    g.manual_seed(ctx.seed)
    sampler = None
    if ctx.distributed:
        sampler = torch.utils.data.DistributedSampler(ds, num_replicas=ctx.world_size, rank=ctx.rank,
                                                      shuffle=True, seed=ctx.seed, drop_last=True)
    kw: Dict[str, Any] = dict(batch_size=bs, shuffle=sampler is None, sampler=sampler, drop_last=True,
                              num_workers=workers, collate_fn=multimodal_collate, generator=g,
                              pin_memory=cuda)
    if workers > 0:
        kw["prefetch_factor"] = int(o.get("prefetch_factor", 2))
    loader = torch.utils.data.DataLoader(ds, **kw)
    model = SmallNet(int(o.get("hidden", 1024))).to(ctx.device)
    if ctx.distributed:
        import torch.distributed as dist
        for p in model.parameters():  # identical by seed already; a broadcast makes it a guarantee
            dist.broadcast(p.data, 0)
    opt = torch.optim.AdamW(model.parameters(), lr=float(o.get("lr", 1e-3)))
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.9)
    amp = cuda and o.get("amp", "1") == "1"
    scaler = torch.cuda.amp.GradScaler() if amp else None
    params = [p for p in model.parameters()]
    mode = {"precision": "fp16" if amp else "fp32"}
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}

    def set_precision(name: str) -> None:
        if name not in dtypes or (name == "fp16" and not cuda):
            raise ValueError(f"precision {name!r}: expected fp32, bf16" + (", fp16" if cuda else ""))
        mode["precision"] = name

    def set_checkpointing(on: bool) -> None:
        model.checkpointing = bool(on)

    def step(batch: Dict[str, Any]) -> Dict[str, Any]:
        x, y = _inputs(batch, ctx.device)
        model.train()
        prec = mode["precision"]
        import contextlib
        ac = (torch.autocast(ctx.device.type, dtype=dtypes[prec]) if prec != "fp32"
              else contextlib.nullcontext())  # CPU autocast rejects fp32 even when disabled
        with ac:
            loss = torch.nn.functional.cross_entropy(model(x), y)
        use_scaler = scaler is not None and prec == "fp16"
        if use_scaler:
            scaler.scale(loss).backward()
        else:
            loss.backward()
        comm_s = None
        if ctx.distributed:
            import torch.distributed as dist
            if cuda:
                torch.cuda.synchronize(ctx.device)
            t0 = time.perf_counter()
            flat = torch.cat([p.grad.reshape(-1) for p in params])
            dist.all_reduce(flat)
            flat.div_(ctx.world_size)
            off = 0
            for p in params:
                n = p.numel()
                p.grad.copy_(flat[off:off + n].view_as(p.grad))
                off += n
            if cuda:
                torch.cuda.synchronize(ctx.device)
            comm_s = time.perf_counter() - t0
        if use_scaler:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        opt.zero_grad(set_to_none=True)
        sched.step()
        return {"loss": loss.detach(), "comm_s": comm_s}

    desc = {"model": "SmallNet (2 conv + MLP head, dropout 0.2)", "optimizer": "AdamW + StepLR",
            "micro_batch_samples": bs, "image_size": int(o.get("image_size", 64)),
            "frames": int(o.get("frames", 4)), "format": o.get("format", "files"),
            "data": os.path.abspath(o["data"]), "amp": amp,
            "communication": ("synchronous gradient all-reduce after backward" if ctx.distributed else None)}
    # evaluation: the first eval_batches batches of the dataset in order, no workers, dropout off
    n_eval = int(o.get("eval_batches", 2))
    eval_loader = torch.utils.data.DataLoader(ds, batch_size=bs, shuffle=False, drop_last=True, num_workers=0,
                                              collate_fn=multimodal_collate)

    def evaluate() -> Dict[str, Any]:
        model.eval()
        losses, correct, total, first = [], 0, 0, None
        for i, batch in enumerate(eval_loader):
            if i >= n_eval:
                break
            x, y = _inputs(batch, ctx.device)
            logits = model(x).float()
            losses.append(torch.nn.functional.cross_entropy(logits, y, reduction="sum"))
            correct += int((logits.argmax(1) == y).sum())
            total += int(y.numel())
            first = logits if first is None else first
        return {"loss": torch.stack(losses).sum() / max(total, 1), "accuracy": torch.tensor(correct / max(total, 1)),
                "logits_first_batch": first}

    config = {"lr": float(o.get("lr", 1e-3)), "batch_size": bs, "image_size": int(o.get("image_size", 64)),
              "frames": int(o.get("frames", 4)), "hidden": int(o.get("hidden", 1024)), "amp": amp,
              "scheduler": {"type": "StepLR", "step_size": 2, "gamma": 0.9}, "eval_batches": n_eval}
    return PreflightJob(model=model, optimizer=opt, loader=loader, step=step, scaler=scaler,
                        extra_state={"lr_scheduler": sched}, description=desc, evaluate=evaluate,
                        set_precision=set_precision, set_activation_checkpointing=set_checkpointing, config=config)
