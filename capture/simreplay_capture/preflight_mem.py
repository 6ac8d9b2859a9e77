"""Peak memory of a preflight run: CUDA allocator peaks, or process RSS/PSS peaks on the host."""
from __future__ import annotations

import os
import threading
from typing import Any, Dict, List, Optional

from . import procfs


def vm_hwm_bytes(pid: int = 0) -> Optional[int]:
    """The kernel's RSS high-water mark of a process (VmHWM in /proc/PID/status)."""
    try:
        with open(f"/proc/{pid or os.getpid()}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def children(pid: int) -> List[int]:
    out = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for n in names:
        if not n.isdigit():
            continue
        try:
            with open(f"/proc/{n}/stat") as f:
                st = f.read()
        except OSError:
            continue
        if int(st[st.rfind(")") + 2:].split()[1]) == pid:
            out.append(int(n))
    return out


class PeakSampler(threading.Thread):
    """Samples the PSS of this process and of its children (DataLoader workers) every `period_s`."""

    def __init__(self, period_s: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.period_s = period_s
        self.pss_peak = 0
        self.tree_pss_peak = 0
        self.samples = 0
        self._stop_ev = threading.Event()
        self._lock = threading.Lock()

    def sample(self) -> None:
        me = os.getpid()
        main = procfs.proc_sample(me)
        if main is None or main["pss_bytes"] < 0:
            return
        tree = main["pss_bytes"]
        for c in children(me):
            s = procfs.proc_sample(c)
            if s is not None and s["pss_bytes"] > 0:
                tree += s["pss_bytes"]
        with self._lock:
            self.pss_peak = max(self.pss_peak, main["pss_bytes"])
            self.tree_pss_peak = max(self.tree_pss_peak, tree)
            self.samples += 1

    def run(self) -> None:
        while not self._stop_ev.wait(self.period_s):
            self.sample()

    def stop(self) -> None:
        self._stop_ev.set()
        self.join()
        self.sample()


def report(sampler: PeakSampler, cuda_device: Any, rss_before: Optional[int]) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "kind": "cuda" if cuda_device is not None else "host",
        "cuda_max_allocated_bytes": None, "cuda_max_reserved_bytes": None,
        "host_rss_peak_bytes": vm_hwm_bytes(),
        "host_pss_peak_bytes": sampler.pss_peak or None,
        "host_tree_pss_peak_bytes": sampler.tree_pss_peak or None,
        "rss_before_steps_bytes": rss_before,
        "host_samples": sampler.samples,
    }
    if cuda_device is not None:
        import torch
        out["cuda_max_allocated_bytes"] = int(torch.cuda.max_memory_allocated(cuda_device))
        out["cuda_max_reserved_bytes"] = int(torch.cuda.max_memory_reserved(cuda_device))
        out["peak_memory_bytes"] = out["cuda_max_reserved_bytes"]
        out["note"] = ("cuda_*: torch.cuda.max_memory_allocated/reserved on the step's device over warm-up and "
                       "measured steps (the first optimizer step, which allocates optimizer state, included); "
                       "host_*: the main process and its DataLoader workers")
    else:
        out["peak_memory_bytes"] = out["host_tree_pss_peak_bytes"]
        out["note"] = ("no GPU: host memory only. host_rss_peak_bytes is the kernel's VmHWM of the main "
                       "process (exact); host_*pss* are sampled every 0.2 s and after each step (main "
                       "process, and main plus DataLoader workers); warm-up included")
    return out
