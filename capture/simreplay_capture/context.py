"""Per-process sample context: sc.stage() / sc.note() inside Dataset.__getitem__.

DataLoader workers run one sample at a time on one thread, so one module-level slot per process is
enough; outside a captured __getitem__ both calls are nearly free no-ops.
"""
from __future__ import annotations

import time
from typing import Any, Dict, Optional

_perf = time.perf_counter_ns


class SampleContext:
    __slots__ = ("stages", "notes")

    def __init__(self) -> None:
        self.stages: Dict[str, int] = {}
        self.notes: Dict[str, Any] = {}


_CURRENT: Optional[SampleContext] = None


def set_current(ctx: Optional[SampleContext]) -> Optional[SampleContext]:
    global _CURRENT
    prev, _CURRENT = _CURRENT, ctx
    return prev


class _Stage:
    __slots__ = ("name", "ctx", "t0")

    def __init__(self, name: str, ctx: SampleContext) -> None:
        self.name = name
        self.ctx = ctx
        self.t0 = 0

    def __enter__(self) -> "_Stage":
        self.t0 = _perf()
        return self

    def __exit__(self, *exc: Any) -> bool:
        d = _perf() - self.t0
        st = self.ctx.stages
        st[self.name] = st.get(self.name, 0) + d
        return False


class _NullStage:
    __slots__ = ()

    def __enter__(self) -> "_NullStage":
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False


_NULL = _NullStage()


def stage(name: str):
    """Time a stage ("read", "decode", "augment"; others are kept under `stage_ns`) of the current sample."""
    ctx = _CURRENT
    if ctx is None:
        return _NULL
    return _Stage(name, ctx)


def note(**fields: Any) -> None:
    """Attach facts to the current sample: read_bytes, width, height, frames, format, tokens (the
    sample's sequence length, a non-negative int: becomes the sample record's `tokens` field), or
    anything else (kept under the record's `notes`)."""
    ctx = _CURRENT
    if ctx is not None:
        ctx.notes.update(fields)
