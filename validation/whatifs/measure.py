"""The measurement side of the what-if validation (validation/whatifs/run.py, docs/validation.md "What-ifs
beyond the loader knobs"): the datasets, the cases, the real bench runs with their noise screen, the base
captures and the probes. `record(OUT, DATA, ...)` writes OUT/runs.json and OUT/runs/ (the base traces,
probe-media.json, probe-cpu.json, probe-storage.json): what validation/evidence/record.py keeps as the
"whatifs" recording. Its digest is the set's measurement side: a change here asks for a new recording."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "capture"))
from simreplay_capture import host_screen, procfs  # noqa: E402  (the capture package's one /proc reader)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = "/usr/bin/python3"
SAMPLES, STEPS, WARMUP, BATCH, WORKERS, STEP_S, CROP = 480, 240, 10, 8, 2, 0.02, 96
BASE_CAPTURES = 3  # captured base runs calibrated together
FOREIGN_LIMIT = 0.10  # a run with more foreign CPU or steal than this share of the host is repeated
LOADED_RETRIES = 3
# dataset name -> make-dataset arguments (every dataset: 480 samples, seed 0)
DATASETS = {
    "base": ["--video-share", "0.1", "--frames", "4", "--image-scale", "0.5", "--formats", "files,tfrecord"],
    "frames8": ["--video-share", "0.1", "--frames", "8", "--image-scale", "0.5", "--formats", "files"],
    "size2x": ["--video-share", "0.1", "--frames", "4", "--image-scale", "1.0", "--formats", "files"],
    "half": ["--video-share", "0.1", "--frames", "4", "--image-scale", "0.25", "--formats", "files"],
    "share30": ["--video-share", "0.3", "--frames", "4", "--image-scale", "0.5", "--formats", "files"],
}
# The CPU probe's dataset: the base media mix drawn afresh (another seed) from the photos the base
# dataset does not use, as the suites' probes are (validation/suite/suite.json, calibration.cpu_probe).
PROBE_DATASET = ["--samples", "240", "--seed", "11", "--video-share", "0.1", "--frames", "4", "--image-scale", "0.5",
                 "--formats", "files"]
PROBE_ARGS = ["--seconds-per-point", "3", "--rounds", "2", "--max-workers", "4"]
MEDIA_PROBE_ARGS = ["--image-size", str(CROP), "--frames", "4", "--scales", "0.5,1,2", "--frame-scales", "1,2",
                    "--samples", "24"]
# case -> (dataset, bench format, frames, drop caches before the run, scenario overrides); a case named
# NAME-w1 is NAME at 1 loader worker (the measured run and the prediction; the model stays the base one)
CASES: Dict[str, Any] = {
    "base": ("base", "files", 4, False, {}),
    "frames8": ("frames8", "files", 8, False, {"data": {"media": {"mp4": {"frames": 8}}}}),
    "size2x": ("size2x", "files", 4, False, {"data": {"media": {"jpeg": {"scale": 2}}}}),
    "half": ("half", "files", 4, False, {"data": {"media": {"jpeg": {"scale": 0.5}}}}),
    "share30": ("share30", "files", 4, False,
                {"data": {"media": {"jpeg": {"share": 0.7}, "mp4": {"share": 0.3}}}}),
    "tfrecord": ("base", "tfrecord", 4, False, {"data": {"format": "tfrecord"}}),
    "cold": ("base", "files", 4, True, "cold"),
}
for _name in ("base", "frames8", "size2x", "half"):
    CASES[_name + "-w1"] = CASES[_name]
MEDIA_CASES = {"frames8", "size2x", "half", "frames8-w1", "size2x-w1", "half-w1"}


def workers_of(case: str) -> int:
    return 1 if case.endswith("-w1") else WORKERS


def sh(args: List[str], **kw: Any) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=True, **kw)


def capture_env() -> Dict[str, str]:
    """The environment of a capture-package command (bench, probes): this checkout's package first."""
    return dict(os.environ, PYTHONPATH=os.path.join(REPO, "capture"))


def make_dataset(out: str, dataset_args: List[str]) -> None:
    """`bench make-dataset` into OUT with ARGS, unless OUT holds one made with the same ARGS (stamped)."""
    stamp = " ".join(dataset_args)
    stamp_path = os.path.join(out, ".simreplay-dataset-args")
    if os.path.exists(os.path.join(out, "dataset.json")) and os.path.exists(stamp_path):
        with open(stamp_path) as f:
            if f.read().strip() == stamp:
                return
    sh(["rm", "-rf", out])
    sh([PY, "-m", "simreplay_capture.bench", "make-dataset", "--out", out] + dataset_args, env=capture_env())
    with open(stamp_path, "w") as f:
        f.write(stamp + "\n")


def make_datasets(data_dir: str, names: List[str]) -> None:
    for name in names:
        make_dataset(os.path.join(data_dir, name), ["--samples", str(SAMPLES), "--seed", "0"] + DATASETS[name])


def drop_caches() -> bool:
    if os.geteuid() != 0:
        return False
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")
    return True


def bench(simreplay: str, data: str, fmt: str, frames: int, out_json: str, trace: Optional[str] = None,
          workers: int = WORKERS) -> Dict[str, Any]:
    """One bench run; its summary gains `noise`: the host's window (procfs.noise_window), the share of all
    cores' time spent busy outside this run's own processes (`foreign_cpu_fraction`) and the host screen
    on either side (`host_before`, `host_after`: delivered cores, the cost of a fresh page)."""
    args = [PY, "-m", "simreplay_capture.bench", "run", "--data", data, "--format", fmt,
            "--workers", str(workers), "--batch-size", str(BATCH), "--steps", str(STEPS),
            "--warmup-steps", str(WARMUP), "--step-time-s", str(STEP_S), "--image-size", str(CROP),
            "--frames", str(frames), "--seed", "0", "--summary-json", out_json]
    args += ["--trace", trace] if trace else ["--no-capture"]
    screen_before = host_screen.screen(simreplay)
    before, own0 = procfs.noise_sample(), procfs.children_cpu_ns()
    sh(args, env=capture_env(), stdout=subprocess.DEVNULL)
    after, own = procfs.noise_sample(), procfs.children_cpu_ns() - own0
    screen_after = host_screen.screen(simreplay)
    with open(out_json) as f:
        summary = json.load(f)
    summary["noise"] = dict(procfs.noise_window(before, after),
                            foreign_cpu_fraction=procfs.foreign_cpu_fraction(before, after, own),
                            host_below_bound=host_screen.below_bound(screen_before, screen_after))
    summary["host_before"], summary["host_after"] = screen_before, screen_after
    return summary


def loaded(noise: Dict[str, float]) -> bool:
    return (noise["foreign_cpu_fraction"] > FOREIGN_LIMIT or noise["steal_fraction"] > FOREIGN_LIMIT
            or bool(noise.get("host_below_bound")))


def scored_bench(*args: Any, **kw: Any) -> Dict[str, Any]:
    """A measured run: repeated while it ran under foreign load (the discarded runs' throughput and noise
    kept in `discarded`); after LOADED_RETRIES the last one is kept and flagged `loaded`."""
    discarded: List[Dict[str, Any]] = []
    for attempt in range(LOADED_RETRIES + 1):
        s = bench(*args, **kw)
        if not loaded(s["noise"]) or attempt == LOADED_RETRIES:
            s["loaded"], s["discarded"] = loaded(s["noise"]), discarded
            return s
        n = s["noise"]
        print(f"  foreign load (cpu {n['foreign_cpu_fraction']:.0%}, steal {n['steal_fraction']:.0%}): run repeated",
              flush=True)
        discarded.append({"throughput_samples_per_s": s["throughput_samples_per_s"], "noise": n})
        time.sleep(2)
    raise AssertionError("unreachable")


def run_record(case: str, rep: int, s: Dict[str, Any]) -> Dict[str, Any]:
    """One measured run as runs.json keeps it (flat: the host facts record.py summarises)."""
    n = s["noise"]
    return {"case": case, "rep": rep, "throughput_samples_per_s": s["throughput_samples_per_s"], "noise": n,
            "loaded": s["loaded"], "discarded": s["discarded"], "steal_fraction": n["steal_fraction"],
            "loadavg_before": n["loadavg_before"], "host_before": s["host_before"], "host_after": s["host_after"]}


def record(simreplay: str, out: str, data: str, cases: List[str], reps: int, cpu_probe: bool,
           media_probe: bool) -> Dict[str, Any]:
    """The real side: base captures, probes and every case's runs (interleaved by case, one discarded
    warm-up run per case first), written to OUT/runs.json and OUT/runs/."""
    runs_dir = os.path.join(out, "runs")
    os.makedirs(runs_dir, exist_ok=True)
    make_datasets(data, sorted({CASES[c][0] for c in cases} | {"base"}))
    base_data = os.path.join(data, "base")
    doc: Dict[str, Any] = {
        "schema": "simreplay.whatif-runs/1", "root": os.geteuid() == 0, "cases": cases,
        "settings": {"samples": SAMPLES, "steps": STEPS, "warmup_steps": WARMUP, "batch_size": BATCH,
                     "num_workers": WORKERS, "step_time_s": STEP_S, "crop": CROP, "reps": reps,
                     "base_captures": BASE_CAPTURES, "foreign_limit": FOREIGN_LIMIT},
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "base_captures": [], "runs": []}
    bench(simreplay, base_data, "files", 4, os.path.join(runs_dir, "warmup.json"))
    for k in range(BASE_CAPTURES):
        trace = f"base-{k}.jsonl.gz"
        s = scored_bench(simreplay, base_data, "files", 4, os.path.join(runs_dir, f"base-capture-{k}.json"),
                         os.path.join(runs_dir, trace))
        doc["base_captures"].append(dict(run_record("base-capture", k, s), trace=trace))
    if cpu_probe:
        t = time.monotonic()
        probe_data = os.path.join(data, "cpu-probe")
        make_dataset(probe_data, PROBE_DATASET + ["--exclude-sources", base_data])
        sh([PY, "-m", "simreplay_capture.probe_cpu", "--bench-data", probe_data, "--format", "files",
            "--image-size", str(CROP), "--frames", "4", "--batch-size", str(BATCH), "--prefetch-factor", "2",
            "--seed", "0", *PROBE_ARGS, "--out", os.path.join(runs_dir, "probe-cpu.json")],
           env=capture_env(), stdout=subprocess.DEVNULL)
        doc["cpu_probe_wall_s"] = time.monotonic() - t
    if media_probe:
        t = time.monotonic()
        sh([PY, "-m", "simreplay_capture.probe_media", "--bench-data", base_data, *MEDIA_PROBE_ARGS,
            "--out", os.path.join(runs_dir, "probe-media.json")], env=capture_env(), stdout=subprocess.DEVNULL)
        doc["media_probe_wall_s"] = time.monotonic() - t
    if "cold" in cases:
        sh([simreplay, "probe", "storage", data, "--quick", "--out", os.path.join(runs_dir, "probe-storage.json")],
           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for c in cases:
        ds, fmt, frames, _, _ = CASES[c]
        bench(simreplay, os.path.join(data, ds), fmt, frames, os.path.join(runs_dir, f"{c}-warmup.json"),
              workers=workers_of(c))
    for rep in range(reps):
        for c in cases:
            ds, fmt, frames, cold, _ = CASES[c]
            if cold and not drop_caches():
                continue
            s = scored_bench(simreplay, os.path.join(data, ds), fmt, frames, os.path.join(runs_dir, f"{c}-{rep}.json"),
                             workers=workers_of(c))
            doc["runs"].append(run_record(c, rep, s))
        print(f"repetition {rep + 1}/{reps} done", flush=True)
    doc["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with open(os.path.join(out, "runs.json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    return doc
