"""Peak memory of a preflight run: CUDA allocator peaks, or process RSS/PSS peaks on the host."""
from __future__ import annotations

import os
import threading
from typing import Any, Dict, List, Optional

from . import procfs
from .procfs import children, vm_hwm_bytes  # re-exported: the preflight reads /proc through procfs


def reset_host_peak() -> bool:
    """Reset this process's VmHWM to its current RSS (Linux >= 4.0: `5` to /proc/self/clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def nvidia_smi(pid: int) -> Optional[Dict[str, Any]]:
    """nvidia-smi's view: this process's used memory and the whole GPU's used/total (MiB -> bytes).
    None when nvidia-smi is absent or fails."""
    import shutil
    import subprocess
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    mib = 1 << 20
    try:
        apps = subprocess.run([exe, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=20)
        gpu = subprocess.run([exe, "--query-gpu=index,memory.used,memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    if apps.returncode != 0 or gpu.returncode != 0:
        return None
    used = None
    for line in apps.stdout.splitlines():
        parts = [x.strip() for x in line.split(",")]
        if len(parts) == 2 and parts[0] == str(pid) and parts[1].isdigit():
            used = (used or 0) + int(parts[1]) * mib
    gpus = []
    for line in gpu.stdout.splitlines():
        parts = [x.strip() for x in line.split(",")]
        if len(parts) == 3 and all(x.isdigit() for x in parts):
            gpus.append({"index": int(parts[0]), "used_bytes": int(parts[1]) * mib, "total_bytes": int(parts[2]) * mib})
    return {"process_used_bytes": used, "gpus": gpus}


def device_memory(cuda_device: Any) -> Dict[str, Any]:
    """The device's memory as every layer sees it: the allocator (peak allocated, peak and current
    reserved), the driver (cudaMemGetInfo free/total, whole device) and nvidia-smi (this process),
    with the runtime overhead (CUDA context, cuBLAS/cuDNN workspaces, ...) as the difference between
    nvidia-smi's per-process figure and the allocator's reservation."""
    if cuda_device is None:
        return {"available": False, "note": "no GPU: no device memory to report (the host figures above are the "
                                            "CPU run's memory)"}
    import torch
    free, total = torch.cuda.mem_get_info(cuda_device)
    reserved = int(torch.cuda.memory_reserved(cuda_device))
    out: Dict[str, Any] = {
        "available": True,
        "allocated_peak_bytes": int(torch.cuda.max_memory_allocated(cuda_device)),
        "reserved_peak_bytes": int(torch.cuda.max_memory_reserved(cuda_device)),
        "reserved_bytes": reserved, "allocated_bytes": int(torch.cuda.memory_allocated(cuda_device)),
        "mem_get_info_free_bytes": int(free), "mem_get_info_total_bytes": int(total),
        "device_used_bytes": int(total - free),
    }
    smi = nvidia_smi(os.getpid())
    out["nvidia_smi"] = smi
    if smi is not None and smi["process_used_bytes"] is not None:
        out["runtime_overhead_bytes"] = smi["process_used_bytes"] - reserved
        out["runtime_overhead_source"] = "nvidia-smi process used - allocator reserved"
    else:
        out["runtime_overhead_bytes"] = int(total - free) - reserved
        out["runtime_overhead_source"] = ("cudaMemGetInfo used (total - free, the whole device: other processes "
                                          "included) - allocator reserved; nvidia-smi " +
                                          ("absent" if smi is None else "did not list this process"))
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
        out["device"] = device_memory(cuda_device)
        out["note"] = ("cuda_*: torch.cuda.max_memory_allocated/reserved on the step's device over warm-up and "
                       "measured steps (the first optimizer step, which allocates optimizer state, included); "
                       "host_*: the main process and its DataLoader workers")
    else:
        out["peak_memory_bytes"] = out["host_tree_pss_peak_bytes"]
        out["device"] = device_memory(None)
        out["note"] = ("no GPU: host memory only. host_rss_peak_bytes is the kernel's VmHWM of the main "
                       "process (exact); host_*pss* are sampled every 0.2 s and after each step (main "
                       "process, and main plus DataLoader workers); warm-up included")
    return out
