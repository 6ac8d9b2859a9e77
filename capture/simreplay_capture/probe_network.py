"""`probe network`: an nccl-tests-like collective microbenchmark over torch.distributed.

    python3 -m simreplay_capture.probe_network --out probe-network.json [--nprocs 2]   # local ranks
    torchrun --nnodes N ... -m simreplay_capture.probe_network --out probe-network.json  # real ranks

Times all-reduce, all-gather, reduce-scatter, broadcast and point-to-point (send to rank+1 while
receiving from rank-1) over message sizes from --min-bytes to --max-bytes, reports algbw and busbw with
the nccl-tests definitions, fits t = alpha + S / algbw per op, and writes `simreplay.probe-network/1`
(docs/probe-format.md). Backend: nccl when CUDA is present, else gloo. gloo has no reduce-scatter: it is
then measured as a ring over send/recv (the algorithm NCCL's ring uses), and the output says so.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import socket
import statistics
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

SCHEMA = "simreplay.probe-network/1"
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "sendrecv")


def bus_factor(op: str, n: int) -> float:
    """busbw / algbw (nccl-tests doc/PERFORMANCE.md): the per-link load of the ring algorithm."""
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter"):
        return (n - 1) / n
    return 1.0  # broadcast, sendrecv


def ring_steps(op: str, n: int) -> int:
    """Latency-bound steps of the ring form of each op (alpha per step = fitted alpha / steps)."""
    if op == "all_reduce":
        return 2 * (n - 1)
    if op in ("all_gather", "reduce_scatter"):
        return n - 1
    return 1


def parse_bytes(text: str) -> int:
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    v = int(float(t[:-1] if t[-1:] in "KMG" else t) * mult)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive size, found {text!r}")
    return v


def sizes(min_bytes: int, max_bytes: int, factor: int) -> List[int]:
    out, s = [], min_bytes
    while s <= max_bytes:
        out.append(s)
        s *= factor
    if out and out[-1] != max_bytes:
        out.append(max_bytes)
    return out


BANDWIDTH_BOUND_FACTOR = 10.0  # a size taking >= this x the fastest time is bandwidth-bound


def _weighted_line(pts: Sequence[Tuple[float, float]]) -> Tuple[float, float]:
    """Least squares of t = alpha + S * beta, weights 1/t^2; alpha clamped at 0 (beta then refitted
    through the origin)."""
    w = [1.0 / (t * t) for _, t in pts]
    sw = sum(w)
    sx = sum(wi * s for wi, (s, _) in zip(w, pts))
    sy = sum(wi * t for wi, (_, t) in zip(w, pts))
    sxx = sum(wi * s * s for wi, (s, _) in zip(w, pts))
    sxy = sum(wi * s * t for wi, (s, t) in zip(w, pts))
    det = sw * sxx - sx * sx
    beta = (sw * sxy - sx * sy) / det if det > 0 else 0.0
    alpha = (sy - beta * sx) / sw
    if beta > 0 and alpha < 0:
        alpha, beta = 0.0, sxy / sxx
    return alpha, beta


def fit_alpha_beta(points: Sequence[Tuple[int, float]]) -> Dict[str, Any]:
    """t = alpha + S * beta the way nccl-tests is read: beta from the bandwidth-bound sizes (>= 10x the
    fastest time), alpha = the median of t - beta S over the others (clamped at 0); one line through
    every point when fewer than two sizes are bandwidth-bound. The same method as simreplay calibrate
    (calibrate/network_fit.h): one line through every point lets the small messages' scatter set the
    slope."""
    pts = [(float(s), float(t)) for s, t in points if t > 0]
    if len({s for s, _ in pts}) < 2:
        return {"points": len(pts), "alpha_s": None, "algbw_bytes_per_s": None, "r2": None, "mape": None}
    fastest = min(t for _, t in pts)
    bound = [(s, t) for s, t in pts if t >= BANDWIDTH_BOUND_FACTOR * fastest]
    rest = [(s, t) for s, t in pts if t < BANDWIDTH_BOUND_FACTOR * fastest]
    if len({s for s, _ in bound}) >= 2:
        alpha, beta = _weighted_line(bound)
        if beta > 0 and rest:
            alpha = max(0.0, statistics.median(t - beta * s for s, t in rest))
        method = "two-regime: beta from points >= 10x the fastest, alpha = median residual of the others"
    else:
        alpha, beta = _weighted_line(pts)
        method = "weighted least squares over every point, weights 1/t^2"
    w = [1.0 / (t * t) for _, t in pts]
    if beta <= 0:  # time does not grow with size (all latency-bound): alpha is the typical time
        return {"points": len(pts), "alpha_s": sum(wi * t for wi, (_, t) in zip(w, pts)) / sum(w),
                "algbw_bytes_per_s": None, "r2": None, "mape": None, "method": method}
    pred = [alpha + beta * s for s, _ in pts]
    mean_w = sum(wi * t for wi, (_, t) in zip(w, pts)) / sum(w)
    ss_res = sum(wi * (t - p) ** 2 for wi, (_, t), p in zip(w, pts, pred))
    ss_tot = sum(wi * (t - mean_w) ** 2 for wi, (_, t) in zip(w, pts))
    return {"points": len(pts), "alpha_s": alpha, "beta_s_per_byte": beta, "algbw_bytes_per_s": 1.0 / beta,
            "r2": (1 - ss_res / ss_tot) if ss_tot > 0 else 1.0,
            "mape": sum(abs(p - t) / t for (_, t), p in zip(pts, pred)) / len(pts),
            "size_range_bytes": [int(min(s for s, _ in pts)), int(max(s for s, _ in pts))], "method": method}


def fit_cpu(results: Sequence[Dict[str, Any]], op: str, n: int) -> Optional[Dict[str, Any]]:
    """Host CPU seconds per rank against bus bytes over the bandwidth-bound sizes: cpu = c0 + c x bus
    bytes (calibrate's collective.cpu_s_per_bus_byte is c). None without two such sizes."""
    rows = [r for r in results if r["op"] == op and r.get("host_cpu_s_per_rank") is not None]
    if not rows:
        return None
    fastest = min(r["time_s"] for r in rows)
    pts = [(r["bytes"] * bus_factor(op, n), r["host_cpu_s_per_rank"]) for r in rows
           if r["time_s"] >= BANDWIDTH_BOUND_FACTOR * fastest]
    if len({x for x, _ in pts}) < 2:
        return None
    k = len(pts)
    sx, sy = sum(x for x, _ in pts), sum(y for _, y in pts)
    sxx, sxy = sum(x * x for x, _ in pts), sum(x * y for x, y in pts)
    slope = (k * sxy - sx * sy) / (k * sxx - sx * sx)
    return {"cpu_s_per_bus_byte": slope, "intercept_s": (sy - slope * sx) / k, "points": k}


# ---------------------------------------------------------------------------------------- the ops
class _Ops:
    def __init__(self, dist: Any, torch: Any, device: Any, rank: int, n: int, backend: str) -> None:
        self.dist, self.torch, self.device, self.rank, self.n, self.backend = dist, torch, device, rank, n, backend
        self.native_reduce_scatter = backend != "gloo"

    def make(self, op: str, nbytes: int) -> Tuple[Callable[[], None], int]:
        """A closure running one op of about `nbytes` (rounded to whole float32 per rank) and its size."""
        torch, dist, n, dev = self.torch, self.dist, self.n, self.device
        count = max(n, nbytes // 4 // n * n) if op in ("all_gather", "reduce_scatter") else max(1, nbytes // 4)
        size = count * 4
        if op == "all_reduce":
            buf = torch.ones(count, device=dev)
            return (lambda: dist.all_reduce(buf)), size
        if op == "broadcast":
            buf = torch.ones(count, device=dev)
            return (lambda: dist.broadcast(buf, src=0)), size
        if op == "all_gather":
            out = [torch.empty(count // n, device=dev) for _ in range(n)]
            inp = torch.ones(count // n, device=dev)
            return (lambda: dist.all_gather(out, inp)), size
        if op == "reduce_scatter":
            inp = [torch.ones(count // n, device=dev) for _ in range(n)]
            out = torch.empty(count // n, device=dev)
            if self.native_reduce_scatter:
                return (lambda: dist.reduce_scatter(out, inp)), size
            return (lambda: self._ring_reduce_scatter(inp, out)), size
        if op == "sendrecv":
            sbuf = torch.ones(count, device=dev)
            rbuf = torch.empty(count, device=dev)
            nxt, prv = (self.rank + 1) % n, (self.rank - 1) % n

            def sendrecv() -> None:
                reqs = [dist.isend(sbuf, nxt), dist.irecv(rbuf, prv)]
                for r in reqs:
                    r.wait()
            return sendrecv, size
        raise ValueError(op)

    def _ring_reduce_scatter(self, chunks: List[Any], out: Any) -> None:
        """Ring reduce-scatter over point-to-point: n-1 steps, each sending one chunk to the next rank
        and adding the one received from the previous; rank r ends with the sum of chunk r."""
        dist, n, r = self.dist, self.n, self.rank
        acc = [c.clone() for c in chunks]
        recv = self.torch.empty_like(chunks[0])
        nxt, prv = (r + 1) % n, (r - 1) % n
        for k in range(n - 1):
            send_idx = (r - k - 1) % n
            recv_idx = (r - k - 2) % n
            reqs = [dist.isend(acc[send_idx], nxt), dist.irecv(recv, prv)]
            for q in reqs:
                q.wait()
            acc[recv_idx] += recv
        out.copy_(acc[r])


def _max_over_ranks(dist: Any, torch: Any, device: Any, value: float) -> float:
    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def _mean_over_ranks(dist: Any, torch: Any, device: Any, value: float) -> float:
    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return float(t.item()) / dist.get_world_size()


def host_busy_s() -> float:
    """Busy CPU seconds of this host since boot, all cores (/proc/stat: every state but idle and
    iowait). It sees the kernel's network work (softirq, a bridge) wherever it runs, which a process's
    own CPU time misses; 0 where /proc/stat is unreadable."""
    from .procfs import host_sample
    return host_sample()[2] / 1e9


def host_key() -> str:
    """The physical host (its kernel's boot id): ranks in separate network namespaces of one host
    share its cores, which is what the CPU cost per rank needs to know."""
    from .procfs import read_text
    return (read_text("/proc/sys/kernel/random/boot_id") or "").strip() or socket.gethostname()


def measure(args: argparse.Namespace, dist: Any, torch: Any, device: Any, backend: str,
            progress: Callable[[str], None]) -> List[Dict[str, Any]]:
    rank, n = dist.get_rank(), dist.get_world_size()
    ops = _Ops(dist, torch, device, rank, n, backend)
    hosts: List[Any] = [None] * n
    dist.all_gather_object(hosts, host_key())
    ranks_on_host = sum(1 for h in hosts if h == hosts[rank])
    sync = (lambda: torch.cuda.synchronize()) if device.type == "cuda" else (lambda: None)
    results = []
    for op in args.ops:
        if op == "sendrecv" and n < 2:
            continue
        for s in sizes(args.min_bytes, args.max_bytes, args.factor):
            run, size = ops.make(op, s)
            dist.barrier()
            t = time.perf_counter()
            for _ in range(args.warmup):
                run()
            sync()
            warm_s = _max_over_ranks(dist, torch, device, (time.perf_counter() - t) / max(1, args.warmup))
            # every rank computes the same count from the same (max) warm-up time
            iters = int(min(args.max_iters, max(args.min_iters, math.ceil(args.budget_s / max(warm_s, 1e-9)))))
            dist.barrier()
            host0, cpu0 = host_busy_s(), time.process_time()
            t = time.perf_counter()
            for _ in range(iters):
                run()
            sync()
            elapsed_s, cpu_s, host_s = time.perf_counter() - t, time.process_time() - cpu0, host_busy_s() - host0
            mean_s = _max_over_ranks(dist, torch, device, elapsed_s / iters)
            alg = size / mean_s
            results.append({"op": op, "bytes": size, "iters": iters, "time_s": mean_s,
                            "algbw_bytes_per_s": alg, "busbw_bytes_per_s": alg * bus_factor(op, n),
                            # CPU seconds per iteration: the rank's process (all its threads), mean over
                            # ranks; and the host's busy time (rank 0's host) shared out over its ranks
                            "cpu_s": _mean_over_ranks(dist, torch, device, cpu_s / iters),
                            "host_cpu_s_per_rank": host_s / iters / ranks_on_host})
            progress(f"{op:15s} {size:>11d} B  {mean_s * 1e3:10.3f} ms  algbw {alg / 1e9:8.4f} GB/s  "
                     f"busbw {alg * bus_factor(op, n) / 1e9:8.4f} GB/s  ({iters} iters)")
            del run
    return results


def fits(results: List[Dict[str, Any]], n: int, ops: Sequence[str]) -> Dict[str, Any]:
    out = {}
    for op in ops:
        pts = [(r["bytes"], r["time_s"]) for r in results if r["op"] == op]
        if not pts:
            continue
        f = fit_alpha_beta(pts)
        bf = bus_factor(op, n)
        f["bus_bytes_per_s"] = f["algbw_bytes_per_s"] * bf if f.get("algbw_bytes_per_s") else None
        f["ring_steps"] = ring_steps(op, n)
        # One rank has no ring steps (its collectives are local copies): no latency per step to give.
        has_steps = f.get("alpha_s") is not None and f["ring_steps"] > 0
        f["alpha_per_step_s"] = f["alpha_s"] / f["ring_steps"] if has_steps else None
        f["cpu"] = fit_cpu(results, op, n)
        out[op] = f
    return out


# ------------------------------------------------------------------------------------------ driver
def _rank_main(args: argparse.Namespace) -> int:
    import torch
    import torch.distributed as dist
    from .distributed import interface_toward, node_id
    from .manifest import hardware, versions
    backend = args.backend
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() and dist.is_nccl_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend)
    torch.set_num_threads(1)
    rank, n = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda") if backend == "nccl" else torch.device("cpu")
    me = {"rank": rank, "node_id": node_id(), "interface": interface_toward(os.environ.get("MASTER_ADDR"))}
    everyone: List[Any] = [None] * n
    dist.all_gather_object(everyone, me)
    nodes = sorted({e["node_id"] for e in everyone})
    say = (lambda m: print(m, file=sys.stderr, flush=True)) if rank == 0 else (lambda m: None)
    say(f"probe network: {n} ranks on {len(nodes)} node(s), backend {backend}")
    t_start = datetime.datetime.now(datetime.timezone.utc).isoformat()
    results = measure(args, dist, torch, device, backend, say)
    dist.barrier()
    if rank == 0:
        notes = []
        if backend == "gloo" and "reduce_scatter" in args.ops:
            notes.append("gloo has no reduce_scatter: measured as a ring of send/recv steps")
        if n == 1:
            notes.append("world size 1: collectives are local copies; busbw factors are 0 or 1")
        doc = {
            "schema": SCHEMA, "backend": backend, "world_size": n, "nodes": len(nodes),
            "ranks": [{"rank": e["rank"], "node": nodes.index(e["node_id"]), "interface": e["interface"]}
                      for e in everyone],
            "settings": {"ops": list(args.ops), "min_bytes": args.min_bytes, "max_bytes": args.max_bytes,
                         "factor": args.factor, "warmup": args.warmup, "min_iters": args.min_iters,
                         "max_iters": args.max_iters, "budget_s": args.budget_s, "dtype": "float32",
                         "time": "mean per iteration on each rank, max over ranks"},
            "implementation": {op: ("ring over send/recv" if op == "reduce_scatter" and backend == "gloo"
                                    else "torch.distributed." + ("isend/irecv" if op == "sendrecv" else op))
                               for op in args.ops},
            "results": results, "fit": fits(results, n, args.ops),
            "manifest": {"versions": versions(), "hardware": hardware(), "start_time": t_start,
                         "command": list(sys.argv), "source": "probe network"},
            "notes": notes,
        }
        _write_atomically(args.out, json.dumps(doc, indent=1, sort_keys=True) + "\n")
        say(f"wrote {args.out}")
    dist.destroy_process_group()
    return 0


def _write_atomically(path: str, text: str) -> None:
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".probe-network.", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _spawned(rank: int, n: int, port: int, args: argparse.Namespace) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(n), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))
    rc = _rank_main(args)
    if rc:
        raise SystemExit(rc)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python3 -m simreplay_capture.probe_network", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="probe-network.json to write (atomically, by rank 0)")
    ap.add_argument("--ops", default=",".join(OPS), help=f"comma-separated subset of {','.join(OPS)}")
    ap.add_argument("--min-bytes", type=parse_bytes, default=1 << 10)
    ap.add_argument("--max-bytes", type=parse_bytes, default=64 << 20)
    ap.add_argument("--factor", type=int, default=4, help="size multiplier between steps (>= 2)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs per size")
    ap.add_argument("--min-iters", type=int, default=2)
    ap.add_argument("--max-iters", type=int, default=50)
    ap.add_argument("--budget-s", type=float, default=0.3, help="target timed seconds per size")
    ap.add_argument("--backend", default="auto", choices=["auto", "gloo", "nccl"])
    ap.add_argument("--nprocs", type=int, default=2,
                    help="without torchrun: start this many local ranks (TCP store on 127.0.0.1)")
    return ap


def main(argv: Optional[List[str]] = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    args.ops = [o for o in args.ops.split(",") if o]
    bad = [o for o in args.ops if o not in OPS]
    if bad or not args.ops:
        ap.error(f"--ops: expected names from {','.join(OPS)}, found {','.join(bad) or 'none'}")
    if args.factor < 2 or args.min_bytes > args.max_bytes or args.min_iters < 1 or args.max_iters < args.min_iters:
        ap.error("expected --factor >= 2, --min-bytes <= --max-bytes, 1 <= --min-iters <= --max-iters")
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return _rank_main(args)
    if args.nprocs < 1:
        ap.error("--nprocs must be >= 1")
    import torch.multiprocessing as mp
    mp.spawn(_spawned, args=(args.nprocs, _free_port(), args), nprocs=args.nprocs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
