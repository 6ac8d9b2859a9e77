"""A preflight step entry with a sequence length: a small causal transformer language model over byte
windows of real text files. `--step simreplay_capture.bench.preflight_text_step:build`.

Options (`--opt K=V`): data (a directory of text files; default the Python standard library's
sources, present wherever python3 is), seq_len (128: tokens per sample), batch_size (4), workers (0),
d_model (64), heads (4), layers (2), lr (0.001), samples (64), eval_batches (2).

Every sample is seq_len + 1 bytes read from one file at a fixed offset (tokens are bytes, vocabulary
256) and notes `tokens=seq_len` (the capture's per-sample sequence length). The entry offers every
optional hook of the protocol: batch_at_sequence_length (the same files cut at another length),
set_activation_checkpointing (torch.utils.checkpoint around each layer, non-reentrant),
set_precision (fp32, bf16; fp16 too on CUDA, without a scaler: the entry is for measurement),
evaluate (mean loss over eval_batches fixed windows, dropout off) and the training configuration.
"""
from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Dict, List

import torch

from .. import context as sc
from ..preflight_protocol import PreflightContext, PreflightJob


def default_data() -> str:
    return os.path.dirname(os.__file__)


def text_files(root: str, limit: int = 64) -> List[str]:
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in ("__pycache__", "site-packages", "dist-packages"))
        for f in sorted(files):
            if f.endswith((".py", ".txt", ".md", ".rst")):
                p = os.path.join(d, f)
                if os.path.getsize(p) > 4096:
                    out.append(p)
        if len(out) >= limit:
            break
    return out[:limit]


class ByteWindows(torch.utils.data.Dataset):
    """Sample i: seq_len + 1 bytes of file i mod n at a fixed offset (x = first seq_len, y = shifted)."""

    def __init__(self, files: List[str], seq_len: int, samples: int, offset_salt: int = 0) -> None:
        self.files, self.seq_len, self.samples, self.salt = files, seq_len, samples, offset_salt
        self.root = os.path.commonpath(files) if files else ""

    def __len__(self) -> int:
        return self.samples

    def __getitem__(self, i: int) -> Dict[str, torch.Tensor]:
        path = self.files[i % len(self.files)]
        n = self.seq_len + 1
        with sc.stage("read"):
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                f.seek(((i + self.salt) * 7919) % max(1, size - n))
                data = f.read(n)
        with sc.stage("decode"):
            data = data + b"\0" * (n - len(data))
            t = torch.frombuffer(bytearray(data), dtype=torch.uint8).long()
        sc.note(read_bytes=len(data), tokens=self.seq_len, format="text")
        return {"x": t[:-1], "y": t[1:]}


class TinyLM(torch.nn.Module):
    def __init__(self, d: int, heads: int, layers: int, max_len: int) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(256, d)
        self.pos = torch.nn.Embedding(max_len, d)
        self.layers = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.1, batch_first=True) for _ in range(layers))
        self.out = torch.nn.Linear(d, 256)
        self.checkpointing = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        L = x.shape[1]
        h = self.emb(x) + self.pos(torch.arange(L, device=x.device))[None]
        mask = torch.triu(torch.full((L, L), float("-inf"), device=x.device), diagonal=1)
        for layer in self.layers:
            if self.checkpointing and torch.is_grad_enabled():
                import torch.utils.checkpoint as cp
                h = cp.checkpoint(layer, h, mask, use_reentrant=False)
            else:
                h = layer(h, src_mask=mask)
        return self.out(h)


def build(ctx: PreflightContext) -> PreflightJob:
    o = ctx.opts
    root = o.get("data") or default_data()
    files = text_files(root)
    if not files:
        raise ValueError(f"data={root}: expected text files (.py .txt .md .rst) larger than 4 KiB, found none")
    L, bs = int(o.get("seq_len", 128)), int(o.get("batch_size", 4))
    workers, samples = int(o.get("workers", 0)), int(o.get("samples", 64))
    max_len = max(2048, 4 * L)
    ds = ByteWindows(files, L, samples)
    g = torch.Generator()
    g.manual_seed(ctx.seed)
    sampler = (torch.utils.data.DistributedSampler(ds, num_replicas=ctx.world_size, rank=ctx.rank, shuffle=True,
                                                   seed=ctx.seed, drop_last=True) if ctx.distributed else None)
    kw: Dict[str, Any] = dict(batch_size=bs, shuffle=sampler is None, sampler=sampler, drop_last=True,
                              num_workers=workers, generator=g, pin_memory=ctx.device.type == "cuda")
    loader = torch.utils.data.DataLoader(ds, **kw)
    d = int(o.get("d_model", 64))
    model = TinyLM(d, int(o.get("heads", 4)), int(o.get("layers", 2)), max_len).to(ctx.device)
    if ctx.distributed:
        import torch.distributed as dist
        for p in model.parameters():
            dist.broadcast(p.data, 0)
    opt = torch.optim.AdamW(model.parameters(), lr=float(o.get("lr", 1e-3)))
    cuda = ctx.device.type == "cuda"
    mode = {"precision": "fp32"}
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16}

    def set_precision(name: str) -> None:
        if name not in ("fp32", "bf16") and not (name == "fp16" and cuda):
            raise ValueError(f"precision {name!r}: expected fp32, bf16" + (", fp16" if cuda else ""))
        mode["precision"] = name

    def set_checkpointing(on: bool) -> None:
        model.checkpointing = bool(on)

    def forward_loss(batch: Dict[str, torch.Tensor]) -> torch.Tensor:
        x = batch["x"].to(ctx.device, non_blocking=True)
        y = batch["y"].to(ctx.device, non_blocking=True)
        p = mode["precision"]
        ac = torch.autocast(ctx.device.type, dtype=dtypes[p]) if p != "fp32" else contextlib.nullcontext()
        with ac:
            logits = model(x)
        return torch.nn.functional.cross_entropy(logits.float().reshape(-1, 256), y.reshape(-1))

    def step(batch: Dict[str, torch.Tensor]) -> Dict[str, Any]:
        model.train()
        loss = forward_loss(batch)
        loss.backward()
        comm_s = None
        if ctx.distributed:
            import time
            import torch.distributed as dist
            t0 = time.perf_counter()
            for p in model.parameters():
                dist.all_reduce(p.grad)
                p.grad.div_(ctx.world_size)
            if cuda:
                torch.cuda.synchronize(ctx.device)
            comm_s = time.perf_counter() - t0
        opt.step()
        opt.zero_grad(set_to_none=True)
        return {"loss": loss.detach(), "comm_s": comm_s}

    def batch_at_sequence_length(n: int) -> Dict[str, torch.Tensor]:
        other = ByteWindows(files, int(n), bs)
        return torch.utils.data.default_collate([other[i] for i in range(bs)])

    held_out = ByteWindows(files, L, bs * int(o.get("eval_batches", 2)), offset_salt=104729)

    def evaluate() -> Dict[str, torch.Tensor]:
        model.eval()
        losses = []
        for i in range(0, len(held_out), bs):
            b = torch.utils.data.default_collate([held_out[j] for j in range(i, i + bs)])
            losses.append(forward_loss(b))
        return {"loss": torch.stack(losses).mean(), "per_batch": torch.stack(losses)}

    desc = {"model": f"TinyLM ({o.get('layers', 2)} causal transformer layers, d_model {d})",
            "optimizer": "AdamW", "micro_batch_samples": bs, "sequence_length": L,
            "tokens_per_micro_batch": bs * L, "data": os.path.abspath(root), "files": len(files),
            "python": sys.version.split()[0]}
    config = {"lr": float(o.get("lr", 1e-3)), "batch_size": bs, "seq_len": L, "d_model": d,
              "heads": int(o.get("heads", 4)), "layers": int(o.get("layers", 2))}
    return PreflightJob(model=model, optimizer=opt, loader=loader, step=step, description=desc, evaluate=evaluate,
                        set_precision=set_precision, set_activation_checkpointing=set_checkpointing,
                        batch_at_sequence_length=batch_at_sequence_length, config=config)
