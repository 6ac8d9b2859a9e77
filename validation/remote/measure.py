"""The measurement side of the remote-storage validation (validation/remote/run.py, docs/remote-storage.md
"Validation"): the dataset, the local capture the model is calibrated from, the CPU probe, and per server
configuration (nginx in a network namespace, object_server.py) the HTTP probe and the real bench runs
with the server's access log. `record(...)` writes OUT/runs.json and OUT/runs/: what
validation/evidence/record.py keeps as the "remote" recording. Its digest is the set's measurement side:
a change here (or in object_server.py) asks for a new recording."""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "capture"))
from object_server import ObjectServer  # noqa: E402
from simreplay_capture import host_screen, procfs  # noqa: E402

PY = "/usr/bin/python3"
SAMPLES, STEPS, WARMUP, BATCH, STEP_S, CROP = 160, 20, 4, 8, 0.02, 96
SHARD_SAMPLES = 64  # make-dataset's tar shards (bench/dataset.py)
LINK_BITS_PER_S = 1_000_000_000


def env() -> Dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.path.join(REPO, "capture"))


def shard_bytes(data: str) -> List[int]:
    """The dataset's tar shards' sizes in shard order: what a user reads off an object listing (not a
    measurement of any run)."""
    with open(os.path.join(data, "dataset.json")) as f:
        tar = json.load(f)["formats"]["tar"]
    return [os.path.getsize(os.path.join(data, tar["path"], name)) for name in tar["shards"]]


def bench_args(data: str, workers: int, out_json: str, trace: str = "", stream: bool = False) -> List[str]:
    a = [PY, "-m", "simreplay_capture.bench", "run", "--data", data, "--format", "tar" if stream else "files",
         "--workers", str(workers),
         "--batch-size", str(BATCH), "--steps", str(STEPS), "--warmup-steps", str(WARMUP), "--step-time-s",
         str(STEP_S), "--image-size", str(CROP), "--frames", "4", "--seed", "0", "--summary-json", out_json]
    return a + (["--trace", trace] if trace else ["--no-capture"]) + (["--stream"] if stream else [])


def cases_of(modes: List[str], workers: List[int]) -> List[Tuple[str, int]]:
    """Every (mode, workers) case of a configuration: map-style GETs and streamed shards at each worker
    count, and the cache cold then warm at the fewest and the most workers (in this order)."""
    cases = [(m, k) for m in modes if m != "cache" for k in workers]
    if "cache" in modes:
        for k in sorted({workers[0], workers[-1]}):
            cases += [("cache-cold", k), ("cache-warm", k)]
    return cases


def make_datasets(out: str, cpu_probe: bool) -> str:
    data = os.path.join(out, "data")
    if not os.path.exists(os.path.join(data, "dataset.json")):
        subprocess.run([PY, "-m", "simreplay_capture.bench", "make-dataset", "--out", data, "--samples", str(SAMPLES),
                        "--seed", "0", "--video-share", "0.1", "--frames", "4", "--image-scale", "0.5",
                        "--formats", "files,tar"], env=env(), check=True, stdout=subprocess.DEVNULL)
    probe_data = os.path.join(out, "probe-data")
    if cpu_probe and not os.path.exists(os.path.join(probe_data, "dataset.json")):
        subprocess.run([PY, "-m", "simreplay_capture.bench", "make-dataset", "--out", probe_data, "--samples",
                        str(SAMPLES), "--seed", "1", "--video-share", "0.1", "--frames", "4", "--image-scale", "0.5",
                        "--formats", "files", "--exclude-sources", data], env=env(), check=True,
                       stdout=subprocess.DEVNULL)
    return data


def timed_run(simreplay: str, run: Any, argv: List[str], summary: str, **kw: Any) -> Dict[str, Any]:
    """One bench run through `run` (subprocess.run, or a server's run_client) with the host's window
    around it: steal, load, foreign CPU and the host screen (delivered cores, the cost of a fresh page)."""
    screen_before = host_screen.screen(simreplay)
    before, own0 = procfs.noise_sample(), procfs.children_cpu_ns()
    run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600, **kw)
    after, own = procfs.noise_sample(), procfs.children_cpu_ns() - own0
    noise = procfs.noise_window(before, after)
    with open(summary) as f:
        throughput = json.load(f)["throughput_samples_per_s"]
    return {"throughput_samples_per_s": throughput, "steal_fraction": noise["steal_fraction"],
            "loadavg_before": noise["loadavg_before"],
            "foreign_cpu_fraction": procfs.foreign_cpu_fraction(before, after, own),
            "host_before": screen_before, "host_after": host_screen.screen(simreplay)}


def server_log_summary(log: List[Dict[str, Any]]) -> Dict[str, Any]:
    ok = [r for r in log if r["status"] in (200, 206) and r["uri"].startswith("/files/")]
    shard_gets = [r for r in log if r["status"] == 200 and r["uri"].startswith("/tar/") and r["range"] == "-"]
    return {"requests": len(log), "sample_gets": len(ok), "shard_gets": len(shard_gets),
            "bytes_per_request_median": statistics.median(r["body_bytes"] for r in ok) if ok else 0,
            "connections": len({r["connection"] for r in log}),
            "request_time_median_s": statistics.median(r["request_time_s"] for r in ok) if ok else 0}


def record_config(simreplay: str, data: str, out: str, fb_ms: float, rate: int, cases: List[Tuple[str, int]],
                  reps: int) -> Dict[str, Any]:
    """One server configuration: its HTTP probe and every case's runs, interleaved by repetition."""
    tag = f"fb{fb_ms:g}ms-rate{rate}"
    cdir = os.path.join(out, "runs", tag)
    os.makedirs(cdir, exist_ok=True)
    cfg: Dict[str, Any] = {"tag": tag, "first_byte_ms": fb_ms, "conn_rate_bytes_per_s": rate,
                           "probe": os.path.join("runs", tag, "probe-http.json"), "runs": []}
    cache_dir = os.path.join(out, "nvme-cache-" + tag)
    with ObjectServer(data, os.path.join(out, "server-" + tag), fb_ms, LINK_BITS_PER_S, rate) as srv:
        p = srv.run_client([simreplay, "probe", "storage", f"{srv.url}/tar/shard-000000.tar", "--quick",
                            "--out", os.path.join(out, cfg["probe"])], env=env(), capture_output=True, text=True,
                           timeout=600)
        if p.returncode != 0:
            raise RuntimeError(f"probe storage failed: {p.stderr[-2000:]}")
        srv.run_client(bench_args(srv.url, 2, os.path.join(cdir, "warmup.json")), env=env(), check=True,
                       stdout=subprocess.DEVNULL, timeout=600)
        for rep in range(reps):
            for m, k in cases:
                s_json = os.path.join(cdir, f"{m}-w{k}-{rep}.json")
                run_env = env()
                if m.startswith("cache"):
                    if m == "cache-cold":
                        shutil.rmtree(cache_dir, ignore_errors=True)
                    run_env["SIMREPLAY_HTTP_CACHE"] = cache_dir
                r = timed_run(simreplay, srv.run_client, bench_args(srv.url, k, s_json, stream=m == "stream"), s_json,
                              env=run_env)
                cfg["runs"].append(dict(r, config=tag, mode=m, workers=k, rep=rep))
        cfg["server_log"] = server_log_summary(srv.access_log())
    shutil.rmtree(cache_dir, ignore_errors=True)
    return cfg


def record(simreplay: str, out: str, workers: List[int], configs: List[Tuple[float, int]], modes: List[str],
           reps: int, cpu_probe: bool) -> Dict[str, Any]:
    """The real side: the local capture, the CPU probe and every configuration's probe and runs, written
    to OUT/runs.json and OUT/runs/."""
    os.makedirs(os.path.join(out, "runs"), exist_ok=True)
    data = make_datasets(out, cpu_probe)
    doc: Dict[str, Any] = {
        "schema": "simreplay.remote-runs/1", "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "settings": {"samples": SAMPLES, "steps": STEPS, "warmup_steps": WARMUP, "batch_size": BATCH,
                     "step_time_s": STEP_S, "crop": CROP, "reps": reps, "workers": workers, "modes": modes,
                     "shard_samples": SHARD_SAMPLES},
        "shard_bytes": shard_bytes(data), "local_trace": os.path.join("runs", "local.jsonl.gz"),
        "cpu_probe": os.path.join("runs", "probe-cpu.json") if cpu_probe else None, "configs": []}
    # The model's capture: local reads (page cache) at 2 workers after one warm-up run.
    subprocess.run(bench_args(data, 2, os.path.join(out, "runs", "local-warmup.json")), env=env(), check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(bench_args(data, 2, os.path.join(out, "runs", "local-capture.json"),
                              os.path.join(out, doc["local_trace"])), env=env(), check=True, stdout=subprocess.DEVNULL)
    if cpu_probe:
        # This host's contention curve on a dataset of other source images, up to the most workers run.
        subprocess.run([PY, "-m", "simreplay_capture.probe_cpu", "--bench-data", os.path.join(out, "probe-data"),
                        "--format", "files", "--image-size", str(CROP), "--frames", "4", "--batch-size", str(BATCH),
                        "--seed", "0", "--seconds-per-point", "3", "--rounds", "2", "--max-workers", str(max(workers)),
                        "--out", os.path.join(out, doc["cpu_probe"])], env=env(), check=True,
                       stdout=subprocess.DEVNULL)
    for fb_ms, rate in configs:
        doc["configs"].append(record_config(simreplay, data, out, fb_ms, rate, cases_of(modes, workers), reps))
        print(f"configuration {doc['configs'][-1]['tag']} recorded", flush=True)
    # The runs in one flat list (each names its configuration), as the recording's host facts read them.
    doc["runs"] = [r for c in doc["configs"] for r in c.pop("runs")]
    doc["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with open(os.path.join(out, "runs.json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    return doc
