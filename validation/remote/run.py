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

The real side (validation/remote/measure.py: the dataset, the local capture, the probes, the server and
the runs) and the prediction side (this file) are apart (docs/evidence-format.md, set "remote"):
--record-only writes OUT/runs.json and OUT/runs/ (what `validation/evidence/record.py remote` keeps);
--ingest DIR calibrates from DIR's local capture and CPU probe and predicts each case from its
configuration's recorded HTTP probe, with the simreplay under test; the default does both.

usage: validation/remote/run.py [--out DIR] [--reps 2] [--workers 1,2,4,8] [--first-byte-ms 10,40]
                                [--conn-rates 500000,2000000] [--reduced | --heldout | --heldout2] [--no-cpu-probe]
                                [--record-only | --ingest RECORDED_DIR] [--bin build/simreplay]
--reduced: one configuration (20 ms, 1 MB/s), workers 1,4: the smoke run. Needs root (exit 77 otherwise).
env: SIMREPLAY_BIN (build/simreplay)
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from measure import BATCH, STEPS, WARMUP, record  # noqa: E402

CASE_LIMIT_PCT = 10.0


def _whatifs() -> Any:
    """validation/whatifs/run.py (its `predict`), importing its own measure.py, not this folder's."""
    whatifs = os.path.join(REPO, "validation", "whatifs")
    ours = sys.modules.pop("measure", None)
    sys.path.insert(0, whatifs)
    try:
        spec = importlib.util.spec_from_file_location("whatifs_run", os.path.join(whatifs, "run.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)  # type: ignore[union-attr]
    finally:
        sys.path.remove(whatifs)
        if ours is not None:
            sys.modules["measure"] = ours
    return mod


def calibrate(simreplay: str, recorded_dir: str, recorded: Dict[str, Any], out: str) -> str:
    model = os.path.join(out, "model.json")
    cmd = [simreplay, "calibrate", os.path.join(recorded_dir, recorded["local_trace"]), "--out", model]
    if recorded["cpu_probe"]:
        cmd += ["--cpu-probe", os.path.join(recorded_dir, recorded["cpu_probe"])]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return model


def predict_config(simreplay: str, model: str, cfg: Dict[str, Any], runs: List[Dict[str, Any]],
                   recorded_dir: str, recorded: Dict[str, Any], out: str) -> Dict[str, Any]:
    """One configuration's cases: each predicted from the configuration's recorded HTTP probe."""
    w = _whatifs()
    with open(os.path.join(recorded_dir, cfg["probe"])) as f:
        pfit = json.load(f)["fit"]
    entry = {k: v for k, v in cfg.items() if k != "probe"}
    entry["probe"] = {k: pfit[k] for k in ("first_byte_s", "per_connection_bytes_per_s", "latency_s", "bytes_per_s",
                                           "aggregate_bytes_per_s", "useful_concurrency")}
    entry["cases"] = {}
    cases: Dict[str, List[Dict[str, Any]]] = {}
    for r in runs:
        cases.setdefault(f"{r['mode']}-w{r['workers']}", []).append(r)
    for name, case_runs in cases.items():
        m, k = case_runs[0]["mode"], case_runs[0]["workers"]
        tier = dict(pfit["object_store_tier"])
        if m == "stream":  # the bench's tar shards: one GET per shard of shard_samples samples
            tier["shard_samples"] = recorded["settings"]["shard_samples"]
            tier["shard_bytes"] = recorded["shard_bytes"]
        tiers = [tier]
        if m.startswith("cache"):  # the cache's reads as captured locally (page cache); cold: epoch 0 misses
            tiers = [{"kind": "nvme_cache", "warm": m == "cache-warm"}, tier]
        pr = w.predict(simreplay, model, {}, os.path.join(out, cfg["tag"], "predict", name), tiers, -1, k,
                       (STEPS, WARMUP), BATCH)
        measured = [r["throughput_samples_per_s"] for r in case_runs]
        med = statistics.median(measured)
        entry["cases"][name] = {"mode": m, "workers": k, "measured_samples_per_s": measured, "measured_median": med,
                                "predicted": pr["train_throughput_samples_per_s"],
                                "error_pct": 100 * (pr["train_throughput_samples_per_s"] - med) / med,
                                "tiers": tiers, "warnings": [x for x in pr["warnings"] if x.startswith("storage")]}
    return entry


def ingest(simreplay: str, recorded_dir: str, out: str, limit_pct: float) -> Dict[str, Any]:
    """The prediction side over recorded runs: OUT/remote.json."""
    with open(os.path.join(recorded_dir, "runs.json")) as f:
        recorded = json.load(f)
    os.makedirs(out, exist_ok=True)
    model = calibrate(simreplay, recorded_dir, recorded, out)
    report: Dict[str, Any] = {"schema": "simreplay.remote-validation/2", "started": recorded["started"],
                              "finished": recorded["finished"], "settings": recorded["settings"],
                              "cpu_probe": recorded["cpu_probe"] is not None, "configs": []}
    failing = []
    for cfg in recorded["configs"]:
        runs = [r for r in recorded["runs"] if r["config"] == cfg["tag"]]
        entry = predict_config(simreplay, model, cfg, runs, recorded_dir, recorded, out)
        failing += [f"{cfg['tag']} {name} {c['error_pct']:+.1f}%" for name, c in entry["cases"].items()
                    if abs(c["error_pct"]) > limit_pct]
        report["configs"].append(entry)
    report["gate"] = {"limit_pct": limit_pct, "failing": failing, "pass": not failing}
    tmp = os.path.join(out, "remote.json.tmp")
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    os.replace(tmp, os.path.join(out, "remote.json"))
    return report


def print_report(report: Dict[str, Any]) -> None:
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
    g = report["gate"]
    print(f"gate: every case within {g['limit_pct']:g}%: " + ("PASS" if g["pass"] else "FAIL (" + ", ".join(g["failing"]) + ")"))


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
    ap.add_argument("--bin", help="the simreplay to use (default $SIMREPLAY_BIN, else build/simreplay)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--record-only", action="store_true", help="measure only: write OUT/runs.json and OUT/runs/")
    mode.add_argument("--ingest", metavar="DIR", help="predict only, from the runs recorded in DIR")
    args = ap.parse_args()
    simreplay = os.path.abspath(args.bin) if args.bin else os.environ.get(
        "SIMREPLAY_BIN", os.path.join(REPO, "build", "simreplay"))
    out = os.path.abspath(args.out)
    recorded_dir = os.path.abspath(args.ingest) if args.ingest else out
    if not args.ingest:
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
        modes = [m for m in args.modes.split(",") if m]
        if not set(modes) <= {"get", "stream", "cache"}:
            ap.error(f"--modes: expected get, stream and/or cache, got {args.modes!r}")
        configs = [(float(f), int(r)) for f in args.first_byte_ms.split(",") for r in args.conn_rates.split(",")]
        record(simreplay, out, [int(w) for w in args.workers.split(",")], configs, modes, args.reps,
               cpu_probe=not args.no_cpu_probe)
        if args.record_only:
            return 0
    report = ingest(simreplay, recorded_dir, out, args.limit_pct)
    print_report(report)
    return 0 if report["gate"]["pass"] else 4


if __name__ == "__main__":
    sys.exit(main())
