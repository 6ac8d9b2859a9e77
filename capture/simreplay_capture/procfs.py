"""Resource readings from /proc (Linux). Every function returns None/0 when the file is unreadable."""
from __future__ import annotations

import os
from typing import Dict, Optional, Tuple

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_TICK_NS = 10**9 // (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


def _read(path: str) -> Optional[str]:
    try:
        with open(path, "r") as f:
            return f.read()
    except OSError:
        return None


def proc_sample(pid: int, with_pss: bool = True) -> Optional[Dict[str, int]]:
    """rss (statm), pss (smaps_rollup, only when with_pss: it costs ~1-5 ms per call on a torch
    process and takes the target's mmap lock), cumulative cpu (utime+stime), io read_bytes."""
    stat = _read(f"/proc/{pid}/stat")
    if stat is None:
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    # fields[0] is field 3 (state); utime/stime are fields 14/15 -> indices 11/12
    cpu_ns = (int(fields[11]) + int(fields[12])) * _TICK_NS
    rss = pss = -1
    st = _read(f"/proc/{pid}/statm")
    if st:
        rss = int(st.split()[1]) * _PAGE
    rollup = _read(f"/proc/{pid}/smaps_rollup") if with_pss else None
    if rollup:
        for line in rollup.splitlines():
            if line.startswith("Pss:"):
                pss = int(line.split()[1]) * 1024
                break
    io_read = 0
    io = _read(f"/proc/{pid}/io")
    if io:
        for line in io.splitlines():
            if line.startswith("read_bytes:"):
                io_read = int(line.split()[1])
    return {"rss_bytes": rss, "pss_bytes": pss, "cpu_ns": cpu_ns, "io_read_bytes": io_read}


def meminfo() -> Dict[str, int]:
    out: Dict[str, int] = {}
    text = _read("/proc/meminfo") or ""
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
    text = _read("/proc/stat") or ""
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
    for line in (_read("/proc/stat") or "").splitlines():
        if line.startswith("cpu "):
            v = [int(x) for x in line.split()[1:]]
            idle = v[3] + (v[4] if len(v) > 4 else 0)
            out["total_ns"] = float(sum(v[:8]) * _TICK_NS)
            out["busy_ns"] = float((sum(v[:8]) - idle) * _TICK_NS)
            out["steal_ns"] = float((v[7] if len(v) > 7 else 0) * _TICK_NS)
            break
    try:
        out["loadavg_1m"] = float((_read("/proc/loadavg") or "-1").split()[0])
    except ValueError:
        pass
    mhz = [float(l.split(":")[1]) for l in (_read("/proc/cpuinfo") or "").splitlines() if l.startswith("cpu MHz")]
    out["mhz"] = sum(mhz) / len(mhz) if mhz else 0.0
    return out


def noise_window(before: Dict[str, float], after: Dict[str, float]) -> Dict[str, float]:
    """What the host did between two noise_sample()s: busy and steal as fractions of all cores' time,
    the load average at both ends and the mean frequency at both ends."""
    total = max(after["total_ns"] - before["total_ns"], 1.0)
    return {"busy_fraction": (after["busy_ns"] - before["busy_ns"]) / total,
            "steal_fraction": (after["steal_ns"] - before["steal_ns"]) / total,
            "loadavg_before": before["loadavg_1m"], "loadavg_after": after["loadavg_1m"],
            "mhz_before": before["mhz"], "mhz_after": after["mhz"]}


def tree_cpu_ns(pid: int) -> int:
    """Cumulative CPU (utime+stime) of `pid` and its live direct children (e.g. DataLoader workers)."""
    total = 0
    try:
        names = os.listdir("/proc")
    except OSError:
        return 0
    for n in names:
        if not n.isdigit():
            continue
        st = _read(f"/proc/{n}/stat")
        if not st:
            continue
        f = st[st.rfind(")") + 2:].split()
        if int(n) == pid or int(f[1]) == pid:
            total += (int(f[11]) + int(f[12])) * _TICK_NS
    return total
