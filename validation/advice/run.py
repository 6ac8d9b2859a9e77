#!/usr/bin/python3
"""Advice against real runs (docs/advice.md, "Shown on real runs"): for three real pipelines with
different bottlenecks, capture one run at a base configuration, calibrate, run `simreplay diagnose`
and `simreplay tune` on it, and score the recommendation against a grid of configurations measured
for real (validation/advice/measure.py). Reports per pipeline the regret (how far the
recommendation's measured throughput is below the best measured one) and whether the relief the
diagnosis ranks first among those that can be applied for real here is the one that bought most for
real.

Pipelines (the bench, simreplay_capture.bench, on a dataset of real opencv-doc media):
  bench      the bench as it is (128 px crops, 8-frame clips, 20 ms emulated step)
  cpu_heavy  heavy augmentation: 256 px crops of every image, 10 ms step
  storage    the bench dataset served by validation/advice/slowfs.py (FUSE, page cache bypassed): every
             file open waits 20 ms, as a GET from an object store does; 10 ms step. Its real storage
             relief is the same files served at 10 ms (the causal profile halves read times)

The real side and the prediction side are apart (docs/evidence-format.md, set "advice"):
  record   --record-only: capture each pipeline once at the base configuration, then measure every
           configuration of the grid tune chooses from on this host (workers 0..2 per core, persistent
           or not, prefetch_factor 2 and 4, files and tar shards) and the reliefs that can be applied for
           real, --reps times each; writes OUT/runs.json and OUT/runs/<pipeline>/base.trace.jsonl.gz.
           `validation/evidence/record.py advice` keeps them as a recording.
  ingest   --ingest DIR: calibrate, diagnose and tune each pipeline's recorded base capture with the
           simreplay under test and score the recommendation against the recorded grid. A recommendation
           outside the grid is a coverage failure, named (regret unknown, the gate fails).
  default  both, in one run.

Gate: every pipeline's regret <= 5% (exit 4 otherwise). The ranking agreement is reported, not gated.
Exit 77 when FUSE cannot be mounted here (the storage pipeline needs it). Every run records the
host's load average, CPU steal, foreign CPU (busy CPU time not spent by the run's own processes) and
the host screen (delivered cores, the cost of a fresh page) over its window.

Noise handling (docs/advice.md, "Shown on real runs"; none of it changes the gate):
  order    repetition r visits the configurations rotated by r places, odd repetitions in reverse, so
           no configuration always runs first or after the same neighbour
  load     a run with more than 10% foreign CPU or 10% steal is repeated rather than scored (up to 3
           times); a pipeline with a run still loaded after that is reported but not scored, and the
           script exits 75 (neither pass nor fail) unless a scored pipeline failed (exit 4)
  ties     the report says when the recommendation and the grid's best differ by no more than their
           measured noise (half the larger of their run-to-run ranges); the gate is the regret itself

usage: validation/advice/run.py --out DIR [--data DIR] [--reps N] [--pipelines a,b] [--record FILE.md]
                                [--record-only | --ingest RECORDED_DIR] [--bin build/simreplay]
       validation/advice/run.py --out UNUSED --render DIR --record FILE.md   (the report of a finished run)
env:   SIMREPLAY_BIN (build/simreplay)
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure import (BASE, BATCH, PIPELINES, REPO, key, log, real_reliefs, record_runs, relief_key, run_meta,  # noqa: E402
                     simreplay_binary)

REGRET_LIMIT = 0.05


def simreplay(*args: str) -> subprocess.CompletedProcess:
    binary = simreplay_binary()
    r = subprocess.run([binary, *args], capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise RuntimeError(f"simreplay {' '.join(args)} failed ({r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return r


def recommended_config(tune: dict) -> dict:
    k = tune["best"]["knobs"]
    # The bench can apply the loader knobs and the container; anything else tune may name (a streaming
    # pass, a cache tier, GPU decoding) cannot be measured here, so it must not be recommended for these
    # pipelines (shuffled, local storage, no CUDA) and would be a failure of this harness if it were.
    for knob, as_captured in (("access", "random"), ("cache", "none"), ("decode_device", "cpu")):
        if k.get(knob, as_captured) != as_captured:
            raise RuntimeError(f"tune recommends {knob}={k[knob]}, which the bench cannot apply")
    return {"workers": k["num_workers"], "prefetch_factor": k["prefetch_factor"],
            "persistent_workers": bool(k["persistent_workers"]), "format": k["format"]}


# The reliefs of the causal profile that can be applied for real here, as bench configurations.
def grid_results(runs: List[dict], name: str) -> Tuple[Dict[str, float], Dict[str, float]]:
    """A pipeline's measured median throughput and run-to-run range (as a share of the median) by
    configuration."""
    by: Dict[str, List[float]] = {}
    for r in runs:
        if r["pipeline"] == name and r["config"] != "capture":
            by.setdefault(r["config"], []).append(r["throughput"])
    med = {k: statistics.median(v) for k, v in by.items()}
    return med, {k: (max(v) - min(v)) / med[k] for k, v in by.items()}


def predict_pipeline(name: str, p: dict, runs: List[dict], recorded: str, out: str, steps: int, cores: int) -> dict:
    """The prediction side of one pipeline, from its recorded base capture only: calibrate, diagnose and
    tune with the simreplay under test, then score the recommendation against the recorded grid."""
    pdir = os.path.join(out, name)
    os.makedirs(pdir, exist_ok=True)
    trace = os.path.join(recorded, "runs", name, "base.trace.jsonl.gz")
    model = os.path.join(pdir, "model.json")
    simreplay("calibrate", trace, "--out", model)
    scenario = {"model": model, "loader": {"num_workers": BASE["workers"], "batch_size": BATCH,
                                           "prefetch_factor": BASE["prefetch_factor"],
                                           "persistent_workers": BASE["persistent_workers"]},
                "hardware": {"cpu_cores": cores},
                "train": {"steps": steps}, "seed": 0}
    scenario_path = os.path.join(pdir, "scenario.json")
    with open(scenario_path, "w") as f:
        json.dump(scenario, f, indent=2)
    simreplay("diagnose", scenario_path, "--out", os.path.join(pdir, "diagnose"))
    simreplay("tune", scenario_path, "--out", os.path.join(pdir, "tune"))
    with open(os.path.join(pdir, "diagnose", "diagnosis.json")) as f:
        diagnosis = json.load(f)
    with open(os.path.join(pdir, "tune", "tune.json")) as f:
        tune = json.load(f)
    rec = recommended_config(tune)
    rec_key = key(rec)
    med, spread = grid_results(runs, name)
    grid_keys = [k for k in med if not k.endswith("_half_latency") and "_step" not in k]
    best_key = max(grid_keys, key=lambda k: med[k])
    covered = rec_key in med
    log(f"{name}: diagnosed {diagnosis['verdict']['critical_resource']}; tune recommends {rec_key}"
        + ("" if covered else " (outside the recorded grid: a coverage failure)"))
    regret = (med[best_key] - med[rec_key]) / med[best_key] if covered else None
    # Within noise: the gap to the best is no more than half the larger of the pair's run-to-run ranges
    # (reported beside the regret; the gate is the regret itself).
    noise = max(spread[best_key], spread[rec_key]) / 2 if covered else None

    # The ranking of the reliefs that can be applied for real: predicted (causal profile) vs measured.
    reliefs = real_reliefs(p)
    predicted = {}
    for r in diagnosis["hypotheses"]["reliefs"]:
        n = "storage" if r["name"] in ("storage_read_time", "storage_latency") else r["name"]
        if n in reliefs and n not in predicted:
            predicted[n] = r["gain"]
    measured = {n: med[relief_key(c)] / med[key(BASE)] - 1 for n, c in reliefs.items()
                if relief_key(c) in med and key(BASE) in med}
    common = [n for n in reliefs if n in predicted and n in measured]
    top_predicted = max(common, key=lambda n: predicted[n]) if common else None
    top_measured = max(common, key=lambda n: measured[n]) if common else None
    mine = [r for r in runs if r["pipeline"] == name and r["config"] != "capture"]
    loads = [r["load_before"] for r in mine]
    capture = next(r for r in runs if r["pipeline"] == name and r["config"] == "capture")
    return {
        "pipeline": name, "bench": p, "base": BASE, "capture_throughput": capture["throughput"],
        "diagnosed_critical_resource": diagnosis["verdict"]["critical_resource"],
        "diagnosis_verdict": diagnosis["verdict"]["text"],
        "recommended": rec_key, "recommended_in_grid": covered, "recommended_predicted_gain": tune["gain"],
        "tune_configurations": tune["search"]["configurations"], "tune_simulations": tune["search"]["simulations"],
        "measured_median": med, "measured_spread": spread, "best_measured": best_key, "regret": regret,
        "regret_pass": covered and regret <= REGRET_LIMIT,
        "within_noise": covered and med[best_key] - med[rec_key] <= noise * med[best_key],
        # Scored only when every run was measured without foreign load (docs/advice.md): a pipeline with a
        # run still loaded after its retries is reported, neither passed nor failed.
        "scored": not any(r["loaded"] for r in mine),
        "reliefs_predicted_gain": predicted, "reliefs_measured_gain": measured,
        "top_relief_predicted": top_predicted, "top_relief_measured": top_measured,
        "top_relief_agrees": top_predicted == top_measured,
        "noise": {"max_steal_share": max(r["steal_fraction"] for r in mine),
                  "max_foreign_cpu_share": max(r["foreign_cpu_share"] for r in mine), "load_min": min(loads),
                  "load_max": max(loads), "reps": max(r["rep"] for r in mine) + 1,
                  "runs_repeated_for_load": sum(len(r["discarded"]) for r in mine),
                  "runs_scored_under_load": sum(1 for r in mine if r["loaded"]),
                  "min_host_delivered_share": min((r["host_delivered_share"] for r in mine
                                                   if r["host_delivered_share"] is not None), default=None)},
    }


def markdown(results: List[dict], meta: dict) -> str:
    lines = [f"Generated by validation/advice/run.py on {meta['date']} (commit {meta['commit']}, {meta['host']}); "
             f"{meta['reps']} repetitions per configuration, {meta['steps']} steps of batch {BATCH}. Measured medians "
             "are real bench runs without capture; predictions are the tools' outputs for the base capture.", "",
             "| pipeline | diagnosed | recommended (predicted gain) | best measured | regret | gate | top relief predicted / measured | noise (rec / best range) | max steal / foreign CPU | runs repeated for load |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        n = r["noise"]
        spread = r.get("measured_spread", {})
        lines.append("| {pipeline} | {diag} | {rec} ({gain:+.1%}) | {best} ({bm:.1f}/s) | {regret} | {gate} | {tp} / {tm} | {sr:.0%} / {sb:.0%} | {steal:.1%} / {foreign} | {rep} |".format(
            pipeline=r["pipeline"], diag=r["diagnosed_critical_resource"], rec=r["recommended"],
            gain=r["recommended_predicted_gain"], best=r["best_measured"], bm=r["measured_median"][r["best_measured"]],
            regret="n/a" if r["regret"] is None else f"{r['regret']:.1%}", gate=("pass" if r["regret_pass"] else "FAIL") if r.get("scored", True) else "not scored: foreign load",
            tp=r["top_relief_predicted"],
            tm=r["top_relief_measured"], sr=spread.get(r["recommended"], 0), sb=spread.get(r["best_measured"], 0),
            steal=n["max_steal_share"],
            foreign="{:.1%}".format(n["max_foreign_cpu_share"]) if "max_foreign_cpu_share" in n else "n/a",
            rep=n.get("runs_repeated_for_load", "n/a")))
    lines.append("")
    for r in results:
        if not r["recommended_in_grid"]:
            lines.append(f"**{r['pipeline']}**: tune recommends {r['recommended']}, outside the recorded grid "
                         "(a coverage failure: record a grid that holds it).")
        elif r["within_noise"] and r["regret"] > 0:
            lines.append(f"**{r['pipeline']}**: the recommendation and the best measured ({r['best_measured']}) "
                         "are within their run-to-run noise.")
    lines.append("")
    for r in results:
        lines.append(f"**{r['pipeline']}**: relief gains predicted / measured from the base: " + ", ".join(
            f"{n} {r['reliefs_predicted_gain'][n]:+.1%} / {r['reliefs_measured_gain'][n]:+.1%}"
            for n in r["reliefs_measured_gain"] if n in r["reliefs_predicted_gain"]) + ".")
    return "\n".join(lines) + "\n"


def record(path: Optional[str], report: str) -> None:
    if not path:
        return
    with open(path, "w") as f:
        f.write("# Advice on real runs: the latest fresh run\n\nWritten by `validation/advice/run.py` from the "
                "run's advice-validation.json (docs/advice.md, \"Shown on real runs\"); do not edit by hand. Gate: "
                f"regret <= {REGRET_LIMIT:.0%} per pipeline.\n\n")
        f.write(report)


def ingest(recorded: str, recorded_doc: dict, out: str) -> dict:
    """The prediction side over recorded runs: the advice-validation document (written to OUT)."""
    results = [predict_pipeline(name, {k: v for k, v in p.items() if k != "configs"}, recorded_doc["runs"],
                                recorded, out, recorded_doc["steps"], recorded_doc["cores"])
               for name, p in recorded_doc["pipelines"].items()]
    scored = [r for r in results if r["scored"]]
    doc = {"schema": "simreplay.advice-validation/2", "meta": dict(recorded_doc["meta"], predicted_by=run_meta()["commit"]),
           "regret_limit": REGRET_LIMIT, "results": results,
           "pass": all(r["regret_pass"] for r in scored), "complete": len(scored) == len(results)}
    with open(os.path.join(out, "advice-validation.json"), "w") as f:
        json.dump(doc, f, indent=2, sort_keys=True)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(markdown(results, doc["meta"]))
    return doc


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--data", default=os.path.join(REPO, "build", "advice-data"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--pipelines", default=",".join(PIPELINES))
    ap.add_argument("--bin", help="the simreplay to predict with (default $SIMREPLAY_BIN, else build/simreplay)")
    ap.add_argument("--record", help="also write the report to this file (docs/advice-validation.md)")
    ap.add_argument("--render", metavar="DIR",
                    help="run nothing: write the report of the run in DIR (its advice-validation.json) to --record")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--record-only", action="store_true", help="measure only: write OUT/runs.json")
    mode.add_argument("--ingest", metavar="DIR", help="predict only, from the runs recorded in DIR")
    a = ap.parse_args()
    if a.bin:
        os.environ["SIMREPLAY_BIN"] = os.path.abspath(a.bin)
    if a.render:
        with open(os.path.join(a.render, "advice-validation.json")) as f:
            doc = json.load(f)
        record(a.record, markdown(doc["results"], doc["meta"]))
        return 4 if not doc["pass"] else (0 if doc.get("complete", True) else 75)
    if a.ingest:
        recorded = os.path.abspath(a.ingest)
        with open(os.path.join(recorded, "runs.json")) as f:
            recorded_doc = json.load(f)
        os.makedirs(a.out, exist_ok=True)
    else:
        shutil.rmtree(a.out, ignore_errors=True)
        os.makedirs(a.out)
        recorded, recorded_doc = os.path.abspath(a.out), record_runs(a)
        if recorded_doc is None:
            return 77
        if a.record_only:
            return 0
    doc = ingest(recorded, recorded_doc, a.out)
    sys.stdout.write(markdown(doc["results"], doc["meta"]))
    record(a.record, markdown(doc["results"], doc["meta"]))
    if not doc["pass"]:
        return 4
    if not doc["complete"]:
        log("not every pipeline could be scored: runs under foreign load after their retries (exit 75)")
        return 75
    return 0


if __name__ == "__main__":
    sys.exit(main())
