"""Recorder: the one capture object of a training process (see docs/capture.md)."""
from __future__ import annotations

import atexit
import collections
import json
import os
import re
import shutil
import tempfile
import threading
import time
from typing import Any, Deque, Dict, List, Optional, Tuple

from . import manifest as mf
from . import procfs
from . import worker_side as ws
from .writer import TraceWriter

_perf = time.perf_counter_ns
_ACTIVE: Optional["Recorder"] = None

PUMP_INTERVAL_S = 0.25
SAMPLE_INTERVAL_S = 0.5
PSS_INTERVAL_S = 2.0  # smaps_rollup is ~1-5 ms per torch process: refresh PSS less often


def _first_tensor(obj: Any) -> Any:
    import torch
    stack = [obj]
    while stack:
        o = stack.pop(0)
        if isinstance(o, torch.Tensor):
            return o
        if isinstance(o, dict):
            stack.extend(o.values())
        elif isinstance(o, (list, tuple)):
            stack.extend(o)
    return None


def _loader_config(loader: Any) -> Dict[str, Any]:
    import torch.utils.data as tud
    sampler = getattr(loader, "sampler", None)
    ctx = getattr(loader, "multiprocessing_context", None)
    if ctx is not None and not isinstance(ctx, str):
        ctx = getattr(ctx, "_name", None) or type(ctx).__name__
    nw = int(loader.num_workers)
    pf = getattr(loader, "prefetch_factor", None)
    return {
        "num_workers": nw,
        "batch_size": loader.batch_size,
        "prefetch_factor": pf if nw > 0 else None,
        "pin_memory": bool(loader.pin_memory),
        "persistent_workers": bool(getattr(loader, "persistent_workers", False)),
        "drop_last": bool(loader.drop_last),
        "shuffle": isinstance(sampler, tud.RandomSampler),
        "timeout": loader.timeout,
        "multiprocessing_context": ctx,
        "in_order": getattr(loader, "in_order", True),
        "sampler": type(sampler).__name__ if sampler is not None else None,
        "dataset": type(getattr(loader.dataset, "captured_inner", loader.dataset)).__name__,
    }


class _StepCtx:
    __slots__ = ("rec", "micro_batches", "comm_ns", "extra", "t0", "cpu0", "ev0", "ev1")

    def __init__(self, rec: "Recorder", micro_batches: int, comm_ns: int, extra: Dict[str, Any]):
        self.rec = rec
        self.micro_batches = micro_batches
        self.comm_ns = comm_ns
        self.extra = extra
        self.ev0 = self.ev1 = None

    def __enter__(self) -> "_StepCtx":
        rec = self.rec
        rec._resolve_gpu(block=False)
        if rec._cuda:
            import torch
            self.ev0 = torch.cuda.Event(enable_timing=True)
            self.ev1 = torch.cuda.Event(enable_timing=True)
            self.ev0.record()
        self.t0 = _perf()
        self.cpu0 = time.thread_time_ns()
        return self

    def __exit__(self, *exc: Any) -> bool:
        t1 = _perf()
        cpu_ns = time.thread_time_ns() - self.cpu0
        rec = self.rec
        if self.ev1 is not None:
            self.ev1.record()
        n = rec._step_no
        rec._step_no += 1
        r = {"type": "step", "rank": rec.rank, "step": n, "t_start_ns": self.t0 - rec.t0,
             "compute_ns": max(0, t1 - self.t0 - int(self.comm_ns)), "comm_ns": int(self.comm_ns), "step_ns": t1 - self.t0,
             "micro_batches": int(self.micro_batches),
             # the loop thread's CPU time in the step (gloo's and the workers' threads are not in it)
             "cpu_ns": cpu_ns}
        if self.extra:
            r.update(self.extra)
        if self.ev0 is not None:
            rec._gpu_pending.append((r, self.ev0, self.ev1, "compute_ns"))
        else:
            rec._main_q.append(r)
        rec._ensure_header()
        return False


class Recorder:
    """Records one process's DataLoader pipeline into a v1 trace.

    Args:
        path: trace file (``.jsonl`` or ``.jsonl.gz``); with WORLD_SIZE>1 ``.rank<R>`` is inserted
            before ``.jsonl``.
        seed: the job's seed (recorded only; the recorder never touches any RNG).
        notes: free-form manifest notes.
        data_path: dataset root, for the storage manifest (else taken from the dataset's
            ``root``/``path``/``data_dir`` attribute).
        hash_samples: record a sampled content hash per sample (cheap, see docs).
        model_revision, dataset_revision: what the user declares (a git hash, a hub revision, a tag),
            recorded as given in the manifest's ``revisions`` (docs/manifest.md).
        hash_dataset_files: hash the dataset's file list (one stat per file, once, when the loader is
            wrapped, before the first batch); False skips it on a store too large to walk.
    """

    def __init__(self, path: str, seed: Optional[int] = None, notes: Optional[Dict[str, Any]] = None,
                 data_path: Optional[str] = None, hash_samples: bool = True,
                 sample_interval_s: float = SAMPLE_INTERVAL_S, model_revision: Optional[str] = None,
                 dataset_revision: Optional[str] = None, hash_dataset_files: bool = True) -> None:
        global _ACTIVE
        ident = mf.identity()
        self.rank = ident["rank"]
        self.path = mf.rank_path(path, ident["rank"], ident["world_size"])
        self.t0 = _perf()
        self._t0_time_ns = time.time_ns()
        self.seed = seed
        self._notes = dict(notes or {})
        # manifest keys added by companions (distributed.DistributedCapture) before the header is written
        self.manifest_extra: Dict[str, Any] = {}
        self._data_path = data_path
        self._revisions = (model_revision, dataset_revision, hash_dataset_files)
        self._data_stats: Any = None
        self._loader_cfg: Optional[Dict[str, Any]] = None
        self._hash = hash_samples
        self._sample_interval_s = sample_interval_s
        self._spool = tempfile.mkdtemp(prefix="simreplay-capture-")
        self.cfg = ws.ProxyConfig(self._spool, self.t0, self.rank, hash_samples)
        self._writer = TraceWriter(self.path)
        self._header_done = False
        self._header_lock = threading.Lock()
        self._main_q: Deque[Dict[str, Any]] = collections.deque()
        self._gpu_pending: List[Tuple[Dict[str, Any], Any, Any, str]] = []
        self._pending_batch: Optional[Dict[str, Any]] = None
        self._step_no = 0
        self._workers: Dict[int, int] = {}  # worker id -> pid
        self._loaders = 0
        self._closed = False
        self._pin_times: Dict[int, int] = {}
        self._pin_patch: Optional[Tuple[Any, Any]] = None
        try:
            import torch
            self._cuda = bool(torch.cuda.is_available())
        except ImportError:
            self._cuda = False
        # pump state (pump thread only)
        self._offsets: Dict[str, int] = {}
        self._partial: Dict[str, bytes] = {}
        self._collates: Dict[Tuple[int, int], Dict[str, Any]] = {}
        self._mains: Dict[Tuple[int, int], Dict[str, Any]] = {}
        self._observed: Dict[str, Any] = {"indices": set(), "bytes": 0, "mix": {}}
        self._mem_peak = 0
        self._last_sample = 0.0
        self._pss_last = 0.0
        self._pss: Dict[int, Tuple[int, int]] = {}
        self._stop = threading.Event()
        self._pump_lock = threading.Lock()
        self._thread = threading.Thread(target=self._pump_loop, name="simreplay-capture", daemon=True)
        self._thread.start()
        _ACTIVE = self
        atexit.register(self.close)

    # ------------------------------------------------------------------ user API
    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.close()
        return False

    def wrap_dataset(self, dataset: Any, batch_size: int = 1) -> Any:
        from .datasets import make_proxy, _stats_of
        if self._data_stats is None:
            self._data_stats = _stats_of(dataset)
        if self._data_path is None:
            for a in ("root", "data_dir", "path", "root_dir"):
                v = getattr(dataset, a, None)
                if isinstance(v, (str, os.PathLike)):
                    self._data_path = os.fspath(v)
                    break
        return make_proxy(dataset, self.cfg, batch_size)

    def wrap_loader(self, loader: Any) -> "CapturedLoader":
        """Rebuild `loader` with the same arguments plus the capture wrappers (see docs/capture.md)."""
        import torch.utils.data as tud
        from .datasets import CapturedDataset, CapturedIterableDataset
        ds = loader.dataset
        if not isinstance(ds, (CapturedDataset, CapturedIterableDataset)):
            ds = self.wrap_dataset(ds, loader.batch_size or 1)
        kw: Dict[str, Any] = dict(
            num_workers=loader.num_workers, collate_fn=ws.CollateWrapper(loader.collate_fn, self.cfg),
            pin_memory=loader.pin_memory, timeout=loader.timeout, worker_init_fn=loader.worker_init_fn,
            multiprocessing_context=loader.multiprocessing_context, generator=loader.generator,
            persistent_workers=getattr(loader, "persistent_workers", False),
        )
        if loader.num_workers > 0 and getattr(loader, "prefetch_factor", None) is not None:
            kw["prefetch_factor"] = loader.prefetch_factor
        pmd = getattr(loader, "pin_memory_device", "")
        if pmd:
            kw["pin_memory_device"] = pmd
        if hasattr(loader, "in_order"):
            kw["in_order"] = loader.in_order
        if isinstance(ds, CapturedIterableDataset):
            kw.update(batch_size=loader.batch_size, drop_last=loader.drop_last)
        elif loader.batch_sampler is not None:
            kw["batch_sampler"] = ws.TagBatchSampler(loader.batch_sampler, batched=True)
        else:
            kw.update(batch_size=None, sampler=ws.TagBatchSampler(loader.sampler, batched=False))
        new = tud.DataLoader(ds, **kw)
        tagger = kw.get("batch_sampler") or kw.get("sampler")
        cfg = _loader_config(loader)
        self._loaders += 1
        if self._loader_cfg is None:
            self._loader_cfg = cfg
        else:
            self._main_q.append({"type": "event", "t_ns": _perf() - self.t0, "kind": "loader",
                                 "loader": self._loaders - 1, "config": cfg})
        if loader.pin_memory and self._cuda:
            self._install_pin_patch()
        self._ensure_header()
        return CapturedLoader(self, new, cfg, tagger)

    def step(self, micro_batches: int = 1, comm_ns: int = 0, **extra: Any) -> _StepCtx:
        """Context manager around one training step (CUDA events when on a GPU, else wall time)."""
        return _StepCtx(self, micro_batches, comm_ns, extra)

    def to_device(self, batch: Any, device: Any, non_blocking: bool = True) -> Any:
        """Move a batch to `device`, recording h2d_ns/h2d_bytes on the batch just delivered."""
        import torch
        nbytes = [0]

        def move(o: Any) -> Any:
            if isinstance(o, torch.Tensor):
                nbytes[0] += o.element_size() * o.nelement()
                return o.to(device, non_blocking=non_blocking)
            if isinstance(o, dict):
                return type(o)((k, move(v)) for k, v in o.items()) if type(o) is dict else {k: move(v) for k, v in o.items()}
            if isinstance(o, (list, tuple)):
                moved = [move(v) for v in o]
                return type(o)(moved) if type(o) in (list, tuple) else moved
            return o

        dev = torch.device(device)
        b = self._pending_batch
        if dev.type == "cuda" and self._cuda:
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            out = move(batch)
            e1.record()
            if b is not None:
                b["h2d_bytes"] += nbytes[0]
                b.setdefault("_h2d_events", []).append((e0, e1))
            return out
        return move(batch)

    def note_data(self, **stats: Any) -> None:
        """Declare data volume and mix for the manifest: files=, bytes=, mix={format: count}."""
        self._data_stats = dict(self._data_stats or {}, **stats)

    def close(self) -> None:
        global _ACTIVE
        if self._closed:
            return
        self._closed = True
        self._finish_batch()
        self._resolve_gpu(block=True)
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self._ensure_header()
        with self._pump_lock:
            self._pump_once(final=True)
            obs = self._observed
            self._writer.add({"type": "footer", "records": self._writer.records + 1,
                              "data_observed": {"files": len(obs["indices"]), "bytes": obs["bytes"],
                                                "mix": obs["mix"]},
                              "mem_peak_bytes": self._mem_peak, "steps": self._step_no,
                              "t_ns": _perf() - self.t0})
            self._writer.close()
        if self._pin_patch is not None:
            mod, orig = self._pin_patch
            mod.pin_memory = orig
            self._pin_patch = None
        shutil.rmtree(self._spool, ignore_errors=True)
        if _ACTIVE is self:
            _ACTIVE = None
        try:
            atexit.unregister(self.close)
        except Exception:
            pass

    @property
    def mem_peak_bytes(self) -> int:
        return self._mem_peak

    # ------------------------------------------------------------------ internals
    def _ensure_header(self) -> None:
        if self._header_done:
            return
        with self._header_lock:
            if self._header_done:
                return
            model_rev, data_rev, hash_files = self._revisions
            m = mf.base_manifest(self.t0, self._data_path, model_rev, data_rev, hash_files)
            m["t0_time_ns"] = self._t0_time_ns
            m["accelerator"] = "cuda" if self._cuda else "emulated"
            m["loader"] = self._loader_cfg
            m["seeds"] = {"seed": self.seed}
            m["data"] = self._data_stats
            m["notes"] = self._notes
            m["per_sample_costs"] = "measured"
            m["sample_hash"] = "blake2b-64 of shape/dtype + first/middle/last 4 KiB per tensor" \
                if self._hash else None
            m.update(self.manifest_extra)
            self._writer.write_header({"type": "header", "schema": "simreplay.trace/1", "manifest": m})
            self._header_done = True

    def _register_workers(self, it: Any) -> None:
        try:
            for i, p in enumerate(getattr(it, "_workers", []) or []):
                if p.pid is not None:
                    self._workers[i] = p.pid
        except Exception:
            pass

    def _begin_batch(self, epoch: int, batch: int, t_next: int, wait: int, obj: Any) -> None:
        self._finish_batch()
        pin = 0
        if self._pin_times:
            t = _first_tensor(obj)
            if t is not None:
                pin = self._pin_times.pop(t.data_ptr(), 0)
        self._pending_batch = {"type": "batch", "rank": self.rank, "epoch": epoch, "batch": batch,
                               "wait_ns": wait, "t_next_start_ns": t_next - self.t0, "pin_ns": pin,
                               "h2d_ns": 0, "h2d_bytes": 0}

    def _finish_batch(self) -> None:
        b = self._pending_batch
        if b is None:
            return
        self._pending_batch = None
        ev = b.pop("_h2d_events", None)
        if ev:
            self._gpu_pending.append((b, ev, None, "h2d_ns"))
        else:
            self._main_q.append(b)

    def _resolve_gpu(self, block: bool) -> None:
        if not self._gpu_pending:
            return
        keep = []
        for item in self._gpu_pending:
            r, e0, e1, field = item
            pairs = e0 if isinstance(e0, list) else [(e0, e1)]
            try:
                if not block and not all(p[1].query() for p in pairs):
                    keep.append(item)
                    continue
                total = 0
                for a, z in pairs:
                    z.synchronize()
                    total += int(a.elapsed_time(z) * 1e6)
                r[field] = max(0, total)
            except Exception:
                pass
            self._main_q.append(r)
        self._gpu_pending = keep

    def _install_pin_patch(self) -> None:
        if self._pin_patch is not None:
            return
        try:
            from torch.utils.data._utils import pin_memory as pm  # private: guarded
            orig = pm.pin_memory
            times = self._pin_times

            def timed_pin(data: Any, *a: Any, **k: Any) -> Any:
                t0 = _perf()
                out = orig(data, *a, **k)
                try:
                    t = _first_tensor(out)
                    if t is not None and len(times) < 10000:
                        times[t.data_ptr()] = _perf() - t0
                except Exception:
                    pass
                return out

            pm.pin_memory = timed_pin
            self._pin_patch = (pm, orig)
        except Exception:
            self._pin_patch = None

    # ------------------------------------------------------------------ pump thread
    def _pump_loop(self) -> None:
        while not self._stop.wait(PUMP_INTERVAL_S):
            try:
                with self._pump_lock:
                    self._pump_once(final=False)
            except Exception:
                pass

    def _pump_once(self, final: bool) -> None:
        now = time.monotonic()
        if final or now - self._last_sample >= self._sample_interval_s:
            self._last_sample = now
            self._sample_resources()
        self._read_parts()
        while self._main_q:
            r = self._main_q.popleft()
            if r.get("type") == "batch":
                self._join(mains=r)
            else:
                self._writer.add(r)
        if final:
            for key, m in sorted(self._mains.items()):
                # delivered, but its worker's collate record never reached disk (worker killed)
                m.update(worker=-1, size=0, collate_ns=0, t_ready_ns=m["t_next_start_ns"] + m["wait_ns"],
                         joined=False)
                self._writer.add(m)
            self._mains.clear()
        if self._header_done:
            self._writer.flush()

    def _join(self, mains: Optional[Dict[str, Any]] = None, coll: Optional[Dict[str, Any]] = None) -> None:
        if mains is not None:
            key = (mains["epoch"], mains["batch"])
            c = self._collates.pop(key, None)
            if c is None:
                self._mains[key] = mains
                return
        else:
            key = (coll["epoch"], coll["batch"])
            mains = self._mains.pop(key, None)
            if mains is None:
                self._collates[key] = coll
                return
            c = coll
        mains.update(worker=c["worker"], size=c["size"], collate_ns=c["collate_ns"],
                     t_ready_ns=c["t_ready_ns"], bytes=c["bytes"])
        self._writer.add(mains)

    def _read_parts(self) -> None:
        try:
            names = sorted(n for n in os.listdir(self._spool) if n.endswith(".jsonl"))
        except OSError:
            return
        for n in names:
            p = os.path.join(self._spool, n)
            off = self._offsets.get(n, 0)
            try:
                with open(p, "rb") as f:
                    f.seek(off)
                    data = f.read()
            except OSError:
                continue
            if not data:
                continue
            self._offsets[n] = off + len(data)
            data = self._partial.pop(n, b"") + data
            cut = data.rfind(b"\n") + 1
            if cut < len(data):
                self._partial[n] = data[cut:]
            for line in data[:cut].splitlines():
                self._route(line)

    def _route(self, line: bytes) -> None:
        try:
            r = json.loads(line)
        except ValueError:
            return
        t = r.get("type")
        if t == "_collate":
            self._join(coll=r)
            return
        if t == "sample":
            obs = self._observed
            if r["index"] not in obs["indices"]:
                obs["indices"].add(r["index"])
                obs["bytes"] += r["read_bytes"]
                obs["mix"][r["format"]] = obs["mix"].get(r["format"], 0) + 1
        self._writer.add_line(line + b"\n")

    def _sample_resources(self) -> None:
        t = _perf() - self.t0
        procs = [(-1, os.getpid())] + sorted(self._workers.items())
        now = time.monotonic()
        fresh = now - self._pss_last >= PSS_INTERVAL_S
        if fresh:
            self._pss_last = now
        for wid, pid in procs:
            s = procfs.proc_sample(pid, with_pss=fresh or pid not in self._pss)
            if s is None:
                continue
            if s["pss_bytes"] >= 0:
                self._pss[pid] = (s["pss_bytes"], t)
            pss, pss_t = self._pss.get(pid, (max(0, s["rss_bytes"]), t))
            s["pss_bytes"] = pss
            s["rss_bytes"] = max(0, s["rss_bytes"])
            self._writer.add({"type": "worker", "rank": self.rank, "worker": wid, "pid": pid, "t_ns": t,
                              "pss_t_ns": pss_t, **s})
        used, total, busy = procfs.host_sample()
        self._mem_peak = max(self._mem_peak, used)
        self._writer.add({"type": "host", "t_ns": t, "mem_used_bytes": used, "cpu_busy_ns": busy,
                          "mem_total_bytes": total, "mem_peak_bytes": self._mem_peak})


_CRASH_WORKER = re.compile(r"worker process (\d+)")
_CRASH_PID = re.compile(r"pid\(?s?\)?\s*([0-9, ]+)")


class CapturedLoader:
    """Iterable returned by Recorder.wrap_loader: times iter() and every next() (the data wait)."""

    def __init__(self, rec: Recorder, loader: Any, cfg: Dict[str, Any], tagger: Any = None) -> None:
        self.rec = rec
        self._tagger = tagger
        self.loader = loader
        self.config = cfg
        self.epoch = -1

    def __len__(self) -> int:
        return len(self.loader)

    def __getattr__(self, name: str) -> Any:
        if name in ("loader", "rec", "config", "epoch", "_tagger"):
            raise AttributeError(name)
        return getattr(self.loader, name)

    def __iter__(self):
        self.epoch += 1
        return self._gen(self.epoch)

    def _gen(self, epoch: int):
        rec = self.rec
        if self._tagger is not None:
            self._tagger.epoch = epoch
        ws._LAST["epoch"] = epoch  # num_workers=0 / iterable datasets in the main process
        t0 = _perf()
        it = iter(self.loader)
        t1 = _perf()
        rec._register_workers(it)
        rec._main_q.append({"type": "event", "t_ns": t0 - rec.t0, "kind": "epoch_start", "epoch": epoch,
                            "iter_ns": t1 - t0, "workers": dict((str(k), v) for k, v in rec._workers.items())})
        b = 0
        crashed = False
        try:
            while True:
                ts = _perf()
                try:
                    batch = next(it)
                except StopIteration:
                    break
                except Exception as e:
                    crashed = True
                    self._crash(e, it)
                    raise
                te = _perf()
                rec._begin_batch(epoch, b, ts, te - ts, batch)
                b += 1
                yield batch
        finally:
            rec._finish_batch()
            if not crashed:
                # torch's SIGCHLD handler can raise "worker ... killed by signal" in whatever frame runs,
                # e.g. the user's loop body, where the except above never sees it: look for dead workers.
                self._record_dead_workers(it)
            rec._main_q.append({"type": "event", "t_ns": _perf() - rec.t0, "kind": "epoch_end",
                                "epoch": epoch, "batches": b})
            del it

    def _record_dead_workers(self, it: Any) -> None:
        rec = self.rec
        for wid, proc in enumerate(getattr(it, "_workers", None) or []):  # private: guarded
            code = getattr(proc, "exitcode", None)
            if code is None:
                # not reaped yet: a registered worker that is gone or a zombie died all the same
                pid = getattr(proc, "pid", None)
                if pid and procfs.is_gone(pid):
                    code = -9999
            if code is None or code == 0:
                continue
            how = ("died" if code == -9999 else f"killed by signal {-code}") if code < 0 else f"exit code {code}"
            rec._main_q.append({"type": "event", "t_ns": _perf() - rec.t0, "kind": "worker_crash",
                                "rank": rec.rank, "worker": wid, "pid": getattr(proc, "pid", 0) or 0,
                                "message": f"DataLoader worker {wid} exited unexpectedly ({how})"})

    def _crash(self, e: BaseException, it: Any) -> None:
        rec = self.rec
        msg = f"{type(e).__name__}: {e}"
        wid, pid = -1, 0
        m = _CRASH_WORKER.search(msg)
        if m:
            wid = int(m.group(1))
            pid = rec._workers.get(wid, 0)
        else:
            m = _CRASH_PID.search(msg)
            if m:
                try:
                    pid = int(m.group(1).split(",")[0].strip())
                    wid = next((w for w, p in rec._workers.items() if p == pid), -1)
                except ValueError:
                    pass
        if pid == 0:
            # e.g. ConnectionResetError while receiving a tensor from a worker that just died:
            # find the registered worker that is gone or a zombie. The error can reach us while the
            # dying process is still tearing down (not yet a zombie), so look again for up to 1 s.
            for _ in range(50):
                for w, p in sorted(rec._workers.items()):
                    if procfs.is_gone(p):
                        wid, pid = w, p
                        break
                if pid:
                    break
                time.sleep(0.02)
        rec._main_q.append({"type": "event", "t_ns": _perf() - rec.t0, "kind": "worker_crash",
                            "rank": rec.rank, "worker": wid, "pid": pid, "message": msg[:4000]})
        rec._ensure_header()
        with rec._pump_lock:  # make the crash durable right away
            rec._pump_once(final=False)
