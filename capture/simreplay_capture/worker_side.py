"""Code that runs inside DataLoader workers (and in the main process when num_workers=0).

Everything here is defined at module level so it pickles (spawn/forkserver). Records go to a per-PID
append-only file, one os.write per record, so a worker that leaves through os._exit (fork) or is
terminated loses nothing it already wrote.
"""
from __future__ import annotations

import hashlib
import json
import os
import resource
import time
import traceback
from typing import Any, Dict, Iterator, List, Optional, Tuple

from . import context

_perf = time.perf_counter_ns
_thread_ns = time.thread_time_ns


def thread_minflt() -> int:
    """Minor page faults of the calling thread so far (-1 where RUSAGE_THREAD is not available). On a
    host where faulting in a fresh page is expensive (a VM that hands freed memory back to its
    hypervisor), a DataLoader worker whose malloc returns and re-faults each image's buffers spends
    much of its CPU here; per sample, the count tells that churn apart from decoding
    (docs/modelling.md, "Page-fault churn")."""
    try:
        return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    except (AttributeError, OSError):
        return -1
_HASH_CHUNK = 4096


class PartFile:
    """Lazily opened, per-process append-only JSONL part file in the recorder's spool directory."""

    def __init__(self, spool: str) -> None:
        self.spool = spool
        self._pid = -1
        self._fd = -1

    def write(self, rec: Dict[str, Any]) -> None:
        pid = os.getpid()
        if pid != self._pid:
            # first use in this process (after fork the parent's fd must not be shared)
            self._fd = os.open(os.path.join(self.spool, f"part-{pid}.jsonl"),
                               os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            self._pid = pid
        data = (json.dumps(rec, separators=(",", ":")) + "\n").encode()
        while data:
            n = os.write(self._fd, data)
            data = data[n:]

    def __getstate__(self) -> Dict[str, Any]:
        return {"spool": self.spool}

    def __setstate__(self, st: Dict[str, Any]) -> None:
        self.__init__(st["spool"])


_PARTS: Dict[str, PartFile] = {}


def part_file(spool: str) -> PartFile:
    pf = _PARTS.get(spool)
    if pf is None:
        pf = _PARTS[spool] = PartFile(spool)
    return pf


class Tagged:
    """A sampler index carrying (epoch, batch); only the capture dataset proxy ever sees it."""

    __slots__ = ("value", "epoch", "batch")

    def __init__(self, value: Any, epoch: int, batch: int) -> None:
        self.value = value
        self.epoch = epoch
        self.batch = batch

    def __reduce__(self):
        return (Tagged, (self.value, self.epoch, self.batch))


class TagBatchSampler:
    """Passes the loader's batch sampler through unchanged, tagging each index with (epoch, batch).

    Iterates the wrapped sampler lazily (a generator), so RNG draws happen exactly when and as often as
    without capture. The DataLoader may call iter() more than once per epoch (1.13 calls it in
    __init__ and again in _reset); only the last one is consumed, so the epoch is not counted here:
    CapturedLoader sets `epoch` before each iter(loader).
    """

    def __init__(self, inner: Any, batched: bool) -> None:
        self.inner = inner
        self.batched = batched
        self.epoch = 0

    def __len__(self) -> int:
        return len(self.inner)

    def __iter__(self) -> Iterator[Any]:
        return self._gen(self.epoch)

    def _gen(self, epoch: int) -> Iterator[Any]:
        if self.batched:
            for b, idx in enumerate(self.inner):
                yield [Tagged(i, epoch, b) for i in idx]
        else:
            for b, i in enumerate(self.inner):
                yield Tagged(i, epoch, b)

    def __getattr__(self, name: str) -> Any:
        if name in ("inner", "__setstate__", "__getstate__"):
            raise AttributeError(name)
        return getattr(self.inner, name)


# ---- per-process worker identity and current batch -------------------------------------------
_IDENT: Tuple[int, int] = (-1, -1)  # (pid, worker id)
_LAST: Dict[str, int] = {"epoch": 0, "batch": 0, "n": 0}


def worker_id() -> int:
    global _IDENT
    pid = os.getpid()
    if _IDENT[0] != pid:
        wid = -1
        try:
            from torch.utils.data import get_worker_info
            info = get_worker_info()
            if info is not None:
                wid = int(info.id)
        except Exception:
            pass
        _IDENT = (pid, wid)
    return _IDENT[1]


def _update_digest(h: Any, obj: Any, acc: List[int]) -> None:
    """Sampled content hash: type, shape, dtype, size and the first/middle/last 4 KiB of each buffer."""
    try:
        import torch
        if isinstance(obj, torch.Tensor):
            t = obj.detach()
            nb = t.element_size() * t.nelement()
            acc[0] += nb
            h.update(f"T{tuple(t.shape)}{t.dtype}".encode())
            if t.device.type != "cpu":
                return
            if not t.is_contiguous():
                t = t.contiguous()
            try:
                mv = memoryview(t.numpy()).cast("B")
            except Exception:
                return
            _update_buffer(h, mv)
            return
    except ImportError:
        pass
    if isinstance(obj, (bytes, bytearray, memoryview)):
        mv = memoryview(obj).cast("B")
        acc[0] += mv.nbytes
        _update_buffer(h, mv)
    elif isinstance(obj, dict):
        for k in obj:
            h.update(repr(k).encode())
            _update_digest(h, obj[k], acc)
    elif isinstance(obj, (list, tuple)):
        h.update(b"[")
        for x in obj:
            _update_digest(h, x, acc)
        h.update(b"]")
    elif hasattr(obj, "__array_interface__") and hasattr(obj, "nbytes"):
        acc[0] += int(obj.nbytes)
        h.update(f"A{obj.shape}{obj.dtype}".encode())
        try:
            _update_buffer(h, memoryview(obj.tobytes() if not obj.flags["C_CONTIGUOUS"] else obj).cast("B"))
        except Exception:
            pass
    elif isinstance(obj, (int, float, str, bool)) or obj is None:
        h.update(repr(obj).encode())
    else:
        h.update(type(obj).__name__.encode())


def _update_buffer(h: Any, mv: memoryview) -> None:
    n = mv.nbytes
    h.update(n.to_bytes(8, "little"))
    if n <= 3 * _HASH_CHUNK:
        h.update(mv)
    else:
        mid = n // 2 - _HASH_CHUNK // 2
        h.update(mv[:_HASH_CHUNK])
        h.update(mv[mid:mid + _HASH_CHUNK])
        h.update(mv[n - _HASH_CHUNK:])


def digest(obj: Any) -> Tuple[str, int]:
    h = hashlib.blake2b(digest_size=8)
    acc = [0]
    _update_digest(h, obj, acc)
    return h.hexdigest(), acc[0]


def _shape_of(obj: Any) -> Tuple[int, int, int]:
    """(width, height, frames) of the first tensor/array in the output: [...,H,W]; 4-D -> frames=dim0."""
    stack = [obj]
    while stack:
        o = stack.pop(0)
        shape = getattr(o, "shape", None)
        if shape is not None and not isinstance(o, (str, bytes)):
            s = tuple(int(x) for x in shape)
            if len(s) >= 2:
                frames = s[0] if len(s) >= 4 else 1
                return s[-1], s[-2], frames
            return 0, 0, 0
        if isinstance(o, dict):
            stack.extend(o.values())
        elif isinstance(o, (list, tuple)):
            stack.extend(o)
    return 0, 0, 0


_STAGE_FIELDS = {"read": "read_ns", "decode": "decode_ns", "augment": "augment_ns"}


def sample_record(cfg: "ProxyConfig", index: Any, epoch: int, batch: int, t_start: int, wall: int,
                  cpu: int, ctx: context.SampleContext, out: Any, minflt: int = -1) -> Dict[str, Any]:
    h, out_bytes = digest(out) if cfg.hash else ("", _nbytes(out))
    notes = ctx.notes
    w, hgt, fr = _shape_of(out)
    rec: Dict[str, Any] = {
        "type": "sample", "rank": cfg.rank, "epoch": epoch,
        "index": index if isinstance(index, int) and not isinstance(index, bool) and index >= 0 else -1,
        "batch": batch, "worker": worker_id(), "t_start_ns": t_start - cfg.t0,
        "read_ns": 0, "decode_ns": 0, "augment_ns": 0,
        "read_bytes": int(notes.get("read_bytes", 0)), "out_bytes": out_bytes,
        "format": str(notes.get("format", "unknown")),
        "width": int(notes.get("width", w)), "height": int(notes.get("height", hgt)),
        "frames": int(notes.get("frames", fr)),
    }
    if rec["index"] < 0:
        rec["index"] = 0
        rec["index_repr"] = repr(index)[:200]
    if ctx.stages:
        rec["stages"] = "split"
        other = {}
        for k, v in ctx.stages.items():
            f = _STAGE_FIELDS.get(k)
            if f:
                rec[f] = v
            else:
                other[k] = v
        if other:
            rec["stage_ns"] = other
    else:
        rec["stages"] = "unsplit"
        rec["decode_ns"] = wall
    rec["wall_ns"] = wall
    rec["cpu_ns"] = cpu
    if minflt >= 0:
        rec["minflt"] = minflt
    if h:
        rec["hash"] = h
    rec["pid"] = os.getpid()
    tok = notes.get("tokens")
    if isinstance(tok, int) and not isinstance(tok, bool) and tok >= 0:
        rec["tokens"] = tok  # sequence length of the sample (docs/trace-format.md); else kept under notes
    for k, v in notes.items():
        if k not in rec and k not in ("read_bytes", "format", "width", "height", "frames"):
            if isinstance(v, (int, float, str, bool)) or v is None:
                rec.setdefault("notes", {})[k] = v
    return rec


def _nbytes(obj: Any) -> int:
    n = getattr(obj, "nbytes", None)
    if isinstance(n, int):
        return n
    el = getattr(obj, "element_size", None)
    if el is not None and hasattr(obj, "nelement"):
        return int(obj.element_size() * obj.nelement())
    if isinstance(obj, dict):
        return sum(_nbytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_nbytes(v) for v in obj)
    if isinstance(obj, (bytes, bytearray)):
        return len(obj)
    return 0


class ProxyConfig:
    """Picklable settings shared by the dataset proxy and the collate wrapper."""

    def __init__(self, spool: str, t0: int, rank: int, hash_samples: bool = True) -> None:
        self.spool = spool
        self.t0 = t0
        self.rank = rank
        self.hash = hash_samples


def record_error(cfg: ProxyConfig, index: Any, exc: BaseException) -> None:
    try:
        part_file(cfg.spool).write({
            "type": "event", "t_ns": max(0, _perf() - cfg.t0), "kind": "sample_error",
            "rank": cfg.rank, "worker": worker_id(), "pid": os.getpid(), "index_repr": repr(index)[:200],
            "message": f"{type(exc).__name__}: {exc}"[:2000],
            "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:],
        })
    except Exception:
        pass


def timed_getitem(cfg: ProxyConfig, ds: Any, idx: Any) -> Any:
    if isinstance(idx, Tagged):
        epoch, batch, idx = idx.epoch, idx.batch, idx.value
        _LAST["epoch"], _LAST["batch"] = epoch, batch
    else:
        epoch, batch = _LAST["epoch"], _LAST["batch"]
    ctx = context.SampleContext()
    prev = context.set_current(ctx)
    f0 = thread_minflt()
    c0 = _thread_ns()
    t0 = _perf()
    try:
        out = ds[idx]
    except BaseException as e:
        context.set_current(prev)
        record_error(cfg, idx, e)
        raise
    t1 = _perf()
    c1 = _thread_ns()
    faults = thread_minflt() - f0 if f0 >= 0 else -1
    context.set_current(prev)
    try:
        part_file(cfg.spool).write(sample_record(cfg, idx, epoch, batch, t0, t1 - t0, c1 - c0, ctx, out, faults))
    except Exception:
        pass  # capture must never break the user's pipeline
    _LAST["n"] += 1
    return out


class CollateWrapper:
    """Times collate_fn in whichever process runs it; writes an internal `_collate` record."""

    def __init__(self, fn: Any, cfg: ProxyConfig) -> None:
        self.fn = fn
        self.cfg = cfg

    def __call__(self, samples: Any) -> Any:
        t0 = _perf()
        out = self.fn(samples)
        t1 = _perf()
        try:
            try:
                size = len(samples)
            except TypeError:
                size = 1
            cfg = self.cfg
            part_file(cfg.spool).write({
                "type": "_collate", "rank": cfg.rank, "epoch": _LAST["epoch"], "batch": _LAST["batch"],
                "worker": worker_id(), "size": size, "collate_ns": t1 - t0, "t_ready_ns": t1 - cfg.t0,
                "bytes": _nbytes(out), "pid": os.getpid(),
            })
        except Exception:
            pass
        return out
