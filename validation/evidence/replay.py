#!/usr/bin/python3
"""Replays the evidence corpus with the code under test (docs/evidence-format.md): every recording under
validation/evidence/recordings/ is calibrated, predicted and scored by the tree's simreplay against the
reality it recorded, deterministically, and compared with the committed baseline.

    validation/evidence/replay.py [--bin build/simreplay] [--out build/evidence-replay] [SET ...]
                                  [--write-baseline] [--perturb-decode F]

Gate (exit 1): a case whose error got worse than its baseline by more than 1 percentage point, or a
set's median error that got worse, each named on one line; a recording without a baseline, or a baseline
without its recording. Exit 2: a recording whose measurement side (bench pipeline, harness, spec) no
longer matches the tree ("re-record SET"), or bad usage. The accuracy targets (docs/validation.md) are
evaluated and printed on every replay; they do not gate. --write-baseline writes the baseline from this
replay (its own commit: docs/evidence-format.md). --perturb-decode F multiplies every recorded sample's
decode, CPU and wall time by F before calibrating: a deliberately worsened model, which the gate must
catch (tests/evidence/worsened_model_test.py).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sets import BASELINE, PYTHON, RECORDINGS, REPO, SETS, EvidenceSet, measurement_digest  # noqa: E402

CASE_TOLERANCE_PP = 1.0    # a case may get worse by this much before the gate fails
MEDIAN_TOLERANCE_PP = 0.01  # rounding only: a set's median may not get worse
ROUND = 4                   # decimals kept in replay.json and the baseline


def recordings(root: str, selected: List[str]) -> List[Tuple[EvidenceSet, str]]:
    found = []
    for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        if name not in SETS:
            raise SystemExit(f"replay.py: {root}/{name}: not an evidence set ({', '.join(SETS)})")
        if selected and name not in selected:
            continue
        for rec in sorted(os.listdir(os.path.join(root, name))):
            if not rec.endswith(".partial"):
                found.append((SETS[name], os.path.join(root, name, rec)))
    return found


def stale_measurement_side(evidence_set: EvidenceSet, recording: Dict[str, Any]) -> List[str]:
    """The files of the set's measurement side, as the tree defines it now, that differ from the
    recording's (or that it did not digest): empty when none. A file the definition no longer counts
    does not make a recording stale."""
    now, then = measurement_digest(evidence_set), recording["measurement_digest"]
    return sorted(k for k in now if k != "*" and now[k] != then.get(k))


def perturb_trace(path: str, factor: float) -> None:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        lines = f.read().splitlines()
    out = []
    for line in lines:
        if '"type":"sample"' in line.replace(" ", ""):
            rec = json.loads(line)
            for k in ("decode_ns", "cpu_ns", "wall_ns"):
                if isinstance(rec.get(k), int):
                    rec[k] = int(rec[k] * factor)
            line = json.dumps(rec, separators=(",", ":"))
        out.append(line)
    with opener(path, "wt") as f:
        f.write("\n".join(out) + "\n")


def unpack(recording_dir: str, recording: Dict[str, Any], work: str, perturb: Optional[float]) -> Tuple[str, str]:
    """The recording's runs in WORK/runs (paths re-pointed there) and its dataset index in WORK/dataset."""
    shutil.rmtree(work, ignore_errors=True)
    runs, dataset = os.path.join(work, "runs"), os.path.join(work, "dataset")
    os.makedirs(runs)
    os.makedirs(dataset)
    with tarfile.open(os.path.join(recording_dir, "runs.tar.gz")) as tar:
        tar.extractall(runs)
    shutil.copyfile(os.path.join(recording_dir, "dataset.json"), os.path.join(dataset, "dataset.json"))
    shutil.copyfile(os.path.join(recording_dir, "dataset-args.txt"), os.path.join(dataset, ".simreplay-dataset-args"))
    old = recording["harness_out_dir"].rstrip("/")
    for root, _, files in os.walk(runs):
        for f in files:
            p = os.path.join(root, f)
            if f.endswith(".json"):
                text = open(p).read()
                if old in text:
                    open(p, "w").write(text.replace(old, runs))
            elif perturb and (f.endswith(".jsonl.gz") or f.endswith(".jsonl")):
                perturb_trace(p, perturb)
    return runs, dataset


def _r(x: Optional[float]) -> Optional[float]:
    return None if x is None else round(float(x), ROUND)


def run_analysis(what: str, cmd: List[str], log_path: str, result_path: str) -> Optional[str]:
    """Runs one re-analysis, keeping its output in LOG_PATH; None when it wrote RESULT_PATH (a failed
    accuracy check, exit 4, or runs left unscored by foreign load, exit 75, is a result like any other),
    else the error to report."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    with open(log_path, "w") as f:
        f.write(proc.stdout + proc.stderr)
    if proc.returncode in (0, 4, 75) and os.path.exists(result_path):
        return None
    return f"{what} exited {proc.returncode}: {(proc.stderr.strip().splitlines() or ['no message'])[-1]}"


def score_suite(evidence_set: EvidenceSet, binary: str, runs: str, dataset: str, out: str) -> Dict[str, Any]:
    result = os.path.join(out, "result")
    path = os.path.join(result, "validation.json")
    error = run_analysis("simreplay validate --ingest",
                         [binary, "validate", os.path.join(REPO, evidence_set.spec), "--ingest", runs, "--out", result,
                          "--data", dataset], os.path.join(out, "validate.log"), path)
    if error:
        return {"error": error}
    per_case = json.load(open(path))["thresholds"].get("per_case", [])
    cases = {c["case"]: {"train_throughput_error_pct": _r(c.get("train_throughput_error_pct")),
                         "gpu_idle_error_pp": _r(c.get("gpu_idle_error_pp"))} for c in per_case}
    return {"cases": cases}


def score_multinode(evidence_set: EvidenceSet, binary: str, runs: str, dataset: str, out: str) -> Dict[str, Any]:
    path = os.path.join(runs, "multinode.json")
    error = run_analysis("multinode.py --ingest",
                         [PYTHON, os.path.join(REPO, "validation", "suite", "multinode.py"), "--spec",
                          os.path.join(REPO, evidence_set.spec), "--out", runs, "--ingest", "--data", dataset,
                          "--bin", binary], os.path.join(out, "multinode.log"), path)
    if error:
        return {"error": error}
    cases = {}
    for e in json.load(open(path))["results"]:
        err = e.get("error") if isinstance(e.get("error"), dict) else {}
        if not e.get("held_by_testbed", True):
            continue
        cases[e["case"]] = {"train_throughput_error_pct": _r(err.get("train_throughput_samples_per_s")),
                            "step_time_error_pct": _r(err.get("step_time_s")),
                            "gpu_idle_error_pp": _r(err.get("gpu_idle_fraction"))}
    return {"cases": cases}


def ingest_harness(kind: str, binary: str, runs: str, out: str, result_name: str) -> Tuple[Optional[Dict[str, Any]], str]:
    """`validation/KIND/run.py --ingest RUNS` into OUT/result: its RESULT_NAME document, or the error."""
    result = os.path.join(out, "result")
    path = os.path.join(result, result_name)
    error = run_analysis(f"{kind}/run.py --ingest",
                         [PYTHON, os.path.join(REPO, "validation", kind, "run.py"), "--ingest", runs, "--out", result,
                          "--bin", binary], os.path.join(out, f"{kind}.log"), path)
    return (None, error) if error else (json.load(open(path)), "")


def score_advice(evidence_set: EvidenceSet, binary: str, runs: str, dataset: str, out: str) -> Dict[str, Any]:
    doc, error = ingest_harness("advice", binary, runs, out, "advice-validation.json")
    if doc is None:
        return {"error": error}
    cases = {}
    for r in doc["results"]:
        cases[r["pipeline"]] = {"regret_pct": None if r["regret"] is None else _r(100 * r["regret"])}
        if not r["recommended_in_grid"]:
            cases[r["pipeline"]]["outside_grid"] = r["recommended"]
    return {"cases": cases}


def score_whatifs(evidence_set: EvidenceSet, binary: str, runs: str, dataset: str, out: str) -> Dict[str, Any]:
    doc, error = ingest_harness("whatifs", binary, runs, out, "whatifs.json")
    if doc is None:
        return {"error": error}
    return {"cases": {c: {"train_throughput_error_pct": _r(e.get("error_pct"))}
                      for c, e in doc["cases"].items() if "skipped" not in e}}


def score_remote(evidence_set: EvidenceSet, binary: str, runs: str, dataset: str, out: str) -> Dict[str, Any]:
    doc, error = ingest_harness("remote", binary, runs, out, "remote.json")
    if doc is None:
        return {"error": error}
    return {"cases": {f"{cfg['tag']}/{c}": {"train_throughput_error_pct": _r(e["error_pct"])}
                      for cfg in doc["configs"] for c, e in cfg["cases"].items()}}


SCORERS = {"suite": score_suite, "multinode": score_multinode, "advice": score_advice, "whatifs": score_whatifs,
           "remote": score_remote}


def summarise(evidence_set: EvidenceSet, scored: Dict[str, Any]) -> Dict[str, Any]:
    """Set-level figures and the targets' verdicts (reported, never gated)."""
    cases = scored.get("cases", {})
    def values(metric: str) -> List[float]:
        return [abs(c[metric]) for c in cases.values() if c.get(metric) is not None]
    train = values("train_throughput_error_pct")
    figures = {"median_abs_train_throughput_error_pct": _r(statistics.median(train)) if train else None,
               "max_abs_train_throughput_error_pct": _r(max(train)) if train else None,
               "max_abs_gpu_idle_error_pp": _r(max(values("gpu_idle_error_pp"))) if values("gpu_idle_error_pp") else None,
               "max_abs_step_time_error_pct": _r(max(values("step_time_error_pct"))) if values("step_time_error_pct") else None,
               "max_regret_pct": _r(max(values("regret_pct"))) if values("regret_pct") else None}
    targets = {k: {"value": figures.get(k), "limit": limit,
                   "pass": figures.get(k) is not None and figures[k] <= limit}
               for k, limit in evidence_set.targets.items()}
    return {"figures": figures, "targets": targets}


def headline(entry: Dict[str, Any]) -> str:
    f = entry["figures"]
    if f.get("max_regret_pct") is not None or not entry["cases"]:
        return f"worst regret {f.get('max_regret_pct')}% over {len(entry['cases'])} pipelines"
    return (f"median |train error| {f['median_abs_train_throughput_error_pct']}%, worst "
            f"{f['max_abs_train_throughput_error_pct']}% over {len(entry['cases'])} cases")


def regressions(key: str, now: Dict[str, Any], base: Dict[str, Any]) -> List[str]:
    """One line per case or median that got worse than its baseline."""
    lines = []
    for case, metrics in sorted(base.get("cases", {}).items()):
        got = now.get("cases", {}).get(case)
        if got is None:
            lines.append(f"{key}: {case}: no prediction (baseline has one)")
            continue
        for metric, was in sorted(metrics.items()):
            if not isinstance(was, (int, float)):
                continue
            is_ = got.get(metric)
            if is_ is None:
                lines.append(f"{key}: {case}: {metric} missing (baseline {was:+.2f})")
            elif abs(is_) > abs(was) + CASE_TOLERANCE_PP:
                lines.append(f"{key}: {case}: {metric} {is_:+.2f} (baseline {was:+.2f}, worse by "
                             f"{abs(is_) - abs(was):.2f} pp > {CASE_TOLERANCE_PP:g})")
    was = base.get("figures", {}).get("median_abs_train_throughput_error_pct")
    is_ = now.get("figures", {}).get("median_abs_train_throughput_error_pct")
    if was is not None and (is_ is None or is_ > was + MEDIAN_TOLERANCE_PP):
        lines.append(f"{key}: set median |train throughput error| {is_} % (baseline {was} %): worse")
    return lines


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sets", nargs="*", help="replay only these sets (default: all)")
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "simreplay"))
    ap.add_argument("--out", default=os.path.join(REPO, "build", "evidence-replay"))
    ap.add_argument("--baseline", default=BASELINE)
    ap.add_argument("--recordings", default=RECORDINGS, help="the corpus (default validation/evidence/recordings)")
    ap.add_argument("--write-baseline", action="store_true")
    ap.add_argument("--perturb-decode", type=float, metavar="F")
    args = ap.parse_args(argv)
    binary = os.path.abspath(args.bin)
    if not os.access(binary, os.X_OK):
        print(f"replay.py: no simreplay binary at {binary} (build it, or pass --bin)", file=sys.stderr)
        return 2
    found = recordings(args.recordings, args.sets)
    if not found:
        print(f"replay.py: no recordings under {args.recordings}", file=sys.stderr)
        return 2
    report: Dict[str, Any] = {"schema": "simreplay.evidence-replay/1", "recordings": {}}
    stale: List[str] = []
    skipped: List[str] = []
    for evidence_set, rec_dir in found:
        key = os.path.relpath(rec_dir, args.recordings)
        if evidence_set.kind == "multinode" and os.geteuid() != 0:
            print(f"replay: {key}: skipped (the multi-node suite re-analyses as root only)")
            skipped.append(key)
            continue
        recording = json.load(open(os.path.join(rec_dir, "recording.json")))
        # Only a set's newest recording must come from the tree's measurement side: a changed harness
        # asks for a new recording, and the older ones stay, replayed as the data of their own harness.
        newest = rec_dir == max(d for s, d in found if s.name == evidence_set.name)
        changed = stale_measurement_side(evidence_set, recording) if newest else []
        if changed:
            stale.append(f"re-record {evidence_set.name} ({key}): its measurement side changed: {', '.join(changed[:4])}"
                         f"{' ...' if len(changed) > 4 else ''}")
            continue
        work = os.path.join(args.out, key)
        runs, dataset = unpack(rec_dir, recording, work, args.perturb_decode)
        scored = SCORERS[evidence_set.kind](evidence_set, binary, runs, dataset, work)
        entry = dict(scored, **summarise(evidence_set, scored), set=evidence_set.name, held_out=evidence_set.held_out,
                     recorded=recording["recorded_utc_start"], commit=recording["commit"][:7],
                     host={k: recording["host"].get(k) for k in ("cores", "cpu_model", "fresh_page_touch_us_median",
                                                                  "steal_fraction_max", "loadavg_before_median")})
        report["recordings"][key] = entry
        print(f"replay: {key}: {entry['error'] if 'error' in entry else headline(entry)}", flush=True)
    for line in stale:
        print(f"replay: {line}")
    if stale:
        return 2
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "replay.json"), "w") as fh:
        json.dump(report, fh, indent=1, sort_keys=True)
        fh.write("\n")
    for key, entry in report["recordings"].items():
        for name, t in entry.get("targets", {}).items():
            print(f"target (reported): {key}: {name} {t['value']} (limit {t['limit']:g}): {'pass' if t['pass'] else 'FAIL'}")
    if args.write_baseline:
        # Replaying some sets rewrites their entries only; the other sets' entries are kept as they were.
        kept = {} if not args.sets or not os.path.exists(args.baseline) else {
            k: v for k, v in json.load(open(args.baseline))["recordings"].items() if k.split("/")[0] not in args.sets}
        baseline = {"schema": "simreplay.evidence-baseline/1",
                    "recordings": dict(kept, **{k: {"cases": e.get("cases", {}), "figures": e.get("figures", {})}
                                                for k, e in report["recordings"].items()})}
        with open(args.baseline, "w") as fh:
            json.dump(baseline, fh, indent=1, sort_keys=True)
            fh.write("\n")
        print(f"replay: wrote {os.path.relpath(args.baseline, REPO)}")
        return 0
    base = json.load(open(args.baseline))["recordings"] if os.path.exists(args.baseline) else {}
    problems = [f"{k}: {e['error']}" for k, e in report["recordings"].items() if "error" in e]
    problems += [f"{k}: no baseline (replay.py --write-baseline, in a commit of its own)"
                 for k in report["recordings"] if k not in base]
    if not args.sets:
        problems += [f"{k}: in the baseline but not recorded" for k in base
                     if k not in report["recordings"] and k not in skipped]
    problems += [f"{k}: {case}: tune recommends {c['outside_grid']}, outside the recorded grid (a coverage failure: "
                 "record a grid that holds it)" for k, e in report["recordings"].items()
                 for case, c in sorted(e.get("cases", {}).items()) if c.get("outside_grid")]
    for key, entry in report["recordings"].items():
        if key in base and "error" not in entry:
            problems += regressions(key, entry, base[key])
    for line in problems:
        print(f"REGRESSION {line}")
    print(f"replay: {len(report['recordings'])} recordings, "
          + (f"{len(problems)} regression(s): FAIL" if problems else "no regression against the baseline: pass"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
