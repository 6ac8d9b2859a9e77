"""Launching preflight phases as real processes (one per rank, torchrun's environment contract) in
their own process group, and killing that group with SIGKILL."""
from __future__ import annotations

import ctypes
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from . import procfs

PKG_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def become_subreaper() -> bool:
    """Orphaned DataLoader workers of a killed rank are re-parented to us, so we can reap them."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _group_kw(pgid: int) -> Dict[str, Any]:
    """Popen arguments that put the child in process group `pgid` (0: a new group led by the child)."""
    if sys.version_info >= (3, 11):
        return {"process_group": pgid}
    return {"preexec_fn": lambda: os.setpgid(0, pgid)}  # before 3.11 Popen has no process_group


class Phase:
    """The N rank processes of one phase (train, reference or restore)."""

    def __init__(self, role: str, spec: Dict[str, Any], nproc: int, work: str) -> None:
        self.role, self.nproc, self.work = role, nproc, work
        port = free_port()
        spec = dict(spec)
        spec["t_launch"] = time.perf_counter()
        self.t_launch = spec["t_launch"]
        spec_path = os.path.join(work, f"spec-{role}.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        self.procs: List[subprocess.Popen] = []
        self.logs: List[str] = []
        self.pgid: Optional[int] = None
        base = dict(os.environ)
        base["PYTHONPATH"] = PKG_PARENT + (os.pathsep + base["PYTHONPATH"] if base.get("PYTHONPATH") else "")
        base["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"  # deterministic cuBLAS (must precede CUDA init)
        base["PYTHONUNBUFFERED"] = "1"
        for r in range(nproc):
            env = dict(base, RANK=str(r), WORLD_SIZE=str(nproc), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(nproc),
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
            log = os.path.join(work, f"{role}-rank{r}.log")
            self.logs.append(log)
            # rank 0 leads a new process group that the other ranks join (same session as us:
            # setpgid cannot cross sessions); DataLoader workers inherit it, so one killpg ends the job
            with open(log, "wb") as lf:
                try:
                    p = subprocess.Popen([sys.executable, "-m", "simreplay_capture.preflight", "_child", role,
                                          spec_path], env=env, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE if role == "train" else lf, stderr=lf,
                                         **_group_kw(0 if r == 0 else self.pgid))
                except BaseException:
                    self.kill()
                    raise
            if r == 0:
                self.pgid = p.pid
            self.procs.append(p)

    def wait_saved(self, timeout_s: float) -> Tuple[bool, float]:
        """Wait for every rank's `SAVED` line. Returns (all saved, perf_counter when the last arrived)."""
        sel = selectors.DefaultSelector()
        for r, p in enumerate(self.procs):
            assert p.stdout is not None
            sel.register(p.stdout, selectors.EVENT_READ, r)
        saved = set()
        bufs = {r: b"" for r in range(self.nproc)}
        deadline = time.monotonic() + timeout_s
        t_last = 0.0
        open_pipes = self.nproc
        while len(saved) < self.nproc and open_pipes and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=0.5):
                r = key.data
                chunk = os.read(key.fd, 4096)
                if not chunk:
                    sel.unregister(key.fileobj)
                    open_pipes -= 1
                    continue
                bufs[r] += chunk
                if b"SAVED" in bufs[r] and r not in saved:
                    saved.add(r)
                    t_last = time.perf_counter()
        sel.close()
        return len(saved) == self.nproc, t_last

    def wait(self, timeout_s: float) -> List[Optional[int]]:
        deadline = time.monotonic() + timeout_s
        for p in self.procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.kill()
                break
        return [p.returncode for p in self.procs]

    def kill(self) -> float:
        t = time.perf_counter()
        if self.pgid is not None:
            try:
                os.killpg(self.pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in self.procs:
            p.wait()
            if p.stdout is not None:
                p.stdout.close()
        return t

    def reap_group(self, timeout_s: float = 10.0) -> int:
        """Reap what is left of the process group (orphaned workers re-parented to us, now zombies).
        Returns the number of processes of the group still alive at the end."""
        deadline = time.monotonic() + timeout_s
        alive: List[int] = []
        while True:
            alive = []
            for pid, state, ppid in group_members(self.pgid):
                if state == "Z" and ppid == os.getpid():
                    try:
                        os.waitpid(pid, os.WNOHANG)
                    except ChildProcessError:
                        pass
                elif state != "Z":
                    alive.append(pid)
            if not alive or time.monotonic() > deadline:
                return len(alive)
            time.sleep(0.05)

    def log_tail(self, rank: int = 0, chars: int = 2000) -> str:
        try:
            with open(self.logs[rank], "rb") as f:
                return f.read()[-chars:].decode("utf-8", "replace")
        except OSError:
            return ""


def group_members(pgid: Optional[int]) -> List[Tuple[int, str, int]]:
    """(pid, state, ppid) of every process whose process group is `pgid`."""
    if pgid is None:
        return []
    return [(pid, f[0], int(f[1])) for pid, f in procfs.processes() if int(f[2]) == pgid]
