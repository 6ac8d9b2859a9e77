"""The measurement side of the advice validation (validation/advice/run.py, docs/advice.md "Shown on real
runs"): the pipelines, the grid of configurations, the real bench runs and their noise screen. What
it writes (runs.json, the base captures) is what validation/evidence/record.py keeps as the "advice"
recording; its digest is the set's measurement side, so a change here asks for a new recording."""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "capture"))
from simreplay_capture import host_screen, procfs  # noqa: E402  (the capture package's one /proc reader)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON = "/usr/bin/python3"
# The grid: the worker counts tune may choose on this host (its default limit: 2 workers per core), each
# with and without persistent workers, at prefetch_factor 2 and 4, in the captured container (files) and
# in tar shards (tune recommends packing when storage is the limit). Regret is against the best of all of
# them. A recommendation outside it (prefetch 1 or 8, lmdb or hdf5) is a coverage failure; pin_memory is
# not a bench knob (no CUDA here: PyTorch ignores it), so a recommendation is matched without it.
MAX_WORKERS_PER_CORE = 2
GRID_WORKERS = [w for w in (0, 1, 2, 3, 4, 6, 8) if w <= MAX_WORKERS_PER_CORE * (os.cpu_count() or 1)]
GRID_PREFETCH = [2, 4]
GRID_FORMATS = ["files", "tar"]

PIPELINES = {
    "bench": {"image_size": 128, "frames": 8, "step_time_s": 0.02, "slow": False},
    "cpu_heavy": {"image_size": 256, "frames": 8, "step_time_s": 0.01, "slow": False},
    "storage": {"image_size": 128, "frames": 8, "step_time_s": 0.01, "slow": True},
}

BASE = {"workers": 1, "prefetch_factor": 2, "persistent_workers": False}
FOREIGN_LIMIT = 0.10  # a run with more foreign CPU or steal than this share of the host is repeated
LOADED_RETRIES = 3
SLOW_LATENCY_S = 0.02  # the storage pipeline's first-byte latency per file open
BATCH = 8


def log(msg: str) -> None:
    print(f"[advice {datetime.datetime.utcnow():%H:%M:%S}] {msg}", flush=True)


def bench_cmd(data: str, p: dict, cfg: dict, steps: int, extra: List[str]) -> List[str]:
    cmd = [PYTHON, "-m", "simreplay_capture.bench", "run", "--data", data, "--format", cfg.get("format", "files"),
           "--workers", str(cfg["workers"]), "--batch-size", str(BATCH),
           "--prefetch-factor", str(cfg["prefetch_factor"]), "--steps", str(steps), "--seed", "0",
           "--image-size", str(p["image_size"]), "--frames", str(p["frames"]),
           "--step-time-s", str(cfg.get("step_time_s", p["step_time_s"])), "--shuffle"]
    if cfg["persistent_workers"] and cfg["workers"] > 0:
        cmd.append("--persistent-workers")
    return cmd + extra


def run_bench_once(cmd: List[str], summary: str) -> dict:
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "capture"))
    screen_before = host_screen.screen(simreplay_binary())
    before, own0 = procfs.noise_sample(), procfs.children_cpu_ns()
    t0 = time.monotonic()
    r = subprocess.run(cmd + ["--summary-json", summary], env=env, capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - t0
    after, own = procfs.noise_sample(), procfs.children_cpu_ns() - own0
    screen_after = host_screen.screen(simreplay_binary())
    if r.returncode != 0:
        raise RuntimeError(f"bench failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-2000:]}")
    with open(summary) as f:
        s = json.load(f)
    noise = procfs.noise_window(before, after)
    return {"throughput": s["throughput_samples_per_s"], "gpu_idle": s.get("gpu_idle_fraction"), "wall_s": wall,
            "load_before": noise["loadavg_before"], "load_after": noise["loadavg_after"],
            "loadavg_before": noise["loadavg_before"], "steal_fraction": noise["steal_fraction"],
            "host_before": screen_before, "host_after": screen_after,
            # CPU the host was busy with beyond this run's own processes (the bench and its workers, reaped)
            "foreign_cpu_share": procfs.foreign_cpu_fraction(before, after, own),
            # the host's delivered cores around the run (None: not screened), and whether under the bound
            "host_delivered_share": host_screen.window_share(screen_before, screen_after),
            "host_below_bound": host_screen.below_bound(screen_before, screen_after)}


def loaded(run: dict) -> bool:
    return (run["foreign_cpu_share"] > FOREIGN_LIMIT or run["steal_fraction"] > FOREIGN_LIMIT
            or run["host_below_bound"])


def run_bench(cmd: List[str], summary: str) -> dict:
    """One scored run: a run under foreign load is repeated rather than scored (the discarded ones are
    kept in `discarded`); after LOADED_RETRIES the last is kept and flagged `loaded`."""
    discarded = []
    for attempt in range(LOADED_RETRIES + 1):
        r = run_bench_once(cmd, summary)
        if not loaded(r) or attempt == LOADED_RETRIES:
            r["loaded"] = loaded(r)
            r["discarded"] = discarded
            return r
        share = r["host_delivered_share"]
        log(f"  foreign load (cpu {r['foreign_cpu_share']:.0%}, steal {r['steal_fraction']:.0%}, host delivered "
            f"{'unknown' if share is None else f'{share:.0%}'} of its cores): run repeated")
        discarded.append({k: r[k] for k in ("throughput", "foreign_cpu_share", "steal_fraction", "host_delivered_share")})
        time.sleep(2)
    raise AssertionError("unreachable")


def run_meta(**extra) -> dict:
    """When, on what code and on what host a harness ran (its report's "meta"), plus `extra`."""
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True).stdout.strip()
    if dirty:
        commit += " with uncommitted changes"
    return {"date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"), "commit": commit,
            "host": f"{os.cpu_count()} CPUs", **extra}


def simreplay_binary() -> str:
    return os.environ.get("SIMREPLAY_BIN", os.path.join(REPO, "build", "simreplay"))


def key(cfg: dict) -> str:
    fmt = cfg.get("format", "files")
    return "w{workers}_pf{prefetch_factor}_pers{p}{f}{step}".format(
        p=int(cfg["persistent_workers"]), f="" if fmt == "files" else "_" + fmt,
        step="_step%g" % cfg["step_time_s"] if "step_time_s" in cfg else "", **cfg)


class SlowMount:
    """The FUSE mount of the storage pipeline, unmounted on exit."""

    def __init__(self, source: str, mountpoint: str, latency_s: float):
        self.source, self.mountpoint, self.latency_s, self.proc = source, mountpoint, latency_s, None

    def __enter__(self) -> "SlowMount":
        os.makedirs(self.mountpoint, exist_ok=True)
        subprocess.run(["fusermount", "-uz", self.mountpoint], capture_output=True)
        # Its output goes to a file: a pipe nobody reads would fill and stall the file system's threads.
        self.log_path = self.mountpoint.rstrip("/") + ".log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([PYTHON, os.path.join(REPO, "validation", "advice", "slowfs.py"), self.source,
                                      self.mountpoint, "--latency-s", str(self.latency_s)],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(100):
            if os.path.ismount(self.mountpoint):
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        err = open(self.log_path).read() if self.proc.poll() is not None else "timeout"
        self.__exit__()
        raise OSError(f"cannot mount the slow file system at {self.mountpoint}: {err.strip()[-500:]}")

    def __exit__(self, *exc) -> None:
        subprocess.run(["fusermount", "-u", self.mountpoint], capture_output=True)
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.log.close()


def relief_key(cfg: dict) -> str:
    return key(cfg) + ("_half_latency" if cfg.get("half_latency") else "")


def real_reliefs(pipeline: dict) -> Dict[str, dict]:
    w = max(1, BASE["workers"] * 2)
    out = {"num_workers": dict(BASE, workers=w),
           "prefetch_factor": dict(BASE, prefetch_factor=BASE["prefetch_factor"] * 2),
           "persistent_workers": dict(BASE, persistent_workers=True),
           "gpu_step": dict(BASE, step_time_s=pipeline["step_time_s"] / 2)}
    if pipeline["slow"]:
        out["storage"] = dict(BASE, half_latency=True)  # the same files at half the first-byte latency
    return out


def grid_configs(p: dict) -> Dict[str, dict]:
    """Every configuration measured for a pipeline: the grid tune chooses from (GRID_*) and the causal
    profile's reliefs that can be applied for real (real_reliefs), by key."""
    configs: Dict[str, dict] = {}
    for fmt in GRID_FORMATS:
        for w in GRID_WORKERS:
            for pers in ([False, True] if w > 0 else [False]):
                for pf in (GRID_PREFETCH if w > 0 else [BASE["prefetch_factor"]]):
                    c = dict(BASE, workers=w, persistent_workers=pers, prefetch_factor=pf)
                    if fmt != "files":
                        c["format"] = fmt
                    configs[key(c)] = c
    for c in real_reliefs(p).values():
        configs.setdefault(relief_key(c), c)
    return configs


def measure_pipeline(name: str, p: dict, data: str, out: str, reps: int, steps: int) -> List[dict]:
    """The real side of one pipeline: the base capture (runs/NAME/base.trace.jsonl.gz) and every
    configuration of grid_configs measured reps times, round-robin (drift spreads evenly). Returns the
    runs, each tagged with its pipeline and configuration."""
    pdir = os.path.join(out, "runs", name)
    os.makedirs(pdir, exist_ok=True)
    trace = os.path.join(pdir, "base.trace.jsonl.gz")
    capture = run_bench(bench_cmd(data, p, BASE, steps, ["--trace", trace]), os.path.join(pdir, "base.capture.json"))
    runs = [dict(capture, pipeline=name, config="capture", rep=0)]
    configs = grid_configs(p)
    keys = list(configs)
    for rep in range(reps):
        # Rotated by rep places, odd repetitions reversed: no configuration always runs first or after
        # the same neighbour.
        shift = rep % len(keys)
        order = keys[shift:] + keys[:shift]
        if rep % 2:
            order.reverse()
        for k in order:
            c = configs[k]
            cdata = p["half_latency_data"] if c.get("half_latency") else data
            r = run_bench(bench_cmd(cdata, p, c, steps, ["--no-capture"]), os.path.join(pdir, f"{k}.r{rep}.json"))
            runs.append(dict(r, pipeline=name, config=k, rep=rep))
        log(f"{name}: repetition {rep + 1}/{reps} done ({len(keys)} configurations)")
    return runs


def ensure_dataset(data: str) -> None:
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "capture"))
    stamp = "make-dataset --images 320 --videos 8 --frames 8 --formats files,tar --seed 0"
    stamp_file = os.path.join(data, ".simreplay-dataset-args")
    if not os.path.exists(stamp_file) or open(stamp_file).read().strip() != stamp:
        shutil.rmtree(data, ignore_errors=True)
        subprocess.run([PYTHON, "-m", "simreplay_capture.bench", *stamp.split(), "--out", data], env=env,
                       check=True, capture_output=True)
        with open(stamp_file, "w") as f:
            f.write(stamp + "\n")


def record_runs(a: argparse.Namespace) -> Optional[dict]:
    """The real side: every pipeline's capture and grid, written to OUT/runs.json (None: FUSE missing)."""
    ensure_dataset(a.data)
    runs: List[dict] = []
    pipelines = {}
    for name in a.pipelines.split(","):
        p = dict(PIPELINES[name])
        pipelines[name] = dict(p, configs=grid_configs(p))
        if p["slow"]:
            try:
                with SlowMount(a.data, os.path.join(a.out, "slow-mount"), SLOW_LATENCY_S) as m, \
                        SlowMount(a.data, os.path.join(a.out, "slow-mount-half"), SLOW_LATENCY_S / 2) as half:
                    p["half_latency_data"] = half.mountpoint
                    runs += measure_pipeline(name, p, m.mountpoint, a.out, a.reps, a.steps)
            except OSError as e:
                log(f"skipped: {e}")
                return None
        else:
            runs += measure_pipeline(name, p, a.data, a.out, a.reps, a.steps)
    doc = {"schema": "simreplay.advice-runs/1", "meta": run_meta(reps=a.reps, steps=a.steps),
           "cores": os.cpu_count(), "steps": a.steps, "pipelines": pipelines, "runs": runs}
    with open(os.path.join(a.out, "runs.json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    return doc
