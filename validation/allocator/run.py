#!/usr/bin/python3
"""The allocator_churn relief against real runs (docs/modelling.md, "Page-fault churn").

Captures the bench at its base configuration (2 workers, batch 8, prefetch 2, 20 ms emulated step, the
validation suite's dataset), calibrates, and runs `simreplay diagnose` on it: the diagnosis names the
page-fault share of the samples' CPU (observed) and predicts what the allocator settings it names buy
(the allocator_churn relief, a hypothesis with the validated error band). Then it measures the same
configuration for real, without capture, with glibc's defaults (A) and with those settings in the
environment (B), in alternating pairs (ABBA order), and one captured run of each arm to count the
page faults per sample that remain. Reports the predicted gain beside the measured one per pair and
overall (the ratio of the arms' medians); nothing is gated (the relief is an upper bound: it takes off
every fault the capture measured, and the settings need not remove them all).

usage: validation/allocator/run.py --out DIR [--data DIR] [--pairs N] [--steps N]
env:   SIMREPLAY_BIN (build/simreplay)
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# The advice harness's bench command, load-screened runs and binary lookup: one home for running the bench.
_spec = importlib.util.spec_from_file_location("advice_run", os.path.join(REPO, "validation", "advice", "run.py"))
advice = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(advice)
import simreplay_capture as sc  # noqa: E402  (on the path the advice harness set)

PIPELINE = {"image_size": 96, "frames": 4, "step_time_s": 0.02}
BASE = {"workers": 2, "prefetch_factor": 2, "persistent_workers": False}


def with_env(settings: str, cmd: list) -> list:
    """`cmd` run with the allocator settings ("A=1 B=2") in its environment."""
    return ["env", *settings.split(), *cmd] if settings else cmd


def faults_per_sample(trace: str) -> float:
    s = sc.read_trace(trace).of("sample")
    return sum(r.get("minflt", 0) for r in s) / max(1, len(s))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--data", default=os.path.join(REPO, "build", "validation-data"))
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--steps", type=int, default=60)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    trace = os.path.join(a.out, "base.trace.jsonl.gz")
    advice.run_bench(advice.bench_cmd(a.data, PIPELINE, BASE, a.steps, ["--trace", trace]),
                     os.path.join(a.out, "base.capture.json"))
    model = os.path.join(a.out, "model.json")
    advice.simreplay("calibrate", trace, "--out", model)
    scenario = {"model": model, "loader": {"num_workers": BASE["workers"], "batch_size": advice.BATCH,
                                           "prefetch_factor": BASE["prefetch_factor"]},
                "hardware": {"cpu_cores": os.cpu_count()}, "train": {"steps": a.steps}, "seed": 0}
    scenario_path = os.path.join(a.out, "scenario.json")
    with open(scenario_path, "w") as f:
        json.dump(scenario, f, indent=2)
    advice.simreplay("diagnose", scenario_path, "--out", os.path.join(a.out, "diagnose"))
    with open(os.path.join(a.out, "diagnose", "diagnosis.json")) as f:
        diagnosis = json.load(f)
    observed = diagnosis["observed"]["page_faults"]
    relief = next((r for r in diagnosis["hypotheses"]["reliefs"] if r["name"] == "allocator_churn"), None)
    settings = observed["fix_to_try"] or ""
    if relief is None or not settings:
        advice.log(f"no allocator_churn relief: the capture measured {observed['cpu_share']:.0%} of the samples' "
                   f"CPU in page faults ({observed['note']}); nothing to measure")
        doc = {"schema": "simreplay.allocator-validation/1", "observed": observed, "relief": None}
        with open(os.path.join(a.out, "allocator-validation.json"), "w") as f:
            json.dump(doc, f, indent=2, sort_keys=True)
        return 0
    advice.log(f"predicted: {relief['change']} -> {relief['gain']:+.1%} [{relief['gain_low']:+.1%} .. "
               f"{relief['gain_high']:+.1%}]")
    plain = advice.bench_cmd(a.data, PIPELINE, BASE, a.steps, ["--no-capture"])
    runs = {"A": [], "B": []}
    for i in range(a.pairs):
        for arm in ("AB" if i % 2 == 0 else "BA"):
            cmd = with_env(settings if arm == "B" else "", plain)
            runs[arm].append(advice.run_bench(cmd, os.path.join(a.out, f"{arm}.{i}.json")))
        advice.log(f"pair {i + 1}/{a.pairs}: A {runs['A'][-1]['throughput']:.1f}, B {runs['B'][-1]['throughput']:.1f} "
                   f"samples/s")
    faults = {}
    for arm in "AB":
        t = os.path.join(a.out, f"{arm}.trace.jsonl.gz")
        advice.run_bench(with_env(settings if arm == "B" else "",
                                  advice.bench_cmd(a.data, PIPELINE, BASE, a.steps, ["--trace", t])),
                         os.path.join(a.out, f"{arm}.capture.json"))
        faults[arm] = faults_per_sample(t)
    thr = {arm: [r["throughput"] for r in runs[arm]] for arm in "AB"}
    pair_gains = [b / x - 1 for x, b in zip(thr["A"], thr["B"])]
    measured = statistics.median(thr["B"]) / statistics.median(thr["A"]) - 1
    doc = {"schema": "simreplay.allocator-validation/1",
           "meta": advice.run_meta(pairs=a.pairs, steps=a.steps),
           "settings": settings, "observed": observed, "relief": relief,
           "predicted_gain": relief["gain"], "predicted_interval": [relief["gain_low"], relief["gain_high"]],
           "measured_gain": measured, "pair_gains": pair_gains, "throughput": thr,
           "faults_per_sample": faults,
           "inside_interval": relief["gain_low"] <= measured <= relief["gain_high"],
           "loaded_runs": sum(r["loaded"] for v in runs.values() for r in v)}
    with open(os.path.join(a.out, "allocator-validation.json"), "w") as f:
        json.dump(doc, f, indent=2, sort_keys=True)
    print(f"allocator_churn: predicted {relief['gain']:+.1%} [{relief['gain_low']:+.1%} .. {relief['gain_high']:+.1%}], "
          f"measured {measured:+.1%} (medians of {a.pairs} pairs; pairs {min(pair_gains):+.1%} .. "
          f"{max(pair_gains):+.1%}); page faults per sample {faults['A']:.0f} -> {faults['B']:.0f}; "
          f"observed share {observed['cpu_share']:.0%} at {observed['fault_cost_s'] * 1e6:.1f} us per fault")
    return 0


if __name__ == "__main__":
    sys.exit(main())
