"""Reader and validator for trace format v1 (docs/trace-format.md)."""
from __future__ import annotations

import json
import math
import warnings
import zlib
from typing import Any, Dict, Iterator, List, Optional, Tuple

SCHEMA = "simreplay.trace/1"
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


class TraceError(ValueError):
    """A trace that violates the v1 validation rules; message is FILE:LINE: text."""


# field -> (type, may_be_negative). "int" excludes bool.
_SAMPLE = {
    "rank": ("int", False), "epoch": ("int", False), "index": ("int", False), "batch": ("int", False),
    "worker": ("int", True), "t_start_ns": ("int", False), "read_ns": ("int", False),
    "decode_ns": ("int", False), "augment_ns": ("int", False), "read_bytes": ("int", False),
    "out_bytes": ("int", False), "format": ("str", False), "width": ("int", False),
    "height": ("int", False), "frames": ("int", False),
}
_SAMPLE_OPT = {"stages": ("str", False), "cpu_ns": ("int", False), "hash": ("str", False),
               "tokens": ("int", False), "minflt": ("int", False)}
_BATCH = {
    "rank": ("int", False), "epoch": ("int", False), "batch": ("int", False), "worker": ("int", True),
    "size": ("int", False), "collate_ns": ("int", False), "t_ready_ns": ("int", False),
    "wait_ns": ("int", False), "pin_ns": ("int", False), "h2d_ns": ("int", False),
    "h2d_bytes": ("int", False),
}
_BATCH_OPT = {"t_next_start_ns": ("int", False), "bytes": ("int", False)}
_STEP = {
    "rank": ("int", False), "step": ("int", False), "t_start_ns": ("int", False),
    "compute_ns": ("int", False), "comm_ns": ("int", False), "step_ns": ("int", False),
    "micro_batches": ("int", False),
}
_WORKER = {
    "rank": ("int", False), "worker": ("int", True), "pid": ("int", False), "t_ns": ("int", False),
    "rss_bytes": ("int", False), "pss_bytes": ("int", False), "cpu_ns": ("int", False),
    "io_read_bytes": ("int", False),
}
_HOST = {"t_ns": ("int", False), "mem_used_bytes": ("int", False), "cpu_busy_ns": ("int", False)}
_HOST_OPT = {"mem_total_bytes": ("int", False), "mem_peak_bytes": ("int", False)}
_EVENT = {"t_ns": ("int", False), "kind": ("str", False)}
_FOOTER = {"records": ("int", False)}
_COLLECTIVE = {
    "rank": ("int", False), "step": ("int", True), "op": ("str", False), "bytes": ("int", False),
    "t_start_ns": ("int", False), "duration_ns": ("int", False), "world_size": ("int", False),
}
_COLLECTIVE_OPT = {"via": ("str", False), "peer": ("int", False), "bucket": ("int", False)}

RULES: Dict[str, Tuple[dict, dict]] = {
    "sample": (_SAMPLE, _SAMPLE_OPT), "batch": (_BATCH, _BATCH_OPT), "step": (_STEP, {}),
    "worker": (_WORKER, {}), "host": (_HOST, _HOST_OPT), "event": (_EVENT, {}), "footer": (_FOOTER, {}),
    "collective": (_COLLECTIVE, _COLLECTIVE_OPT),
}


class Trace:
    """A parsed trace: header manifest, records grouped by type, warnings, and whether it closed cleanly."""

    def __init__(self, path: str, header: dict, records: List[dict], warns: List[str]):
        self.path = path
        self.header = header
        self.manifest: dict = header.get("manifest", {})
        self.records = records
        self.warnings = warns

    def of(self, rtype: str) -> List[dict]:
        return [r for r in self.records if r.get("type") == rtype]

    @property
    def complete(self) -> bool:
        return any(r.get("type") == "footer" for r in self.records)


def _raw_bytes(path: str, warns: List[str]) -> bytes:
    with open(path, "rb") as f:
        data = f.read()
    if not path.endswith(".gz"):
        return data
    out: List[bytes] = []
    while data:
        d = zlib.decompressobj(31)
        try:
            out.append(d.decompress(data))
        except zlib.error:
            # a corrupt (partially written) member: keep what came before it
            warns.append(f"{path}: truncated gzip stream")
            break
        if not d.eof:
            warns.append(f"{path}: truncated gzip stream")
            break
        data = d.unused_data
    return b"".join(out)


def _check_number(v: Any, where: str, name: str) -> None:
    if isinstance(v, float) and not math.isfinite(v):
        raise TraceError(f"{where}: field '{name}' is not a finite number")
    if isinstance(v, int) and not isinstance(v, bool) and not INT64_MIN <= v <= INT64_MAX:
        raise TraceError(f"{where}: field '{name}' does not fit in int64")


def _walk_numbers(v: Any, where: str, name: str) -> None:
    if isinstance(v, dict):
        for k, x in v.items():
            _walk_numbers(x, where, f"{name}.{k}" if name else k)
    elif isinstance(v, list):
        for x in v:
            _walk_numbers(x, where, name)
    else:
        _check_number(v, where, name)


def _check_fields(rec: dict, fields: dict, required: bool, where: str) -> None:
    rtype = rec["type"]
    for name, (kind, neg_ok) in fields.items():
        if name not in rec:
            if required:
                raise TraceError(f"{where}: {rtype} record is missing required field '{name}'")
            continue
        v = rec[name]
        if kind == "int":
            if isinstance(v, bool) or not isinstance(v, int):
                raise TraceError(f"{where}: field '{name}' must be an integer, got {type(v).__name__}")
            if v < 0 and not (neg_ok and v == -1):
                raise TraceError(f"{where}: field '{name}' is negative ({v})")
        elif kind == "str" and not isinstance(v, str):
            raise TraceError(f"{where}: field '{name}' must be a string, got {type(v).__name__}")


def _reject_constant(c: str) -> float:
    raise ValueError(f"non-finite number {c}")


def validate_record(rec: Any, where: str) -> None:
    if not isinstance(rec, dict):
        raise TraceError(f"{where}: line is not a JSON object")
    _walk_numbers(rec, where, "")
    rtype = rec.get("type")
    if not isinstance(rtype, str):
        raise TraceError(f"{where}: record has no 'type'")
    rule = RULES.get(rtype)
    if rule is None:
        return
    _check_fields(rec, rule[0], True, where)
    _check_fields(rec, rule[1], False, where)


def iter_lines(path: str, warns: List[str]) -> Iterator[Tuple[int, Optional[dict]]]:
    data = _raw_bytes(path, warns)
    lines = data.split(b"\n")
    last_complete = data.endswith(b"\n")
    if last_complete:
        lines.pop()  # the empty string after the final newline
    for i, raw in enumerate(lines, start=1):
        where = f"{path}:{i}"
        is_last = i == len(lines)
        try:
            rec = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
        except (ValueError, UnicodeDecodeError) as e:
            if is_last and not last_complete:
                warns.append(f"{where}: truncated final line ignored")
                return
            if "non-finite" in str(e):
                raise TraceError(f"{where}: NaN or infinite number") from None
            raise TraceError(f"{where}: malformed JSON ({e})") from None
        yield i, rec


def read_trace(path: str, warn: bool = True) -> Trace:
    """Read and validate one trace; raises TraceError ("FILE:LINE: message") on the first violation."""
    warns: List[str] = []
    header: Optional[dict] = None
    records: List[dict] = []
    unknown: set = set()
    for lineno, rec in iter_lines(path, warns):
        where = f"{path}:{lineno}"
        if header is None:
            if not isinstance(rec, dict) or rec.get("type") != "header":
                raise TraceError(f"{where}: first line is not a header")
            if rec.get("schema") != SCHEMA:
                raise TraceError(f"{where}: wrong schema version {rec.get('schema')!r} (expected {SCHEMA})")
            if not isinstance(rec.get("manifest", {}), dict):
                raise TraceError(f"{where}: manifest must be an object")
            _walk_numbers(rec, where, "")
            header = rec
            continue
        validate_record(rec, where)
        rtype = rec["type"]
        if rtype not in RULES:
            if rtype not in unknown:
                unknown.add(rtype)
                warns.append(f"{where}: unknown record type '{rtype}' skipped")
            continue
        records.append(rec)
    if header is None:
        raise TraceError(f"{path}:1: first line is not a header")
    if warn:
        for w in warns:
            warnings.warn(w)
    return Trace(path, header, records, warns)
