#!/usr/bin/python3
"""Records evidence: runs the real-run harnesses once on this host and keeps, per set, everything a
prediction needs and everything reality said, as data under validation/evidence/recordings/
(docs/evidence-format.md). CI replays the recordings with the code under test (replay.py); fresh runs
never decide a CI verdict.

    validation/evidence/record.py [SET ...] [--bin build/simreplay] [--work build/evidence-record]

SETs: development, heldout, heldout-video (the single-node suite, validation/suite/run.sh: recorded
together, about 20 minutes), multinode (validation/suite/multinode.py, root, about 19 minutes), advice
(validation/advice/run.py --record-only: three pipelines' captures and measured grids, FUSE, about 40
minutes), whatifs (validation/whatifs/run.py --record-only: base captures, probes and the media and
storage cases, root for the cold case, about 12 minutes), remote (validation/remote/run.py
--record-only: nginx in network namespaces, root, about 20 minutes). Default: all. Refuses a tree with uncommitted changes (a recording names the commit that made it). Run it on a
quiet host; the host's facts over the window (cores, CPU model, steal, load, the cost of a fresh page)
are recorded beside every run. Exit 0 recorded, 1 a harness failed to produce its runs, 2 usage or a
dirty tree.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sets import PYTHON, RECORDINGS, REPO, SETS, EvidenceSet, measurement_digest  # noqa: E402

SUITE_SETS = ("development", "heldout", "heldout-video")
DATASET_STAMP = ".simreplay-dataset-args"
# What a recording keeps of a harness's output directory: the real runs and the probes that the
# predictions are made from; never what the code under test derives from them (models, predictions,
# reports), which the replay makes anew.
KEPT = ("runs.json", "runs", "probe-cpu.json", "probe-cpu.log", "probe-data.log", "probes", "probes-http")


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True, check=True).stdout.strip()


def dirty_paths() -> List[str]:
    return [line[3:] for line in git("status", "--porcelain").splitlines() if line.strip()]


def cpu_model() -> str:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def mem_total_bytes() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    return 0


def _median(values: List[float]) -> Optional[float]:
    return round(statistics.median(values), 6) if values else None


def host_facts(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The host as the runs saw it: fixed facts, and the runs' own screens summarised."""
    screens = [r.get(k) for r in runs for k in ("host_before", "host_after") if isinstance(r.get(k), dict)]
    page_us = [s["fresh_page_touch_us"] for s in screens if s.get("fresh_page_touch_us", 0) > 0]
    delivered = [s["delivered_cores"] for s in screens if s.get("cores", 0) > 0 and "delivered_cores" in s]
    steal = [r["steal_fraction"] for r in runs if isinstance(r.get("steal_fraction"), (int, float))
             and r["steal_fraction"] >= 0]
    load = [r["loadavg_before"] for r in runs if isinstance(r.get("loadavg_before"), (int, float))]
    return {"cores": os.cpu_count(), "cpu_model": cpu_model(), "mem_total_bytes": mem_total_bytes(),
            "kernel": platform.release(), "runs": len(runs),
            "fresh_page_touch_us_median": _median(page_us),
            "fresh_page_touch_us_max": round(max(page_us), 6) if page_us else None,
            "delivered_cores_median": _median(delivered),
            "steal_fraction_median": _median(steal), "steal_fraction_max": round(max(steal), 6) if steal else None,
            "loadavg_before_median": _median(load), "loadavg_before_max": round(max(load), 6) if load else None}


def runs_of(out_dir: str) -> List[Dict[str, Any]]:
    with open(os.path.join(out_dir, "runs.json")) as f:
        doc = json.load(f)
    return doc["runs"] if isinstance(doc, dict) else doc


def deterministic_tar(src_dir: str, names: List[str], dest: str) -> None:
    """A gzip'd tar of src_dir's NAMES, members sorted, owners and times zeroed: the same files give the
    same bytes."""
    def clean(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = 0
        return info

    members: List[str] = []
    for name in names:
        path = os.path.join(src_dir, name)
        if os.path.isfile(path):
            members.append(name)
        elif os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs.sort()
                members += [os.path.relpath(os.path.join(root, f), src_dir) for f in sorted(files)]
    import gzip
    with open(dest, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=9) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for m in sorted(members):
            tar.add(os.path.join(src_dir, m), arcname=m, recursive=False, filter=clean)


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def record_summary(evidence_set: EvidenceSet, out_dir: str) -> Dict[str, Any]:
    """What the code of the recording commit predicted on these runs: the first replay, logged."""
    if evidence_set.kind == "suite":
        path = os.path.join(out_dir, "validation.json")
        if not os.path.exists(path):
            return {}
        t = json.load(open(path))["thresholds"]
        return {"median_abs_train_throughput_error_pct": t["median_abs_train_throughput_error_pct"]["value"],
                "per_case": {c["case"]: {"train_throughput_error_pct": c.get("train_throughput_error_pct"),
                                         "gpu_idle_error_pp": c.get("gpu_idle_error_pp")}
                             for c in t.get("per_case", [])}}
    if evidence_set.kind == "advice":
        path = os.path.join(out_dir, "predicted", "advice-validation.json")
        if not os.path.exists(path):
            return {}
        return {"per_case": {r["pipeline"]: {"recommended": r["recommended"], "regret": r["regret"]}
                             for r in json.load(open(path))["results"]}}
    if evidence_set.kind == "whatifs":
        path = os.path.join(out_dir, "predicted", "whatifs.json")
        if not os.path.exists(path):
            return {}
        return {"per_case": {c: e.get("error_pct") for c, e in json.load(open(path))["cases"].items()}}
    if evidence_set.kind == "remote":
        path = os.path.join(out_dir, "predicted", "remote.json")
        if not os.path.exists(path):
            return {}
        return {"per_case": {f"{cfg['tag']}/{c}": e["error_pct"] for cfg in json.load(open(path))["configs"]
                             for c, e in cfg["cases"].items()}}
    path = os.path.join(out_dir, "multinode.json")
    if not os.path.exists(path):
        return {}
    doc = json.load(open(path))
    return {"median_abs_train_throughput_error_pct": doc["thresholds"]["median_abs_train_throughput_error_pct"]["value"],
            "per_case": {e["case"]: e.get("error") for e in doc["results"]}}


def package(evidence_set: EvidenceSet, out_dir: str, dataset_dir: str, meta: Dict[str, Any]) -> str:
    stamp = meta["recorded_utc_start"].replace("-", "").replace(":", "")[:13]
    dest = os.path.join(RECORDINGS, evidence_set.name, f"{stamp}-{meta['commit'][:7]}")
    tmp = dest + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    deterministic_tar(out_dir, [n for n in KEPT if os.path.exists(os.path.join(out_dir, n))],
                      os.path.join(tmp, "runs.tar.gz"))
    shutil.copyfile(os.path.join(dataset_dir, "dataset.json"), os.path.join(tmp, "dataset.json"))
    # The make-dataset arguments the harness stamped into the dataset (a harness rebuilds a dataset
    # whose stamp differs, so the replay needs it beside the index).
    stamp = os.path.join(dataset_dir, DATASET_STAMP)
    if os.path.exists(stamp):
        shutil.copyfile(stamp, os.path.join(tmp, "dataset-args.txt"))
    else:  # a harness that builds its dataset inside its own output (remote) and never rebuilds it
        with open(os.path.join(tmp, "dataset-args.txt"), "w") as f:
            f.write("(not stamped: the harness makes this dataset in its own output directory)\n")
    runs = runs_of(out_dir)
    doc = dict(meta, schema="simreplay.evidence-recording/1", set=evidence_set.name, spec=evidence_set.spec,
               held_out=evidence_set.held_out, host=host_facts(runs),
               measurement_digest=measurement_digest(evidence_set),
               at_recording=record_summary(evidence_set, out_dir),
               files={n: {"bytes": os.path.getsize(os.path.join(tmp, n)), "sha256": sha256_file(os.path.join(tmp, n))}
                      for n in ("runs.tar.gz", "dataset.json", "dataset-args.txt")})
    with open(os.path.join(tmp, "recording.json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)
    return dest


def repackage(recording_dir: str) -> str:
    """Packs a recording again from the harness output it was made from (still in build/evidence-record),
    with its own window, commit and exit code: for a recorder that learnt to keep more. Refused when the
    set's measurement side is no longer the one the runs were made with."""
    with open(os.path.join(recording_dir, "recording.json")) as f:
        old = json.load(f)
    evidence_set = SETS[old["set"]]
    if measurement_digest(evidence_set)["*"] != old["measurement_digest"]["*"]:
        raise SystemExit(f"record.py: {recording_dir}: the measurement side changed since it was recorded")
    dataset_dir = dataset_dir_of(old["set"])
    meta = {k: old[k] for k in ("commit", "recorded_utc_start", "recorded_utc_end", "harness_exit_code", "harness",
                                "harness_out_dir")}
    return package(evidence_set, old["harness_out_dir"], dataset_dir, meta)


def dataset_dir_of(set_name: str) -> str:
    """Where the set's harness builds its dataset."""
    data = os.path.join(REPO, "build", "validation-data")
    return {"heldout": data + "-heldout", "heldout-video": data + "-heldout-video",
            "advice": os.path.join(REPO, "build", "advice-data"),
            "whatifs": os.path.join(REPO, "build", "whatifs-data", "base")}.get(set_name, data)


def record_harness(name: str, cmd: List[str], out: str, env: Dict[str, str], commit: str,
                   first_replay: Optional[List[str]] = None, dataset_dir: Optional[str] = None) -> int:
    """Runs a harness that records one set into OUT (its runs.json), then FIRST_REPLAY (the recording
    commit's prediction, which record_summary logs), and packs it: 0, or 1 when it left no runs."""
    start = now_utc()
    code = subprocess.run(cmd, env=env).returncode
    end = now_utc()
    if not os.path.exists(os.path.join(out, "runs.json")):
        print(f"record.py: {name}: the harness (exit {code}) left no runs.json in {out}", file=sys.stderr)
        return 1
    if first_replay:
        subprocess.run(first_replay, env=env)
    dest = package(SETS[name], out, dataset_dir or dataset_dir_of(name), {
        "commit": commit, "recorded_utc_start": start, "recorded_utc_end": end, "harness_exit_code": code,
        "harness": os.path.relpath(cmd[1], REPO), "harness_out_dir": out})
    print(f"record.py: {name} -> {os.path.relpath(dest, REPO)}")
    return 0


def now_utc() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sets", nargs="*", default=list(SETS), help=f"of {', '.join(SETS)} (default: all)")
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "simreplay"))
    ap.add_argument("--work", default=os.path.join(REPO, "build", "evidence-record"))
    ap.add_argument("--repackage", nargs="+", metavar="RECORDING",
                    help="pack these recordings again from their harness outputs (nothing is run)")
    args = ap.parse_args(argv)
    if args.repackage:
        for rec in args.repackage:
            print(f"record.py: repacked {os.path.relpath(repackage(os.path.abspath(rec)), REPO)}")
        return 0
    unknown = [s for s in args.sets if s not in SETS]
    if unknown:
        print(f"record.py: unknown set(s) {', '.join(unknown)}; known: {', '.join(SETS)}", file=sys.stderr)
        return 2
    dirty = dirty_paths()
    if dirty:
        print(f"record.py: refusing to record from a tree with uncommitted changes ({dirty[0]}"
              f"{' and %d more' % (len(dirty) - 1) if len(dirty) > 1 else ''}): commit first, so that the "
              "recording names the code that made it", file=sys.stderr)
        return 2
    commit = git("rev-parse", "HEAD")
    data = os.path.join(REPO, "build", "validation-data")
    env = dict(os.environ, SIMREPLAY_BIN=os.path.abspath(args.bin), SIMREPLAY_VALIDATION_DATA=data)
    rc = 0
    if any(s in args.sets for s in SUITE_SETS):
        out = os.path.join(args.work, "suite")
        start = now_utc()
        env_suite = dict(env, SIMREPLAY_VALIDATION_HELDOUT="1" if {"heldout", "heldout-video"} & set(args.sets) else "0")
        code = subprocess.run([os.path.join(REPO, "validation", "suite", "run.sh"), out], env=env_suite).returncode
        end = now_utc()
        where = {"development": (out, data), "heldout": (os.path.join(out, "heldout"), data + "-heldout"),
                 "heldout-video": (os.path.join(out, "heldout-video"), data + "-heldout-video")}
        for name in SUITE_SETS:
            if name not in args.sets:
                continue
            set_out, set_data = where[name]
            if not os.path.exists(os.path.join(set_out, "runs.json")):
                print(f"record.py: {name}: the suite (exit {code}) left no runs.json in {set_out}", file=sys.stderr)
                rc = 1
                continue
            dest = package(SETS[name], set_out, set_data, {"commit": commit, "recorded_utc_start": start,
                                                            "recorded_utc_end": end, "harness_exit_code": code,
                                                            "harness": "validation/suite/run.sh",
                                                            "harness_out_dir": set_out})
            print(f"record.py: {name} -> {os.path.relpath(dest, REPO)}")
    if "multinode" in args.sets:
        out = os.path.join(args.work, "multinode")
        rc |= record_harness("multinode", [PYTHON, os.path.join(REPO, "validation", "suite", "multinode.py"),
                                           "--out", out, "--data", data, "--bin", os.path.abspath(args.bin)],
                             out, env, commit)
    for name in ("advice", "whatifs", "remote"):
        if name not in args.sets:
            continue
        # A harness whose real side and prediction side are apart: --record-only, then the first replay by
        # the recording commit's code (logged in recording.json's at_recording).
        out = os.path.join(args.work, name)
        harness = os.path.join(REPO, "validation", name, "run.py")
        binary = os.path.abspath(args.bin)
        data = {"advice": ["--data", dataset_dir_of("advice")],
                "whatifs": ["--data", os.path.dirname(dataset_dir_of("whatifs"))], "remote": []}[name]
        rc |= record_harness(name, [PYTHON, harness, "--record-only", "--out", out, *data, "--bin", binary],
                             out, env, commit,
                             [PYTHON, harness, "--ingest", out, "--out", os.path.join(out, "predicted"), "--bin", binary],
                             dataset_dir=os.path.join(out, "data") if name == "remote" else None)
    return rc


if __name__ == "__main__":
    sys.exit(main())
