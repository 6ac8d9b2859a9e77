"""Multi-rank capture under torchrun: collectives, the compute/communication split, clock alignment.

One `DistributedCapture` per rank, next to that rank's `Recorder` (docs/distributed.md):

    dist.init_process_group("gloo")                 # or nccl; torchrun sets RANK, WORLD_SIZE, MASTER_ADDR
    with Recorder("trace.jsonl.gz") as rec, DistributedCapture(rec) as dc:
        model = dc.attach_ddp(DistributedDataParallel(model))
        for batch in rec.wrap_loader(loader):
            with dc.step():
                with dc.compute():                  # optional: marks accelerator compute
                    ...

What it records, from public torch.distributed APIs only:
- every collective as a `collective` record (op, bytes, start, duration, step), from a DDP communication
  hook (`register_comm_hook`) for DDP's bucketed all-reduces, and from wrappers around the module-level
  `torch.distributed` functions for explicit calls. Missing hooks degrade to what is available and the
  manifest says what was and was not recorded (`distributed.collectives`).
- per step, `comm_ns` = time with at least one collective in flight and no `compute()` span open
  (communication not hidden behind compute), and `compute_ns` = step time minus that.
- the manifest's `distributed` object: world size, node count and index, backend, the interface that
  reaches MASTER_ADDR with its speed and any `tc` rate on it, and the clock alignment to rank 0.
"""
from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import procfs

_perf = time.perf_counter_ns

# Collective functions of torch.distributed that are wrapped (those present in the running torch).
WRAPPED_OPS = ("all_reduce", "all_gather", "all_gather_into_tensor", "_all_gather_base", "reduce_scatter",
               "reduce_scatter_tensor", "_reduce_scatter_base", "broadcast", "reduce", "all_to_all",
               "all_to_all_single", "gather", "scatter", "send", "recv", "isend", "irecv", "barrier")
CLOCK_ROUNDS = 16


# --------------------------------------------------------------------------------------------- clocks
def best_offset(samples: Sequence[Tuple[int, int, int]]) -> Tuple[int, int]:
    """Clock offset of a peer from ping-pong samples (t_send, t_peer, t_recv), all in ns.

    The peer read its clock at t_peer somewhere between our t_send and t_recv; assuming the reply took
    as long as the request, that was our (t_send + t_recv) / 2. The round with the smallest round trip
    bounds the error best: |error| <= rtt / 2 whatever the asymmetry. Returns (offset_ns, rtt_ns) with
    offset = peer clock - our clock.
    """
    if not samples:
        raise ValueError("no clock samples")
    t_send, t_peer, t_recv = min(samples, key=lambda s: s[2] - s[0])
    return t_peer - (t_send + t_recv) // 2, t_recv - t_send


def align_clocks(rank: int, world_size: int, t0_ns: int, send: Callable[[List[int], int], None],
                 recv: Callable[[int], List[int]], clock: Callable[[], int] = _perf,
                 rounds: int = CLOCK_ROUNDS) -> Dict[str, Any]:
    """Aligns this rank's trace time base with rank 0's (the reference), by ping-pong with rank 0.

    Trace times are ns since each rank's own t0 on its own monotonic clock. The result's
    `to_reference_ns` is what to add to this rank's trace times to put them on rank 0's trace time
    base: shift = t0_r - offset_r - t0_0, where offset_r = clock_r - clock_0 is estimated by
    best_offset(); `uncertainty_ns` = rtt/2 of the best round bounds its error.
    send(values, peer) / recv(peer) move small int lists (the process group's send/recv).
    """
    if world_size <= 1:
        return {"reference_rank": 0, "to_reference_ns": 0, "offset_ns": 0, "uncertainty_ns": 0, "rtt_ns": 0,
                "rounds": 0, "method": "single rank"}
    if rank == 0:
        for peer in range(1, world_size):
            samples = []
            for _ in range(rounds):
                a = clock()
                send([a], peer)
                t_peer = recv(peer)[0]
                b = clock()
                samples.append((a, t_peer, b))
            off, rtt = best_offset(samples)
            send([off, rtt, t0_ns], peer)
        return {"reference_rank": 0, "to_reference_ns": 0, "offset_ns": 0, "uncertainty_ns": 0, "rtt_ns": 0,
                "rounds": rounds, "method": "reference"}
    for _ in range(rounds):
        recv(0)
        send([clock()], 0)
    off, rtt, t0_ref = recv(0)
    return {"reference_rank": 0, "to_reference_ns": int(t0_ns - off - t0_ref), "offset_ns": int(off),
            "uncertainty_ns": int(rtt // 2 + 1), "rtt_ns": int(rtt), "rounds": rounds,
            "method": "ping-pong with rank 0 over the process group, smallest round trip of the rounds"}


# ------------------------------------------------------------------------------------------ intervals
def union_length(spans: Sequence[Tuple[int, int]], lo: int, hi: int) -> int:
    """Length of the union of [a, b) spans clipped to [lo, hi)."""
    clipped = sorted((max(a, lo), min(b, hi)) for a, b in spans if min(b, hi) > max(a, lo))
    total, cur_a, cur_b = 0, None, None
    for a, b in clipped:
        if cur_b is None or a > cur_b:
            if cur_b is not None:
                total += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    if cur_b is not None:
        total += cur_b - cur_a
    return total


def exposed_length(comm: Sequence[Tuple[int, int]], compute: Sequence[Tuple[int, int]], lo: int, hi: int) -> int:
    """Time in [lo, hi) covered by some comm span and by no compute span."""
    if not comm:
        return 0
    both = []
    for a, b in comm:
        for c, d in compute:
            if min(b, d) > max(a, c):
                both.append((max(a, c), min(b, d)))
    return union_length(comm, lo, hi) - union_length(both, lo, hi)


# ---------------------------------------------------------------------------------------- environment
def node_id() -> str:
    """This process's node: $SIMREPLAY_NODE, else host name plus network namespace (namespaces on one
    host are separate nodes for the validation harness)."""
    env = os.environ.get("SIMREPLAY_NODE")
    if env:
        return env
    try:
        ns = os.stat("/proc/self/ns/net").st_ino
    except OSError:
        ns = 0
    return f"{socket.gethostname()}/netns:{ns}"


def _ipv4_of(ifname: str) -> Optional[str]:
    import fcntl
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        packed = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", ifname[:15].encode()))  # SIOCGIFADDR
        return socket.inet_ntoa(packed[20:24])
    except OSError:
        return None
    finally:
        s.close()


def _read(path: str) -> Optional[str]:
    """A /proc or /sys file's text, stripped (procfs is the one reader)."""
    text = procfs.read_text(path)
    return None if text is None else text.strip()


def tc_rate_bits_per_s(ifname: str) -> Optional[int]:
    """Rate of a `tbf` qdisc on the interface (what the netns harness sets), None when none."""
    try:
        p = subprocess.run(["tc", "-j", "qdisc", "show", "dev", ifname], capture_output=True, text=True,
                           timeout=5)
        for q in json.loads(p.stdout or "[]"):
            if q.get("kind") == "tbf":
                rate = q.get("options", {}).get("rate")  # tc -j prints bytes per second
                if isinstance(rate, (int, float)) and rate > 0:
                    return int(rate) * 8
    except (OSError, ValueError, subprocess.SubprocessError):
        pass
    return None


def interface_toward(addr: Optional[str]) -> Dict[str, Any]:
    """The local interface whose address routes to `addr` (MASTER_ADDR), with its speeds."""
    out: Dict[str, Any] = {"name": None, "address": None, "speed_mbps": None, "tc_rate_bits_per_s": None}
    if not addr:
        return out
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.connect((addr, 9))  # UDP connect sends nothing: it only picks the route
        local = s.getsockname()[0]
        s.close()
    except OSError:
        return out
    out["address"] = local
    for _, name in socket.if_nameindex():
        if _ipv4_of(name) == local:
            out["name"] = name
            sp = _read(f"/sys/class/net/{name}/speed")
            try:
                out["speed_mbps"] = int(sp) if sp is not None and int(sp) > 0 else None
            except ValueError:
                pass
            out["tc_rate_bits_per_s"] = tc_rate_bits_per_s(name)
            break
    return out


def _tensor_bytes(t: Any) -> int:
    try:
        return int(t.numel()) * int(t.element_size())
    except Exception:
        return 0


def _list_bytes(ts: Any) -> int:
    return sum(_tensor_bytes(t) for t in ts) if isinstance(ts, (list, tuple)) else _tensor_bytes(ts)


def op_bytes(op: str, args: Tuple[Any, ...], kwargs: Dict[str, Any], world_size: int) -> int:
    """The size an op moves, with the nccl-tests conventions (docs/distributed.md): all-reduce,
    broadcast, reduce, send/recv: the tensor; all-gather: the gathered total; reduce-scatter: the input
    total; all-to-all: the input total."""
    a = list(args)

    def arg(i: int, name: str) -> Any:
        return kwargs[name] if name in kwargs else (a[i] if len(a) > i else None)
    if op in ("all_reduce", "broadcast", "reduce", "send", "recv", "isend", "irecv"):
        return _tensor_bytes(arg(0, "tensor"))
    if op == "all_gather":
        return _tensor_bytes(arg(1, "tensor")) * world_size
    if op in ("all_gather_into_tensor", "_all_gather_base"):
        return _tensor_bytes(arg(0, "output_tensor"))
    if op == "reduce_scatter":
        return _list_bytes(arg(1, "input_list"))
    if op in ("reduce_scatter_tensor", "_reduce_scatter_base"):
        return _tensor_bytes(arg(1, "input"))
    if op == "all_to_all":
        return _list_bytes(arg(1, "input_tensor_list"))
    if op == "all_to_all_single":
        return _tensor_bytes(arg(1, "input"))
    if op == "gather":
        return _tensor_bytes(arg(0, "tensor")) * world_size
    if op == "scatter":
        return _tensor_bytes(arg(0, "tensor")) * world_size
    return 0


_OP_NAMES = {"_all_gather_base": "all_gather", "all_gather_into_tensor": "all_gather",
             "_reduce_scatter_base": "reduce_scatter", "reduce_scatter_tensor": "reduce_scatter",
             "isend": "send", "irecv": "recv", "all_to_all_single": "all_to_all"}


# -------------------------------------------------------------------------------------------- capture
class _Step:
    def __init__(self, dc: "DistributedCapture", kw: Dict[str, Any]) -> None:
        self.dc = dc
        self.kw = kw

    def __enter__(self) -> "_Step":
        dc = self.dc
        self.inner = dc.rec.step(**self.kw)
        self.inner.__enter__()
        dc._step = dc.rec._step_no
        dc._compute = []
        return self

    def __exit__(self, *exc: Any) -> bool:
        dc = self.dc
        t1 = _perf()
        t0 = self.inner.t0
        with dc._lock:
            spans = [(c["_t0"], c["_t0"] + c["duration_ns"]) for c in dc._done if c["step"] == dc._step]
            spans += [(t, t1) for t, _ in dc._in_flight.values()]
            n = sum(1 for c in dc._done if c["step"] == dc._step) + len(dc._in_flight)
        comm = exposed_length(spans, dc._compute, t0, t1)
        self.inner.comm_ns = comm
        self.inner.extra = dict(self.inner.extra or {}, comm_total_ns=union_length(spans, t0, t1), collectives=n)
        if dc._compute:  # the loop marked its accelerator work (compute()): the rest of compute_ns is host work
            self.inner.extra["accel_ns"] = sum(e - s for s, e in dc._compute)
        dc._step = -1
        out = self.inner.__exit__(*exc)  # wall-timed (no CUDA): compute_ns = step_ns - comm_ns
        dc._flush()
        return out


class _Compute:
    def __init__(self, dc: "DistributedCapture") -> None:
        self.dc = dc

    def __enter__(self) -> "_Compute":
        self.t0 = _perf()
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.dc._compute.append((self.t0, _perf()))
        return False


class DistributedCapture:
    """Collective and clock capture for one rank (see the module docstring and docs/distributed.md).

    REQUIRES: the default process group is initialised (else it records nothing and says so), and it is
    created before the Recorder writes its header (before the first `step()`), so the manifest carries
    the distributed facts; created later, they go into a `distributed` event instead.
    Not thread-safe for `step()`/`compute()` (the training loop's thread); collective completions may
    arrive on communication threads.
    """

    def __init__(self, rec: Any, wrap_functions: bool = True, align: bool = True) -> None:
        self.rec = rec
        self._lock = threading.Lock()
        self._done: List[Dict[str, Any]] = []
        self._in_flight: Dict[int, Tuple[int, int]] = {}  # id -> (issue time, step it was issued in)
        self._next_id = 0
        self._step = -1
        self._compute: List[Tuple[int, int]] = []
        self._orig: Dict[str, Any] = {}
        self._notes: List[str] = []
        self._closed = False
        self.world_size = 1
        self.rank = 0
        self._dist = None
        try:
            import torch.distributed as dist
            if dist.is_available() and dist.is_initialized():
                self._dist = dist
                self.world_size = dist.get_world_size()
                self.rank = dist.get_rank()
        except ImportError:
            pass
        info: Dict[str, Any] = {"world_size": self.world_size, "rank": self.rank,
                                "local_rank": int(os.environ.get("LOCAL_RANK", "0") or 0),
                                "master_addr": os.environ.get("MASTER_ADDR"), "node_id": node_id(),
                                "interface": interface_toward(os.environ.get("MASTER_ADDR"))}
        if self._dist is None:
            self._notes.append("torch.distributed not initialised: no collectives recorded")
            info.update(backend=None, nodes=1, node_index=0, clock=align_clocks(0, 1, 0, None, None))
        else:
            dist = self._dist
            info["backend"] = str(dist.get_backend())
            ids: List[Any] = [None] * self.world_size
            dist.all_gather_object(ids, info["node_id"])
            nodes = sorted(set(ids))
            info.update(nodes=len(nodes), node_index=nodes.index(info["node_id"]), node_of_rank=[
                nodes.index(i) for i in ids])
            info["clock"] = self._align() if align else {"method": "not aligned"}
            if wrap_functions:
                self._wrap_functions()
        self.info = info
        self._write_info()

    # ------------------------------------------------------------------ user API
    def __enter__(self) -> "DistributedCapture":
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.close()
        return False

    def step(self, **kw: Any) -> _Step:
        """A training step (same arguments as Recorder.step); fills compute_ns / comm_ns."""
        return _Step(self, kw)

    def compute(self) -> _Compute:
        """Marks accelerator compute inside a step: collectives overlapping it count as hidden."""
        return _Compute(self)

    def attach_ddp(self, ddp_model: Any) -> Any:
        """Registers a communication hook on a DistributedDataParallel model that records each bucket's
        all-reduce (and performs it exactly as DDP's default hook: sum, then divide by world size).
        Returns the model. Without `register_comm_hook` (or on error) the buckets are not recorded and
        the manifest says so."""
        if self._dist is None:
            return ddp_model
        reg = getattr(ddp_model, "register_comm_hook", None)
        if reg is None:
            self._note("DDP communication hooks unavailable: DDP bucket all-reduces not recorded")
            return ddp_model
        dist = self._dist
        all_reduce = self._orig.get("all_reduce", dist.all_reduce)
        group_size = self.world_size
        counter = [0]

        def hook(state: Any, bucket: Any) -> Any:
            buf = bucket.buffer() if hasattr(bucket, "buffer") else bucket.get_tensor()
            idx = bucket.index() if hasattr(bucket, "index") else counter[0]
            counter[0] += 1
            cid = self._begin()
            t0 = _perf()
            buf.div_(group_size)
            fut = all_reduce(buf, async_op=True).get_future()

            def done(f: Any) -> Any:
                self._end(cid, "all_reduce", _tensor_bytes(buf), t0, _perf(), via="ddp_hook", bucket=idx)
                return f.value()[0]
            return fut.then(done)
        # DDP checks the annotations by identity; this module's are strings (postponed evaluation)
        import torch
        hook.__annotations__ = {"state": object, "bucket": dist.GradBucket,
                                "return": torch.futures.Future[torch.Tensor]}
        try:
            reg(None, hook)
            self.info["collectives_ddp_hook"] = True
            self._write_info()
        except Exception as e:  # e.g. a hook already registered
            self._note(f"register_comm_hook failed ({type(e).__name__}: {e}): DDP all-reduces not recorded")
        return ddp_model

    def close(self) -> None:
        """Restores the wrapped functions and writes the remaining collective records."""
        if self._closed:
            return
        self._closed = True
        # Let completion callbacks still running on communication threads finish (and drop their
        # references) while this thread sleeps without the GIL: tearing the process group down while one
        # of them waits for the GIL deadlocks torch 1.13's ~ProcessGroupGloo.
        deadline = time.monotonic() + 5.0
        while self._in_flight and time.monotonic() < deadline:
            time.sleep(0.001)
        time.sleep(0.05)
        dist = self._dist
        for name, fn in self._orig.items():
            setattr(dist, name, fn)
        self._orig.clear()
        self._flush()

    # ------------------------------------------------------------------ internals
    def _note(self, text: str) -> None:
        self._notes.append(text)
        if getattr(self, "info", None) is not None:
            self._write_info()

    def _write_info(self) -> None:
        self.info["collectives"] = {
            "wrapped_functions": sorted(self._orig),
            "ddp_hook": bool(self.info.pop("collectives_ddp_hook", False) or
                             self.info.get("collectives", {}).get("ddp_hook")),
            "notes": list(self._notes)}
        rec = self.rec
        if not rec._header_done:
            rec.manifest_extra["distributed"] = self.info
            rec.manifest_extra["world_size"] = self.world_size
            rec.manifest_extra["rank"] = self.rank
        else:
            rec._main_q.append({"type": "event", "t_ns": _perf() - rec.t0, "kind": "distributed",
                                "distributed": self.info})

    def _align(self) -> Dict[str, Any]:
        import torch
        dist = self._dist
        send_fn, recv_fn = dist.send, dist.recv

        def send(values: List[int], peer: int) -> None:
            send_fn(torch.tensor(values + [0] * (3 - len(values)), dtype=torch.int64), dst=peer)

        def recv(peer: int) -> List[int]:
            t = torch.zeros(3, dtype=torch.int64)
            recv_fn(t, src=peer)
            return [int(v) for v in t.tolist()]
        out = align_clocks(self.rank, self.world_size, self.rec.t0, send, recv)
        dist.barrier()
        return out

    def _begin(self) -> int:
        with self._lock:
            cid = self._next_id
            self._next_id += 1
            self._in_flight[cid] = (_perf(), self._step)
        return cid

    def _end(self, cid: int, op: str, nbytes: int, t0: int, t1: int, **extra: Any) -> None:
        rec = self.rec
        with self._lock:
            step = self._in_flight.get(cid, (0, self._step))[1]
        r = {"type": "collective", "rank": self.rank, "step": step, "op": _OP_NAMES.get(op, op),
             "bytes": int(nbytes), "t_start_ns": t0 - rec.t0, "duration_ns": max(0, t1 - t0),
             "world_size": self.world_size, "_t0": t0}
        r.update(extra)
        with self._lock:
            self._in_flight.pop(cid, None)
            self._done.append(r)

    def _flush(self) -> None:
        """Moves finished collectives of closed steps to the recorder's queue."""
        with self._lock:
            keep, out = [], []
            for r in self._done:
                (keep if (r["step"] == self._step and self._step >= 0) else out).append(r)
            self._done = keep
        for r in out:
            r.pop("_t0", None)
            self.rec._main_q.append(r)

    def _wrap_functions(self) -> None:
        dist = self._dist
        for name in WRAPPED_OPS:
            fn = getattr(dist, name, None)
            if fn is None:
                continue
            self._orig[name] = fn
            setattr(dist, name, self._wrapper(name, fn))

    def _wrapper(self, name: str, fn: Any) -> Any:
        dc = self

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            nbytes = op_bytes(name, args, kwargs, dc.world_size)
            peer = kwargs.get("dst", kwargs.get("src"))
            if peer is None and name in ("send", "recv", "isend", "irecv") and len(args) > 1:
                peer = args[1]
            extra: Dict[str, Any] = {"via": "wrap"}
            if isinstance(peer, int):
                extra["peer"] = peer
            cid = dc._begin()
            t0 = _perf()
            out = fn(*args, **kwargs)
            is_async = name in ("isend", "irecv") or bool(kwargs.get("async_op"))
            if not is_async or out is None:
                dc._end(cid, name, nbytes, t0, _perf(), **extra)
                return out
            try:  # completion time from the work's future (gloo and nccl provide one)
                out.get_future().then(lambda f: dc._end(cid, name, nbytes, t0, _perf(), **extra))
            except Exception:
                dc._end(cid, name, nbytes, t0, _perf(), completion="unknown", **extra)
            return out
        wrapped.__wrapped__ = fn  # type: ignore[attr-defined]
        wrapped.__name__ = getattr(fn, "__name__", name)
        wrapped.__doc__ = getattr(fn, "__doc__", None)
        return wrapped
