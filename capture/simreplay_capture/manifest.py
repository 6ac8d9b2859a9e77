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
    """A /proc or /sys file's text, stripped (procfs is the one reader)."""
    text = procfs.read_text(path)
    return None if text is None else text.strip()


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
        v["hip"] = getattr(torch.version, "hip", None)  # ROCm builds: the HIP version; else None
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


def base_manifest(t0_ns: int, data_path: Optional[str], model_revision: Optional[str] = None,
                  dataset_revision: Optional[str] = None, hash_dataset_files: bool = True) -> Dict[str, Any]:
    ident = identity()
    g = git_commit(os.getcwd())
    return {
        **environment(model_revision, dataset_revision, data_path if hash_dataset_files else None),
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


# ---------------------------------------------------------------- locked environment (docs/manifest.md)
def _norm_dist(name: str) -> str:
    """PEP 503 normalised distribution name: 'PyYAML' and 'pyyaml', 'typing_extensions' and
    'typing-extensions' are one distribution."""
    import re
    return re.sub(r"[-_.]+", "-", name).lower()


def packages() -> Dict[str, Any]:
    """Every Python distribution importlib.metadata sees on sys.path, as sorted unique 'name==version'
    strings (names PEP 503-normalised), and a sha256 of that list joined by newlines: two runs with
    the same digest have the same installed versions."""
    import hashlib
    import importlib.metadata as md
    seen = set()
    for d in md.distributions():
        name = d.metadata["Name"] if d.metadata is not None else None
        if name:
            seen.add(f"{_norm_dist(name)}=={d.version}")
    lst = sorted(seen)
    return {"list": lst, "count": len(lst),
            "sha256": hashlib.sha256("\n".join(lst).encode()).hexdigest()}


def _kv_file(path: str) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for line in (_read(path) or "").splitlines():
        k, sep, v = line.partition("=")
        if sep:
            out[k.strip()] = v.strip().strip('"')
    return out


def container() -> Dict[str, Any]:
    """The container this process runs in and its image digest, where it can be discovered from the
    inside (in this order): SIMREPLAY_IMAGE_DIGEST (set it from `docker inspect` / the registry when the
    runtime hides it); podman's /run/.containerenv (`image=`, `imageid=`); Apptainer/Singularity's
    APPTAINER_CONTAINER / SINGULARITY_CONTAINER (the image path; its digest is not computed: SIF files
    are gigabytes); docker's /.dockerenv and the container id in /proc/self/cgroup or
    /proc/self/mountinfo (docker exposes no image digest inside); Kubernetes' KUBERNETES_SERVICE_HOST.
    `image_digest` is null whenever none of these gives one."""
    import re
    out: Dict[str, Any] = {"in_container": False, "runtime": None, "image": None, "image_digest": None,
                           "container_id": None, "digest_source": None}
    env_d = os.environ.get("SIMREPLAY_IMAGE_DIGEST")
    ce = _kv_file("/run/.containerenv") if os.path.exists("/run/.containerenv") else None
    if ce is not None:
        out.update(in_container=True, runtime=ce.get("engine", "podman").split()[0] or "podman",
                   image=ce.get("image") or None, container_id=ce.get("id") or None)
        if ce.get("imageid"):
            iid = ce["imageid"]
            out.update(image_digest=iid if iid.startswith("sha256:") else f"sha256:{iid}",
                       digest_source="/run/.containerenv imageid")
    sif = os.environ.get("APPTAINER_CONTAINER") or os.environ.get("SINGULARITY_CONTAINER")
    if sif:
        out.update(in_container=True, runtime="apptainer", image=sif)
    if os.path.exists("/.dockerenv") and out["runtime"] is None:
        out.update(in_container=True, runtime="docker")
    if out["container_id"] is None:
        text = (_read("/proc/self/cgroup") or "") + "\n" + (_read("/proc/self/mountinfo") or "")
        m = re.search(r"(?:docker|containerd|cri-o|crio|libpod)[-/:]([0-9a-f]{64})", text)
        if m:
            out.update(in_container=True, container_id=m.group(1))
            if out["runtime"] is None:
                out["runtime"] = "docker"
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        out["in_container"] = True
        out["runtime"] = out["runtime"] or "kubernetes"
    if env_d:
        out.update(image_digest=env_d, digest_source="SIMREPLAY_IMAGE_DIGEST")
        if os.environ.get("SIMREPLAY_IMAGE"):
            out["image"] = os.environ["SIMREPLAY_IMAGE"]
    return out


def rocm() -> Optional[Dict[str, Any]]:
    """The ROCm stack: torch.version.hip, the ROCm release from $ROCM_PATH (or /opt/rocm)/.info/version
    (or $ROCM_VERSION), and the amdgpu driver version from /sys/module/amdgpu/version. null when none
    of these exists (a CUDA or CPU-only machine)."""
    torch = sys.modules.get("torch")
    hip = getattr(getattr(torch, "version", None), "hip", None) if torch is not None else None
    root = os.environ.get("ROCM_PATH") or os.environ.get("ROCM_HOME") or "/opt/rocm"
    ver = _read(os.path.join(root, ".info", "version")) or _read(os.path.join(root, ".info", "version-dev"))
    src = f"{root}/.info/version" if ver else None
    if not ver and os.environ.get("ROCM_VERSION"):
        ver, src = os.environ["ROCM_VERSION"], "ROCM_VERSION"
    drv = _read("/sys/module/amdgpu/version")
    if hip is None and ver is None and drv is None:
        return None
    return {"hip": hip, "rocm_version": ver, "rocm_version_source": src,
            "rocm_path": root if os.path.isdir(root) else None, "amdgpu_driver": drv}


def dataset_files(path: Optional[str]) -> Optional[Dict[str, Any]]:
    """A content hash of a dataset's file list: sha256 over sorted 'relative/path<TAB>size' lines of
    every regular file under `path` (a file is listed alone). It changes when a file is added, removed,
    renamed or resized; an in-place edit that keeps the size is not seen (hashing every byte of a
    training set is a job of its own). null for no path or a URL."""
    import hashlib
    if not path or path.startswith(("http://", "https://")) or not os.path.exists(path):
        return None
    root = os.path.realpath(path)
    lines = []
    total = 0
    if os.path.isfile(root):
        n = os.path.getsize(root)
        lines.append(f"{os.path.basename(root)}\t{n}")
        total = n
    else:
        for d, dirs, files in os.walk(root):
            dirs.sort()
            for f in files:
                p = os.path.join(d, f)
                try:
                    st = os.stat(p)
                except OSError:
                    continue
                if not os.path.isfile(p):
                    continue
                lines.append(f"{os.path.relpath(p, root)}\t{st.st_size}")
                total += st.st_size
    lines.sort()
    return {"path": root, "files": len(lines), "bytes": total,
            "sha256": hashlib.sha256(("\n".join(lines)).encode()).hexdigest()}


def revisions(model: Optional[str] = None, dataset: Optional[str] = None,
              dataset_path: Optional[str] = None) -> Dict[str, Any]:
    """User-declared revisions (a git hash, a hub revision, a tag: recorded as given) and the dataset's
    file-list hash."""
    return {"model": model, "dataset": dataset, "dataset_files": dataset_files(dataset_path)}


def environment(model_revision: Optional[str] = None, dataset_revision: Optional[str] = None,
                dataset_path: Optional[str] = None) -> Dict[str, Any]:
    """The locked-environment keys every manifest carries (docs/manifest.md)."""
    return {"packages": packages(), "container": container(), "rocm": rocm(),
            "revisions": revisions(model_revision, dataset_revision, dataset_path)}
