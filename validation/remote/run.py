#!/usr/bin/python3
"""Remote-storage validation: the bench reading every sample over HTTP from a real object server (nginx
in a network namespace, validation/remote/object_server.py), predicted by `simreplay simulate` from a
model calibrated on a LOCAL capture of the same dataset plus `simreplay probe storage URL` of the
server's configuration (docs/remote-storage.md, "Validation").

Per server configuration (first-byte latency x per-connection rate; the link 1 Gbit/s):
  1. `simreplay probe storage http://SERVER/tar/shard-000000.tar --quick` from the client namespace:
     first-byte latency (median of 4 KiB ranged GETs on new connections) and per-connection rate;
  2. real runs: `bench run --data http://SERVER --format files` (map-style, one GET per sample on a new
     connection, as urllib makes them) at each worker count, uncaptured, --reps times, interleaved;
  3. predictions: storage.tiers = [the probe's fit.object_store_tier], loader.num_workers = w.
Nothing predicted uses a measurement of its own configuration: the model is from the local capture at 2
workers (page-cache reads) and, since 2026-12-03, this host's CPU contention curve from
`simreplay_capture.probe_cpu` on a dataset of other source images (pipeline only, up to the most
workers run; --no-cpu-probe leaves it assumed, as before), the store's figures from the probe (a
different access pattern: ranged GETs into a shard, not the sample files). Gate: every case's |throughput error| <= --limit-pct (10%): exit 4.

usage: validation/remote/run.py [--out DIR] [--reps 2] [--workers 1,2,4,8] [--first-byte-ms 10,40]
                                [--conn-rates 500000,2000000] [--reduced | --heldout | --heldout2] [--no-cpu-probe]
--reduced: one configuration (20 ms, 1 MB/s), workers 1,4: the smoke run. Needs root (exit 77 otherwise).
env: SIMREPLAY_BIN (build/simreplay)
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "capture"))
from object_server import ObjectServer  # noqa: E402
from simreplay_capture.manifest import git_commit  # noqa: E402  (the capture's one reader of the commit)

PY = "/usr/bin/python3"
CASE_LIMIT_PCT = 10.0
SAMPLES, STEPS, WARMUP, BATCH, STEP_S, CROP = 160, 20, 4, 8, 0.02, 96
SHARD_SAMPLES = 64  # make-dataset's tar shards (bench/dataset.py)


def _whatifs() -> Any:
    spec = importlib.util.spec_from_file_location("whatifs_run", os.path.join(REPO, "validation", "whatifs", "run.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def shard_bytes(data: str) -> List[int]:
    """The dataset's tar shards' sizes in shard order: what a user reads off an object listing (not a
    measurement of any run)."""
    with open(os.path.join(data, "dataset.json")) as f:
        tar = json.load(f)["formats"]["tar"]
    return [os.path.getsize(os.path.join(data, tar["path"], name)) for name in tar["shards"]]


def env() -> Dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.path.join(REPO, "capture"))


def bench_args(data: str, workers: int, out_json: str, trace: str = "", stream: bool = False) -> List[str]:
    a = [PY, "-m", "simreplay_capture.bench", "run", "--data", data, "--format", "tar" if stream else "files",
         "--workers", str(workers),
         "--batch-size", str(BATCH), "--steps", str(STEPS), "--warmup-steps", str(WARMUP), "--step-time-s",
         str(STEP_S), "--image-size", str(CROP), "--frames", "4", "--seed", "0", "--summary-json", out_json]
    return a + (["--trace", trace] if trace else ["--no-capture"]) + (["--stream"] if stream else [])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(REPO, "build", "remote-validation"))
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--workers", default="1,2,4,8")
    ap.add_argument("--first-byte-ms", default="10,40")
    ap.add_argument("--conn-rates", default="500000,2000000", help="bytes/s per connection (nginx limit_rate)")
    ap.add_argument("--modes", default="get,stream,cache",
                    help="get: one GET per sample (map-style); stream: tar shards as an IterableDataset; cache: "
                         "per-sample GETs through a local cache directory, a cold run then a warm one (at the "
                         "fewest and the most workers)")
    ap.add_argument("--reduced", action="store_true", help="one configuration (20 ms, 1 MB/s), workers 1 and 4")
    ap.add_argument("--heldout", action="store_true",
                    help="the frozen held-out configurations (25 ms; 1 and 4 MB/s; workers 1, 3, 6), chosen on "
                         "2026-12-03 before any model was run against them; never tuned on")
    ap.add_argument("--heldout2", action="store_true",
                    help="the second frozen held-out set (15 ms; 1.5 and 3 MB/s; workers 2 and 5), chosen on "
                         "2026-12-05 before the streamed-shard read-ahead model (made for the development "
                         "streams) was run against them; never tuned on")
    ap.add_argument("--limit-pct", type=float, default=CASE_LIMIT_PCT)
    ap.add_argument("--no-cpu-probe", action="store_true",
                    help="calibrate without the CPU probe (the contention curve assumed, as before 2026-12-03)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("remote validation: needs root (network namespaces); skipped", file=sys.stderr)
        return 77
    if args.reduced:
        args.workers, args.first_byte_ms, args.conn_rates = "1,4", "20", "1000000"
    if args.heldout and args.heldout2:
        ap.error("--heldout and --heldout2 are two sets: run them one at a time")
    if args.heldout:
        args.workers, args.first_byte_ms, args.conn_rates = "1,3,6", "25", "1000000,4000000"
    if args.heldout2:
        args.workers, args.first_byte_ms, args.conn_rates = "2,5", "15", "1500000,3000000"
    workers = [int(w) for w in args.workers.split(",")]
    modes = [m for m in args.modes.split(",") if m]
    if not set(modes) <= {"get", "stream", "cache"}:
        ap.error(f"--modes: expected get, stream and/or cache, got {args.modes!r}")
    configs = [(float(f), int(r)) for f in args.first_byte_ms.split(",") for r in args.conn_rates.split(",")]
    simreplay = os.environ.get("SIMREPLAY_BIN", os.path.join(REPO, "build", "simreplay"))
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    w = _whatifs()
    data = os.path.join(out, "data")
    if not os.path.exists(os.path.join(data, "dataset.json")):
        subprocess.run([PY, "-m", "simreplay_capture.bench", "make-dataset", "--out", data, "--samples", str(SAMPLES),
                        "--seed", "0", "--video-share", "0.1", "--frames", "4", "--image-scale", "0.5",
                        "--formats", "files,tar"], env=env(), check=True, stdout=subprocess.DEVNULL)
    shard_sizes = shard_bytes(data)  # the same files for every configuration
    code = git_commit(REPO)
    report: Dict[str, Any] = {"schema": "simreplay.remote-validation/1",
                              "commit": (code["commit"] or "unknown")[:7]
                              + (" with uncommitted changes" if code["dirty"] else ""),
                              "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                              "settings": {"samples": SAMPLES, "steps": STEPS, "warmup_steps": WARMUP, "batch_size": BATCH,
                                           "step_time_s": STEP_S, "crop": CROP, "reps": args.reps, "workers": workers},
                              "configs": []}
    # The model: a local capture (page cache) at 2 workers after one warm-up run.
    model = os.path.join(out, "model.json")
    trace = os.path.join(out, "local.jsonl.gz")
    subprocess.run(bench_args(data, 2, os.path.join(out, "local-warmup.json")), env=env(), check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(bench_args(data, 2, os.path.join(out, "local-capture.json"), trace), env=env(), check=True,
                   stdout=subprocess.DEVNULL)
    calibrate = [simreplay, "calibrate", trace, "--out", model]
    if not args.no_cpu_probe:
        # The contention curve of this host (simreplay_capture.probe_cpu), measured on a dataset of other
        # source images made the same way, up to the most workers run: what calibrate's warning asks a
        # user to run. It never reads the runs' dataset.
        probe_data = os.path.join(out, "probe-data")
        if not os.path.exists(os.path.join(probe_data, "dataset.json")):
            subprocess.run([PY, "-m", "simreplay_capture.bench", "make-dataset", "--out", probe_data, "--samples",
                            str(SAMPLES), "--seed", "1", "--video-share", "0.1", "--frames", "4", "--image-scale", "0.5",
                            "--formats", "files", "--exclude-sources", data], env=env(), check=True,
                           stdout=subprocess.DEVNULL)
        cpu_probe = os.path.join(out, "probe-cpu.json")
        subprocess.run([PY, "-m", "simreplay_capture.probe_cpu", "--bench-data", probe_data, "--format", "files",
                        "--image-size", str(CROP), "--frames", "4", "--batch-size", str(BATCH), "--seed", "0",
                        "--seconds-per-point", "3", "--rounds", "2", "--max-workers", str(max(workers)),
                        "--out", cpu_probe], env=env(), check=True, stdout=subprocess.DEVNULL)
        calibrate += ["--cpu-probe", cpu_probe]
        report["cpu_probe"] = cpu_probe
    subprocess.run(calibrate, check=True, stdout=subprocess.DEVNULL)
    failing = []
    for fb_ms, rate in configs:
        tag = f"fb{fb_ms:g}ms-rate{rate}"
        cdir = os.path.join(out, tag)
        os.makedirs(cdir, exist_ok=True)
        cfg: Dict[str, Any] = {"first_byte_ms": fb_ms, "conn_rate_bytes_per_s": rate, "cases": {}}
        cases = [(m, k) for m in modes if m != "cache" for k in workers]
        if "cache" in modes:  # cold then warm, in this order within every repetition
            for k in sorted({workers[0], workers[-1]}):
                cases += [("cache-cold", k), ("cache-warm", k)]
        cache_dir = os.path.join(cdir, "nvme-cache")
        measured: Dict[Any, List[float]] = {c: [] for c in cases}
        with ObjectServer(data, os.path.join(cdir, "server"), fb_ms, 1_000_000_000, rate) as srv:
            probe = os.path.join(cdir, "probe-http.json")
            p = srv.run_client([simreplay, "probe", "storage", f"{srv.url}/tar/shard-000000.tar", "--quick",
                                "--out", probe], env=env(), capture_output=True, text=True, timeout=600)
            if p.returncode != 0:
                print(p.stderr, file=sys.stderr)
                return 1
            with open(probe) as f:
                pfit = json.load(f)["fit"]
            cfg["probe"] = {k: pfit[k] for k in ("first_byte_s", "per_connection_bytes_per_s", "latency_s",
                                                 "bytes_per_s", "aggregate_bytes_per_s", "useful_concurrency")}
            srv.run_client(bench_args(srv.url, 2, os.path.join(cdir, "warmup.json")), env=env(), check=True,
                           stdout=subprocess.DEVNULL, timeout=600)
            for rep in range(args.reps):
                for m, k in cases:
                    s_json = os.path.join(cdir, f"{m}-w{k}-{rep}.json")
                    run_env = env()
                    if m.startswith("cache"):
                        if m == "cache-cold":
                            shutil.rmtree(cache_dir, ignore_errors=True)
                        run_env["SIMREPLAY_HTTP_CACHE"] = cache_dir
                    srv.run_client(bench_args(srv.url, k, s_json, stream=m == "stream"), env=run_env, check=True,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
                    with open(s_json) as f:
                        measured[(m, k)].append(json.load(f)["throughput_samples_per_s"])
            log = srv.access_log()
        ok = [r for r in log if r["status"] in (200, 206) and r["uri"].startswith("/files/")]
        shard_gets = [r for r in log if r["status"] == 200 and r["uri"].startswith("/tar/") and r["range"] == "-"]
        cfg["server_log"] = {"requests": len(log), "sample_gets": len(ok), "shard_gets": len(shard_gets),
                             "bytes_per_request_median": statistics.median(r["body_bytes"] for r in ok) if ok else 0,
                             "connections": len({r["connection"] for r in log}),
                             "request_time_median_s": statistics.median(r["request_time_s"] for r in ok) if ok else 0}
        for m, k in cases:
            tier = dict(pfit["object_store_tier"])
            if m == "stream":  # the bench's tar shards: one GET per shard of SHARD_SAMPLES samples
                tier["shard_samples"] = SHARD_SAMPLES
                tier["shard_bytes"] = shard_sizes
            tiers = [tier]
            if m.startswith("cache"):  # the cache's reads as captured locally (page cache); cold: epoch 0 misses
                tiers = [{"kind": "nvme_cache", "warm": m == "cache-warm"}, tier]
            name = f"{m}-w{k}"
            pr = w.predict(simreplay, model, {}, os.path.join(cdir, "predict", name), tiers, -1, k,
                           (STEPS, WARMUP), BATCH)
            med = statistics.median(measured[(m, k)])
            err = 100 * (pr["train_throughput_samples_per_s"] - med) / med
            cfg["cases"][name] = {"mode": m, "workers": k, "measured_samples_per_s": measured[(m, k)],
                                  "measured_median": med, "predicted": pr["train_throughput_samples_per_s"],
                                  "error_pct": err, "tiers": tiers,
                                  "warnings": [x for x in pr["warnings"] if x.startswith("storage")]}
            if abs(err) > args.limit_pct:
                failing.append(f"{tag} {name} {err:+.1f}%")
        report["configs"].append(cfg)
    report["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    report["gate"] = {"limit_pct": args.limit_pct, "failing": failing, "pass": not failing}
    tmp = os.path.join(out, "remote.json.tmp")
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    os.replace(tmp, os.path.join(out, "remote.json"))
    print("config                     mode  workers  measured (runs)              predicted   error")
    for cfg in report["configs"]:
        for c in cfg["cases"].values():
            print(f"fb {cfg['first_byte_ms']:4g} ms rate {cfg['conn_rate_bytes_per_s'] / 1e6:4.1f} MB/s "
                  f"{c['mode']:6s} {c['workers']:3d}  "
                  f"{c['measured_median']:7.1f} ({', '.join(f'{x:.1f}' for x in c['measured_samples_per_s'])})  "
                  f"{c['predicted']:9.1f}  {c['error_pct']:+6.1f}%")
        pr = cfg["probe"]
        print(f"  probe: first byte {pr['first_byte_s'] * 1e3:.2f} ms, {pr['per_connection_bytes_per_s'] / 1e6:.2f} MB/s "
              f"per connection; server log: {cfg['server_log']}")
    print(f"gate: every case within {args.limit_pct:g}%: " + ("PASS" if not failing else "FAIL (" + ", ".join(failing) + ")"))
    return 0 if not failing else 4


if __name__ == "__main__":
    sys.exit(main())
