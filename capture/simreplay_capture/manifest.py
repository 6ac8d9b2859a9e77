"""Run manifest for the trace header: versions, hardware, storage, network, identity."""
from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
from typing import Any, Dict, List, Optional

from . import procfs

__version__ = "0.1.0"


def _read(path: str) -> Optional[str]:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def git_commit(cwd: str) -> Dict[str, Any]:
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True,
                              timeout=5)
        if head.returncode != 0:
            return {"commit": None, "dirty": None}
        st = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                            capture_output=True, text=True, timeout=5)
        return {"commit": head.stdout.strip(), "dirty": bool(st.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def versions() -> Dict[str, Any]:
    v: Dict[str, Any] = {"python": platform.python_version(), "simreplay_capture": __version__}
    torch = sys.modules.get("torch")
    if torch is not None:
        v["torch"] = torch.__version__
        v["cuda"] = getattr(torch.version, "cuda", None)
    tv = sys.modules.get("torchvision")
    if tv is not None:
        v["torchvision"] = tv.__version__
    else:
        try:
            import torchvision  # noqa: F401  (version only)
            v["torchvision"] = torchvision.__version__
        except Exception:
            v["torchvision"] = None
    drv = _read("/proc/driver/nvidia/version")
    v["driver"] = drv.split("Kernel Module")[1].split()[0] if drv and "Kernel Module" in drv else None
    for mod in ("numpy", "av", "PIL", "lmdb", "h5py"):
        m = sys.modules.get(mod)
        if m is not None:
            v[mod] = getattr(m, "__version__", None)
    return v


def hardware() -> Dict[str, Any]:
    cpu_model = None
    cores = set()
    text = _read("/proc/cpuinfo") or ""
    phys = core = None
    for line in text.splitlines():
        if line.startswith("model name") and cpu_model is None:
            cpu_model = line.split(":", 1)[1].strip()
        elif line.startswith("physical id"):
            phys = line.split(":", 1)[1].strip()
        elif line.startswith("core id"):
            core = line.split(":", 1)[1].strip()
            cores.add((phys, core))
    threads = os.cpu_count() or 0
    numa = 0
    try:
        numa = len([d for d in os.listdir("/sys/devices/system/node") if d.startswith("node")])
    except OSError:
        pass
    hw: Dict[str, Any] = {
        "cpu_model": cpu_model or platform.processor() or None,
        "cores": len(cores) or threads,
        "threads": threads,
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else threads,
        "numa_nodes": max(numa, 1),
        "ram_bytes": procfs.meminfo().get("MemTotal", 0),
        "gpus": [],
    }
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available():
            for i in range(torch.cuda.device_count()):
                p = torch.cuda.get_device_properties(i)
                hw["gpus"].append({"name": p.name, "memory_bytes": int(p.total_memory)})
    except Exception:
        pass
    return hw


def storage(path: Optional[str]) -> Optional[Dict[str, Any]]:
    if not path:
        return None
    if path.startswith(("http://", "https://")):  # a remote store read over HTTP: no local mount
        return {"path": path, "mount": None, "fs_type": "http", "device": None, "rotational": None}
    path = os.path.realpath(path)
    best = None
    text = _read("/proc/mounts") or ""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        dev, mnt, fstype = parts[0], parts[1].replace("\\040", " "), parts[2]
        if path == mnt or path.startswith(mnt.rstrip("/") + "/") or mnt == "/":
            if best is None or len(mnt) > len(best[1]):
                best = (dev, mnt, fstype)
    out: Dict[str, Any] = {"path": path, "mount": None, "fs_type": None, "device": None,
                           "rotational": None}
    if best:
        dev, mnt, fstype = best
        out.update(mount=mnt, fs_type=fstype, device=dev)
        out["rotational"] = _rotational(dev)
    return out


def _rotational(dev: str) -> Optional[bool]:
    if not dev.startswith("/dev/"):
        return None
    name = os.path.basename(os.path.realpath(dev))
    # partition -> parent block device via /sys/class/block/NAME/..
    cand = [name]
    try:
        parent = os.path.basename(os.path.dirname(os.path.realpath(f"/sys/class/block/{name}")))
        cand.append(parent)
    except OSError:
        pass
    for n in cand:
        r = _read(f"/sys/block/{n}/queue/rotational")
        if r is not None:
            return r == "1"
    return None


def network() -> List[Dict[str, Any]]:
    out = []
    try:
        names = sorted(os.listdir("/sys/class/net"))
    except OSError:
        return out
    for n in names:
        sp = _read(f"/sys/class/net/{n}/speed")
        try:
            speed = int(sp) if sp is not None else None
        except ValueError:
            speed = None
        if speed is not None and speed < 0:
            speed = None
        out.append({"name": n, "speed_mbps": speed})
    return out


def identity() -> Dict[str, int]:
    def env_int(name: str, default: int) -> int:
        try:
            return int(os.environ.get(name, default))
        except ValueError:
            return default
    return {"rank": env_int("RANK", 0), "world_size": env_int("WORLD_SIZE", 1),
            "local_rank": env_int("LOCAL_RANK", 0)}


def rank_path(path: str, rank: int, world_size: int) -> str:
    """Insert `.rank<R>` before `.jsonl` when more than one rank writes a trace."""
    if world_size <= 1:
        return path
    i = path.rfind(".jsonl")
    if i < 0:
        return f"{path}.rank{rank}"
    return f"{path[:i]}.rank{rank}{path[i:]}"


def base_manifest(t0_ns: int, data_path: Optional[str]) -> Dict[str, Any]:
    ident = identity()
    g = git_commit(os.getcwd())
    return {
        "source": "capture",
        "commit": g["commit"],
        "dirty": g["dirty"],
        "versions": versions(),
        "hardware": hardware(),
        "storage": storage(data_path),
        "network": network(),
        "command": list(sys.argv),
        "cwd": os.getcwd(),
        "start_time": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "t0_monotonic_ns": t0_ns,
        "t0_time_ns": None,
        **ident,
    }
