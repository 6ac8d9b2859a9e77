"""Readings from /proc and /sys (Linux): the capture package's one reader of them. Every function returns
None/0/-1 when the file is unreadable (another OS, a process that is gone)."""
from __future__ import annotations

import os
import resource
from typing import Dict, Iterator, List, Optional, Tuple

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_TICK_NS = 10**9 // (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


def read_text(path: str) -> Optional[str]:
    """The whole text of a /proc or /sys file, None when unreadable."""
    try:
        with open(path, "r") as f:
            return f.read()
    except OSError:
        return None


def process_stat(pid: int) -> Optional[List[str]]:
    """/proc/PID/stat's fields after the command name: [0] is the state (field 3), [1] the parent pid,
    [2] the process group, [11]/[12] utime/stime in ticks. None when the process is gone."""
    st = read_text(f"/proc/{pid}/stat")
    return st[st.rfind(")") + 2:].split() if st else None


def process_cpu_ns(pid: int) -> int:
    """Cumulative CPU (utime+stime) of one process, 0 when it is gone."""
    f = process_stat(pid)
    return (int(f[11]) + int(f[12])) * _TICK_NS if f else 0


def is_gone(pid: int) -> bool:
    """The process no longer exists or is a zombie (dead, not yet reaped)."""
    f = process_stat(pid)
    return f is None or f[0] in ("Z", "X")


def processes() -> Iterator[Tuple[int, List[str]]]:
    """(pid, process_stat fields) of every live process."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    for n in names:
        if n.isdigit():
            f = process_stat(int(n))
            if f is not None:
                yield int(n), f


def children(pid: int) -> List[int]:
    """The live direct children of pid (e.g. DataLoader workers)."""
    return [p for p, f in processes() if int(f[1]) == pid]


def vm_hwm_bytes(pid: int = 0) -> Optional[int]:
    """The kernel's RSS high-water mark of a process (VmHWM in /proc/PID/status)."""
    for line in (read_text(f"/proc/{pid or os.getpid()}/status") or "").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return None


def loadavg_1m() -> float:
    """The 1-minute load average, -1 when unreadable."""
    try:
        return float((read_text("/proc/loadavg") or "-1").split()[0])
    except (ValueError, IndexError):
        return -1.0


def cpu_model() -> Optional[str]:
    """The first "model name" of /proc/cpuinfo."""
    for line in (read_text("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return None


def mean_cpu_mhz() -> float:
    """The mean current clock of the cores (MHz, /proc/cpuinfo), 0 when the kernel does not report it."""
    mhz = [float(l.split(":")[1]) for l in (read_text("/proc/cpuinfo") or "").splitlines()
           if l.startswith("cpu MHz")]
    return sum(mhz) / len(mhz) if mhz else 0.0


def main_thread_cpu_ns(pid: int) -> int:
    """Cumulative CPU (utime+stime) of a process's main thread (the task whose id is the pid), -1 when
    unreadable. A DataLoader worker runs its samples there; its other threads (the result queue's
    feeder, which pickles each batch into shared memory) run beside it."""
    st = read_text(f"/proc/{pid}/task/{pid}/stat")
    if not st:
        return -1
    f = st[st.rfind(")") + 2:].split()
    return (int(f[11]) + int(f[12])) * _TICK_NS


def proc_sample(pid: int, with_pss: bool = True) -> Optional[Dict[str, int]]:
    """rss (statm), pss (smaps_rollup, only when with_pss: it costs ~1-5 ms per call on a torch
    process and takes the target's mmap lock), cumulative cpu (utime+stime) of the process and of its
    main thread, io read_bytes."""
    fields = process_stat(pid)
    if fields is None:
        return None
    cpu_ns = (int(fields[11]) + int(fields[12])) * _TICK_NS
    rss = pss = -1
    st = read_text(f"/proc/{pid}/statm")
    if st:
        rss = int(st.split()[1]) * _PAGE
    rollup = read_text(f"/proc/{pid}/smaps_rollup") if with_pss else None
    if rollup:
        for line in rollup.splitlines():
            if line.startswith("Pss:"):
                pss = int(line.split()[1]) * 1024
                break
    io_read = 0
    io = read_text(f"/proc/{pid}/io")
    if io:
        for line in io.splitlines():
            if line.startswith("read_bytes:"):
                io_read = int(line.split()[1])
    return {"rss_bytes": rss, "pss_bytes": pss, "cpu_ns": cpu_ns, "main_thread_cpu_ns": main_thread_cpu_ns(pid),
            "io_read_bytes": io_read}


def meminfo() -> Dict[str, int]:
    out: Dict[str, int] = {}
    text = read_text("/proc/meminfo") or ""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            out[parts[0].rstrip(":")] = int(parts[1]) * 1024
    return out


def host_sample() -> Tuple[int, int, int]:
    """(mem_used_bytes, mem_total_bytes, cpu_busy_ns cumulative over all cores)."""
    mi = meminfo()
    total = mi.get("MemTotal", 0)
    used = max(0, total - mi.get("MemAvailable", mi.get("MemFree", 0)))
    busy = 0
    text = read_text("/proc/stat") or ""
    for line in text.splitlines():
        if line.startswith("cpu "):
            v = [int(x) for x in line.split()[1:]]
            idle = v[3] + (v[4] if len(v) > 4 else 0)
            busy = (sum(v[:8]) - idle) * _TICK_NS  # user..steal; guest is already in user
            break
    return used, total, busy


def noise_sample() -> Dict[str, float]:
    """The host's noise counters now: cumulative busy, steal and total CPU time over all cores (ns, from
    /proc/stat), the 1-minute load average and the mean core frequency (MHz, /proc/cpuinfo; 0 when the
    kernel does not report it). Two samples make a window (noise_window)."""
    out = {"busy_ns": 0.0, "steal_ns": 0.0, "total_ns": 0.0, "loadavg_1m": -1.0, "mhz": 0.0}
    for line in (read_text("/proc/stat") or "").splitlines():
        if line.startswith("cpu "):
            v = [int(x) for x in line.split()[1:]]
            idle = v[3] + (v[4] if len(v) > 4 else 0)
            out["total_ns"] = float(sum(v[:8]) * _TICK_NS)
            out["busy_ns"] = float((sum(v[:8]) - idle) * _TICK_NS)
            out["steal_ns"] = float((v[7] if len(v) > 7 else 0) * _TICK_NS)
            break
    out["loadavg_1m"] = loadavg_1m()
    out["mhz"] = mean_cpu_mhz()
    return out


def noise_window(before: Dict[str, float], after: Dict[str, float]) -> Dict[str, float]:
    """What the host did between two noise_sample()s: busy and steal as fractions of all cores' time,
    the load average at both ends and the mean frequency at both ends."""
    total = max(after["total_ns"] - before["total_ns"], 1.0)
    return {"busy_fraction": (after["busy_ns"] - before["busy_ns"]) / total,
            "steal_fraction": (after["steal_ns"] - before["steal_ns"]) / total,
            "loadavg_before": before["loadavg_1m"], "loadavg_after": after["loadavg_1m"],
            "mhz_before": before["mhz"], "mhz_after": after["mhz"]}


def children_cpu_ns() -> int:
    """User + system CPU of this process's reaped children (resource.RUSAGE_CHILDREN), in ns: the CPU a
    finished subprocess run (a bench and its loader workers) spent, to tell its own load from foreign."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return int((r.ru_utime + r.ru_stime) * 1e9)


def foreign_cpu_fraction(before: Dict[str, float], after: Dict[str, float], own_cpu_ns: float) -> float:
    """The share of all cores' time between two noise_sample()s that the host spent busy on something
    other than the run's own processes (own_cpu_ns: their CPU over the same window, e.g. the change in
    children_cpu_ns() around a subprocess run); steal is not in it (noise_window reports it apart). A
    quiet machine gives about 0."""
    total = max(after["total_ns"] - before["total_ns"], 1.0)
    busy = (after["busy_ns"] - before["busy_ns"]) - (after["steal_ns"] - before["steal_ns"])
    return max(0.0, (busy - own_cpu_ns) / total)


def tree_cpu_ns(pid: int) -> int:
    """Cumulative CPU (utime+stime) of `pid` and its live direct children (e.g. DataLoader workers)."""
    return sum((int(f[11]) + int(f[12])) * _TICK_NS for p, f in processes() if p == pid or int(f[1]) == pid)
