"""Preflight checkpoints: one torch.save file per rank plus a manifest written last.

Layout: CKPT/step-<S>/rank<R>.pt and CKPT/step-<S>/manifest.json
(`simreplay.preflight.checkpoint/1`: step, world_size, files {name: {bytes, sha256}}). Every file
goes to `NAME.tmp`, is fsynced and renamed, so a reader never sees half a file under its final
name; a directory without the manifest is a save that did not complete.
"""
from __future__ import annotations

import collections
import copy
import glob
import hashlib
import io
import json
import os
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

CKPT_SCHEMA = "simreplay.preflight.checkpoint/1"


class CheckpointError(Exception):
    """A missing, incomplete, truncated or corrupted checkpoint: one line, `WHAT: expected ..., found ...`."""


def step_dir(root: str, step: int, suffix: str = "") -> str:
    return os.path.join(root, f"step-{step}{suffix}")


def rank_file(rank: int) -> str:
    return f"rank{rank}.pt"


def to_cpu(obj: Any) -> Any:
    """A deep copy of a state tree with every tensor copied to host memory (the staging copy)."""
    import torch
    if isinstance(obj, torch.Tensor):
        return obj.detach().to("cpu", copy=True)
    if isinstance(obj, dict):
        out = collections.OrderedDict() if isinstance(obj, collections.OrderedDict) else {}
        for k, v in obj.items():
            out[k] = to_cpu(v)
        meta = getattr(obj, "_metadata", None)  # module state_dict versions, used by load_state_dict
        if meta is not None and isinstance(out, collections.OrderedDict):
            out._metadata = copy.deepcopy(meta)  # type: ignore[attr-defined]
        return out
    if isinstance(obj, list):
        return [to_cpu(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(to_cpu(v) for v in obj)
    return obj


def _fsync_dir(d: str) -> None:
    fd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file_atomic(path: str, write: Callable[[Any], None]) -> int:
    """Write through `write(fileobj)` to PATH.tmp, fsync, rename. Returns the bytes written."""
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
            n = f.tell()
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(os.path.dirname(path) or ".")
    return n


def save_rank_file(path: str, staged: Dict[str, Any]) -> Tuple[int, str]:
    """torch.save a staged (host memory) state to `path` atomically; returns (bytes, sha256)."""
    import torch
    h = hashlib.sha256()

    class _Hashing(io.RawIOBase):
        def __init__(self, f: Any) -> None:
            self.f = f

        def writable(self) -> bool:
            return True

        def write(self, b: Any) -> int:
            h.update(b)
            return self.f.write(b)

    def w(f: Any) -> None:
        torch.save(staged, _Hashing(f))

    n = write_file_atomic(path, w)
    return n, h.hexdigest()


def write_manifest(d: str, step: int, world_size: int, files: Dict[str, Dict[str, Any]]) -> None:
    doc = {"schema": CKPT_SCHEMA, "step": step, "world_size": world_size, "files": files}
    data = (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()
    write_file_atomic(os.path.join(d, "manifest.json"), lambda f: f.write(data))


class AsyncSave:
    """Stage (copy to host memory) in the caller's thread, then write from a background thread.

    torch 1.13 has no torch.distributed.checkpoint.async_save (torch >= 2.3); this is the same idea:
    the training thread is blocked only for the copy.
    """

    def __init__(self, path: str, state: Dict[str, Any]) -> None:
        t0 = time.perf_counter()
        self.staged = to_cpu(state)
        self.t_start = t0
        self.blocking_s = time.perf_counter() - t0
        self.result: Optional[Tuple[int, str]] = None
        self.error: Optional[BaseException] = None
        self.t_end = 0.0
        self._thread = threading.Thread(target=self._run, args=(path,), daemon=True)
        self._thread.start()

    def _run(self, path: str) -> None:
        try:
            self.result = save_rank_file(path, self.staged)
        except BaseException as e:  # reported by wait()
            self.error = e
        self.t_end = time.perf_counter()

    def wait(self) -> Tuple[int, str]:
        self._thread.join()
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result

    @property
    def total_s(self) -> float:
        return self.t_end - self.t_start


def resolve_dir(path: str) -> str:
    """PATH is a step directory, or a root holding step-<S> directories (the newest is used)."""
    if os.path.exists(os.path.join(path, "manifest.json")) or glob.glob(os.path.join(path, "rank*.pt*")):
        return path
    if not os.path.isdir(path):
        raise CheckpointError(f"{path}: expected a checkpoint directory, found "
                              f"{'a file' if os.path.exists(path) else 'nothing'}")
    steps = []
    for d in glob.glob(os.path.join(path, "step-*")):
        tail = os.path.basename(d)[5:]
        if tail.isdigit():
            steps.append((int(tail), d))
    if not steps:
        raise CheckpointError(f"{path}: expected step-<S> checkpoint directories, found none")
    return max(steps)[1]


def read_manifest(d: str) -> Dict[str, Any]:
    mp = os.path.join(d, "manifest.json")
    if not os.path.exists(mp):
        raise CheckpointError(f"{mp}: expected the checkpoint manifest (written last by a completed save), "
                              "found no file: the save did not complete")
    with open(mp, "rb") as f:
        raw = f.read()
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise CheckpointError(f"{mp}:1: expected UTF-8 JSON, found undecodable byte at offset {e.start}") from None
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{mp}:{e.lineno}: expected JSON, found {e.msg}") from None
    if not isinstance(doc, dict) or doc.get("schema") != CKPT_SCHEMA:
        found = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise CheckpointError(f"{mp}:1: expected schema {CKPT_SCHEMA!r}, found {found!r}")
    files = doc.get("files")
    if not isinstance(files, dict) or not files:
        raise CheckpointError(f"{mp}:1: expected a non-empty 'files' object, found {files!r}")
    for name, meta in files.items():
        if (not isinstance(meta, dict) or not isinstance(meta.get("bytes"), int) or meta["bytes"] < 0
                or not isinstance(meta.get("sha256"), str) or len(meta["sha256"]) != 64):
            raise CheckpointError(f"{mp}:1: expected files[{name!r}] = {{bytes: int >= 0, sha256: 64 hex}}, "
                                  f"found {meta!r}")
    for key in ("step", "world_size"):
        if not isinstance(doc.get(key), int) or doc[key] < 0:
            raise CheckpointError(f"{mp}:1: expected '{key}' to be an integer >= 0, found {doc.get(key)!r}")
    return doc


def read_verified(d: str, name: str, manifest: Dict[str, Any],
                  timing: Optional[Dict[str, float]] = None) -> bytes:
    """The bytes of one checkpoint file after checking its size and sha256 against the manifest.
    `timing`, when given, receives `read_s`: the read alone, without the hashing."""
    meta = manifest["files"].get(name)
    p = os.path.join(d, name)
    if meta is None:
        raise CheckpointError(f"{os.path.join(d, 'manifest.json')}:1: expected an entry for {name}, "
                              f"found only {sorted(manifest['files'])}")
    if not os.path.exists(p):
        raise CheckpointError(f"{p}: expected {meta['bytes']} bytes, found no file")
    t0 = time.perf_counter()
    with open(p, "rb") as f:
        data = f.read()
    if timing is not None:
        timing["read_s"] = time.perf_counter() - t0
    if len(data) != meta["bytes"]:
        what = "truncated" if len(data) < meta["bytes"] else "longer than saved"
        raise CheckpointError(f"{p}: expected {meta['bytes']} bytes, found {len(data)} bytes ({what})")
    got = hashlib.sha256(data).hexdigest()
    if got != meta["sha256"]:
        raise CheckpointError(f"{p}: expected sha256 {meta['sha256'][:16]}..., found {got[:16]}... "
                              "(the file is corrupted)")
    return data


def load_own(f: Any, map_location: Any = None) -> Any:
    """torch.load of a file the preflight wrote itself. torch >= 2.6 loads with weights_only=True by
    default, which refuses the non-tensor state these files hold (the loader's position, RNG states):
    the first real-GPU run (torch 2.11, 2026-12-04) failed its restore that way. torch 1.13 already
    takes the argument."""
    import torch
    return torch.load(f, map_location=map_location, weights_only=False)


def load_bytes(p: str, data: bytes, map_location: Any) -> Dict[str, Any]:
    try:
        obj = load_own(io.BytesIO(data), map_location=map_location)
    except Exception as e:  # torch raises RuntimeError, pickle errors, EOFError... on damaged input
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise CheckpointError(f"{p}: expected a torch.save archive, found one torch.load rejects "
                              f"({type(e).__name__}: {msg})") from None
    if not isinstance(obj, dict) or "model" not in obj:
        raise CheckpointError(f"{p}: expected a preflight checkpoint dict with 'model', found "
                              f"{type(obj).__name__}")
    return obj


def verify_dir(path: str, load: bool = True) -> Dict[str, Any]:
    """Check every file of a checkpoint; returns {dir, step, world_size, files, bytes}."""
    d = resolve_dir(path)
    man = read_manifest(d)
    total = 0
    for name in sorted(man["files"]):
        data = read_verified(d, name, man)
        total += len(data)
        if load:
            load_bytes(os.path.join(d, name), data, "cpu")
    expected = sorted(rank_file(r) for r in range(man["world_size"]))
    if sorted(man["files"]) != expected:
        raise CheckpointError(f"{os.path.join(d, 'manifest.json')}:1: expected files {expected} for "
                              f"world_size {man['world_size']}, found {sorted(man['files'])}")
    return {"dir": d, "step": man["step"], "world_size": man["world_size"], "files": len(man["files"]),
            "bytes": total}


def evict_page_cache(paths: List[str]) -> Optional[str]:
    """Drop the (clean, fsynced) pages of `paths` from the page cache. None on success, else why not."""
    if not hasattr(os, "posix_fadvise"):
        return "posix_fadvise is not available"
    try:
        for p in paths:
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    except OSError as e:
        return f"posix_fadvise failed: {e}"
    return None


def leftover_tmp(root: str) -> List[str]:
    return sorted(glob.glob(os.path.join(root, "**", "*.tmp"), recursive=True))
