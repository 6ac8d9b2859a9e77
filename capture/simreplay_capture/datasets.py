"""Dataset proxies installed by Recorder.wrap_dataset / wrap_loader."""
from __future__ import annotations

from typing import Any, Iterator

import torch.utils.data as tud

from . import worker_side as ws


def _stats_of(ds: Any) -> Any:
    fn = getattr(ds, "data_stats", None)
    if callable(fn):
        try:
            return fn()
        except Exception:
            return None
    return None


class CapturedDataset(tud.Dataset):
    """Map-style proxy: forwards len/attributes, times every __getitem__ (per-sample records)."""

    def __init__(self, dataset: Any, cfg: ws.ProxyConfig) -> None:
        self.__dict__["_ds"] = dataset
        self.__dict__["_cfg"] = cfg

    def __getitem__(self, idx: Any) -> Any:
        return ws.timed_getitem(self._cfg, self._ds, idx)

    def __len__(self) -> int:
        return len(self._ds)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_ds", "_cfg"):
            raise AttributeError(name)
        return getattr(self.__dict__["_ds"], name)

    def __getstate__(self) -> Any:
        return {"_ds": self._ds, "_cfg": self._cfg}

    def __setstate__(self, st: Any) -> None:
        self.__dict__.update(st)

    @property
    def captured_inner(self) -> Any:
        return self._ds


class CapturedDatasetItems(CapturedDataset):
    """Variant for datasets with __getitems__ (torch 2.x batched fetch): one call per batch; its time is
    spread evenly over the batch's samples, marked stages="unsplit"."""

    def __getitems__(self, idxs: Any) -> Any:
        import time
        plain = []
        for i in idxs:
            if isinstance(i, ws.Tagged):
                ws._LAST["epoch"], ws._LAST["batch"] = i.epoch, i.batch
                plain.append(i.value)
            else:
                plain.append(i)
        f0 = ws.thread_minflt()
        t0 = time.perf_counter_ns()
        c0 = time.thread_time_ns()
        try:
            out = self._ds.__getitems__(plain)
        except BaseException as e:
            ws.record_error(self._cfg, plain, e)
            raise
        t1, c1 = time.perf_counter_ns(), time.thread_time_ns()
        faults = ws.thread_minflt() - f0 if f0 >= 0 else -1
        n = max(1, len(plain))
        try:
            from .context import SampleContext
            for k, i in enumerate(plain):
                o = out[k] if k < len(out) else None
                rec = ws.sample_record(self._cfg, i, ws._LAST["epoch"], ws._LAST["batch"],
                                       t0 + k * (t1 - t0) // n, (t1 - t0) // n, (c1 - c0) // n,
                                       SampleContext(), o, faults // n if faults >= 0 else -1)
                ws.part_file(self._cfg.spool).write(rec)
        except Exception:
            pass
        return out


class CapturedIterableDataset(tud.IterableDataset):
    """IterableDataset proxy: times each next(); `batch` = per-worker sample count // batch_size,
    interleaved round-robin over workers (what the in-order DataLoader delivers for equal shards)."""

    def __init__(self, dataset: Any, cfg: ws.ProxyConfig, batch_size: int = 1) -> None:
        self.__dict__["_ds"] = dataset
        self.__dict__["_cfg"] = cfg
        self.__dict__["_bs"] = max(1, batch_size or 1)

    def __iter__(self) -> Iterator[Any]:
        import time
        from .context import SampleContext, set_current
        info = tud.get_worker_info()
        nw = info.num_workers if info is not None else 1
        wid = info.id if info is not None else 0
        it = iter(self._ds)
        k = 0
        while True:
            ctx = SampleContext()
            prev = set_current(ctx)
            f0 = ws.thread_minflt()
            c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
            try:
                out = next(it)
            except StopIteration:
                set_current(prev)
                return
            except BaseException as e:
                set_current(prev)
                ws.record_error(self._cfg, k, e)
                raise
            t1, c1 = time.perf_counter_ns(), time.thread_time_ns()
            faults = ws.thread_minflt() - f0 if f0 >= 0 else -1
            set_current(prev)
            batch = (k // self._bs) * nw + wid
            ws._LAST["batch"] = batch
            try:
                ws.part_file(self._cfg.spool).write(
                    ws.sample_record(self._cfg, k, ws._LAST["epoch"], batch, t0, t1 - t0, c1 - c0, ctx, out, faults))
            except Exception:
                pass
            k += 1
            yield out

    def __len__(self) -> int:
        return len(self._ds)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_ds", "_cfg", "_bs"):
            raise AttributeError(name)
        return getattr(self.__dict__["_ds"], name)

    def __getstate__(self) -> Any:
        return dict(self.__dict__)

    def __setstate__(self, st: Any) -> None:
        self.__dict__.update(st)


def make_proxy(dataset: Any, cfg: ws.ProxyConfig, batch_size: int = 1) -> Any:
    if isinstance(dataset, (CapturedDataset, CapturedIterableDataset)):
        return dataset
    if isinstance(dataset, tud.IterableDataset):
        return CapturedIterableDataset(dataset, cfg, batch_size)
    if callable(getattr(dataset, "__getitems__", None)):
        return CapturedDatasetItems(dataset, cfg)
    return CapturedDataset(dataset, cfg)
