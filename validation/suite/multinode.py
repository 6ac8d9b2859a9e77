#!/usr/bin/python3
"""The multi-node validation suite (docs/validation.md, "Multi-node cases").

    validation/suite/multinode.py [--spec validation/suite/multinode.json] [--out DIR] [--reps N]
                                  [--ingest DIR]

1. Network probes: `probe_network` (all-reduce, 1 KiB..64 MiB) between 2 namespaces at every link rate
   of the suite, under the netns harness.
2. Real runs: one discarded warm-up run, then repetition by repetition every case in order (A B C ...
   A B C ...), each a `bench ddp` job under the harness (N namespaces, one rank each, tbf-shaped NICs).
3. Calibration: `simreplay calibrate` on rank 0's trace of the median-throughput run of
   `calibration.from` (`alternate` for `from` itself) with `--network-probe` of the predicted case's
   link rate and, when the spec has `cpu_probe`, `--cpu-probe` of the CPU probe run after the real
   runs on a held-out split of the cases' media mix (probe_cpu); the model file is never edited.
4. Prediction through the cluster path, from scenario inputs a user writes (scenario_for):
   cluster.nodes = N nodes of one rank each, cluster.nodes_share_cores (the namespaces share the
   host's cores), NICs at the model's probed links, collective.gradient_bytes of the case (the
   simulator scales the emulated step's host CPU with it), and a straggler as the last node's
   gpu_step_scale. `simreplay simulate` of the run's own steps, its metrics measured over the run's
   own window in the simulated timeline (window_metrics: from the end of the last warm-up step; until
   2026-12-06 a 300-step steady state, docs/validation.md "Window").
   The same cases are also predicted from nominal rates (a model calibrated without the probe, NICs
   at the tc rate): reported, not gated.
5. Comparison of medians (95% bootstrap intervals of the measured median): throughput, step time,
   GPU idle, exposed collective time per step. Gates, over the cases the host holds (at most
   testbed.max_namespaces_per_core namespaces per core; the others are reported beside them):
   median |throughput error| <= 10%, every case's
   |throughput error| <= 20%, every |step time error| <= 15%, and correctness of every run (every
   rank ran every step, the ranks' parameters agree after training, the ranks' DistributedSampler
   shards are disjoint within each epoch). Exit 0 pass, 4 gate failed, 77 not root, 1 failure.
Writes OUT/multinode.json, OUT/report.md, OUT/runs/, OUT/probes/, OUT/probe-cpu.json (+ probe-data/, its
log), OUT/models/, OUT/predictions/.
"""
from __future__ import annotations

import argparse
import bisect
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
HARNESS = os.path.join(REPO, "validation", "netns", "netns_run.py")
sys.path.insert(0, os.path.join(REPO, "capture"))
sys.path.insert(0, os.path.dirname(HARNESS))
from netns_run import SERVER_ADDRESS, SERVER_PORT, parse_rate  # noqa: E402

# The simreplay binary (--bin): `simreplay stats` and the host screen (`simreplay probe host`).
SIMREPLAY_BIN = os.environ.get("SIMREPLAY_BIN", os.path.join(REPO, "build", "simreplay"))

SERVER_URL = f"http://{SERVER_ADDRESS}:{SERVER_PORT}"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def grad_bytes(grad_mb: float) -> int:
    from simreplay_capture.bench.ddp import GradModel
    return GradModel(int(grad_mb * (1 << 20))).grad_bytes


def harness(out: str, nodes: int, rate: str, timeout_s: float, script: List[str],
            server: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """One job under the netns harness, with the host's noise over its window (steal, busy, load,
    frequency: simreplay_capture.procfs.noise_window). `server`: {"dir", "rate"} of a storage server
    namespace serving the dataset over HTTP."""
    from simreplay_capture import host_screen, procfs
    extra = ["--server-dir", server["dir"], "--server-rate", server["rate"]] if server else []
    screen_before = host_screen.screen(SIMREPLAY_BIN)
    t, before = time.monotonic(), procfs.noise_sample()
    p = subprocess.run([sys.executable, HARNESS, "--nodes", str(nodes), "--rate", rate, "--out", out,
                        "--timeout-s", str(timeout_s), *extra, "--", *script], capture_output=True, text=True)
    noise = procfs.noise_window(before, procfs.noise_sample())
    screen_after = host_screen.screen(SIMREPLAY_BIN)
    # The host's delivered cores around the job (None: not screened): under the bound it is repeated.
    noise["host_delivered_share"] = host_screen.window_share(screen_before, screen_after)
    noise["host_below_bound"] = host_screen.below_bound(screen_before, screen_after)
    return {"exit_code": p.returncode, "wall_s": time.monotonic() - t, "loadavg_before": noise["loadavg_before"],
            "loadavg_after": noise["loadavg_after"], "noise": noise, "stderr": p.stderr[-2000:]}


def noisy(res: Dict[str, Any], spec: Dict[str, Any]) -> bool:
    """A run taken while the hypervisor stole more than the spec's bound of the CPU, or while the host
    delivered less than the host screen's bound of its cores, is repeated, not scored."""
    noise = res.get("noise", {})
    return (noise.get("steal_fraction", 0) > spec.get("noise", {}).get("max_steal_fraction", 1)
            or bool(noise.get("host_below_bound")))


def harness_within_noise(spec: Dict[str, Any], job: Any, what: str) -> Dict[str, Any]:
    """`job()` (a harness run), repeated up to `noise.retries` times while it stays over the steal bound."""
    res = job()
    for _ in range(spec.get("noise", {}).get("retries", 0)):
        if res["exit_code"] != 0 or not noisy(res, spec):
            break
        share = res["noise"].get("host_delivered_share")
        log(f"{what}: steal {res['noise']['steal_fraction']:.1%}, host delivered "
            f"{'unknown' if share is None else f'{share:.0%}'} of its cores: over a bound, repeated")
        res = job()
    return res


def median_of_quiet(reps: List[Dict[str, Any]], key: str) -> Dict[str, Any]:
    """The repetition with the median `key` among those within the noise bound (all of them when none is)."""
    quiet = [r for r in reps if not r["noisy"]] or reps
    return sorted(quiet, key=lambda r: r[key])[len(quiet) // 2]


def probe_rate(spec: Dict[str, Any], rate: str, out: str) -> Optional[str]:
    """The network probe at `rate`, `probe.repetitions` times (a probe of a few iterations per size is
    a noisy instrument: docs/validation.md, run 5), each repeated while over the steal bound, as runs
    are; the repetition with the median all-reduce bus bandwidth among those within the bound is the
    one calibration uses, copied to OUT/probes/<rate>/probe-network.json. Returns an error, or None."""
    pr = spec["probe"]
    reps = []
    for k in range(pr.get("repetitions", 1)):
        d = os.path.join(out, "probes", rate, f"rep{k}")
        path = os.path.join(d, "probe-network.json")
        script = ["-m", "simreplay_capture.probe_network", "--out", path,
                  "--ops", pr["ops"], "--min-bytes", pr["min_bytes"], "--max-bytes", pr["max_bytes"],
                  "--factor", str(pr["factor"]), "--budget-s", str(pr["budget_s"]), "--max-iters", str(pr["max_iters"])]
        res = harness_within_noise(spec, lambda: harness(d, pr["nodes"], rate, 300, script), f"probe {rate} rep {k}")
        if res["exit_code"] != 0:
            return f"probe at {rate} failed: {res['stderr']}"
        busbw = json.load(open(path))["fit"]["all_reduce"]["bus_bytes_per_s"]
        reps.append({"path": path, "bus_bytes_per_s": busbw, "noise": res["noise"], "noisy": noisy(res, spec)})
        log(f"probe {rate} rep {k}: busbw {busbw / 1e6:.1f} MB/s, steal {res['noise']['steal_fraction']:.1%}, "
            f"load {res['noise']['loadavg_before']:.1f}")
    chosen = median_of_quiet(reps, "bus_bytes_per_s")
    shutil.copy(chosen["path"], os.path.join(out, "probes", rate, "probe-network.json"))
    json.dump({"repetitions": reps, "chosen": chosen["path"]}, open(os.path.join(out, "probes", rate, "probes.json"), "w"),
              indent=1)
    return None


def probe_cpu(spec: Dict[str, Any], data: str, out: str) -> Optional[str]:
    """The CPU contention curve of the ranks' loader on this host's cores (simreplay_capture.probe_cpu,
    docs/probe-cpu.md), as a user measures it before a node-count question: the namespaces' ranks share
    the host's cores, so how a core's work slows with the processes runnable beside it decides the cases
    with 3-4 ranks. It replays a held-out split of the cases' media mix (`cpu_probe.dataset_args`, `{data}`
    = the cases' dataset, built into OUT/probe-data) so that it measures no case, after the real runs (the
    page cache as warm as in them). Returns OUT/probe-cpu.json, or None when the spec asks for no probe
    or it failed (a warning; the models then assume the curve, which their calibrate logs state)."""
    cp = spec.get("cpu_probe")
    if not cp:
        return None
    path = os.path.join(out, "probe-cpu.json")
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "capture"))
    probe_data = os.path.join(out, "probe-data")
    shutil.rmtree(probe_data, ignore_errors=True)
    made = subprocess.run([sys.executable, "-m", "simreplay_capture.bench", "make-dataset", "--out", probe_data,
                           *[data if a == "{data}" else a for a in cp["dataset_args"]]],
                          env=env, capture_output=True, text=True)
    if made.returncode != 0:
        print(f"multinode suite: the CPU probe's dataset failed (exit {made.returncode}): {made.stderr[-300:]}; "
              "contention curve assumed", file=sys.stderr)
        return None
    r = spec["run"]
    log("CPU probe (contention curve of the ranks' loader on the shared cores)")
    try:
        with open(os.path.join(out, "probe-cpu.log"), "w") as logf:
            code = subprocess.run(
                [sys.executable, "-m", "simreplay_capture.probe_cpu", "--bench-data", probe_data, "--format", "files",
                 "--image-size", str(r["image_size"]), "--frames", str(r["frames"]),
                 "--batch-size", str(r["batch_size"]), "--prefetch-factor", "2", "--seed", str(r["seed"]),
                 "--seconds-per-point", str(cp["seconds_per_point"]), "--rounds", str(cp["rounds"]),
                 "--max-total-s", str(cp["max_total_s"]), "--max-workers", str(cp["max_workers"]), "--out", path],
                env=env, stdout=logf, stderr=subprocess.STDOUT, timeout=cp["max_total_s"] + 120).returncode
    except subprocess.TimeoutExpired:
        code = "timed out"
    if code != 0 or not os.path.exists(path):
        print(f"multinode suite: the CPU probe failed ({code}; see probe-cpu.log): contention curve assumed",
              file=sys.stderr)
        return None
    return path


def case_config(spec: Dict[str, Any], case: Dict[str, Any]) -> Dict[str, Any]:
    return dict(spec["base"], **case.get("set", {}))


def server_of(cfg: Dict[str, Any], data: str) -> Optional[Dict[str, str]]:
    """The storage server of a case that reads over HTTP (`"storage": "http"`), at `server_rate`."""
    if cfg.get("storage", "local") != "http":
        return None
    return {"dir": data, "rate": cfg.get("server_rate", cfg["rate"])}


def http_probe_key(cfg: Dict[str, Any]) -> str:
    return f"{cfg['rate']}-server-{cfg.get('server_rate', cfg['rate'])}"


def probe_http(spec: Dict[str, Any], cfg: Dict[str, Any], data: str, out: str) -> Optional[str]:
    """The HTTP store as one node reads it (simreplay_capture.probe_http through the case's NIC and
    the server's), `probe.repetitions` times; the median-bandwidth one is used. Returns an error or None."""
    key, reps = http_probe_key(cfg), []
    for k in range(spec["probe"].get("repetitions", 1)):
        d = os.path.join(out, "probes-http", key, f"rep{k}")
        path = os.path.join(d, "probe-http.json")
        res = harness_within_noise(spec, lambda: harness(
            d, 1, cfg["rate"], 300, ["-m", "simreplay_capture.probe_http", SERVER_URL, "--out", path],
            server_of(cfg, data)), f"HTTP probe {key} rep {k}")
        if res["exit_code"] != 0 or not os.path.exists(path):
            return f"HTTP probe {key} failed: {res['stderr']}"
        f = json.load(open(path))["fit"]
        reps.append({"path": path, "bytes_per_s": f["bytes_per_s"], "latency_s": f["latency_s"],
                     "aggregate_bytes_per_s": f["aggregate_bytes_per_s"], "noise": res["noise"],
                     "noisy": noisy(res, spec)})
        log(f"HTTP probe {key} rep {k}: {f['bytes_per_s'] / 1e6:.2f} MB/s per stream, aggregate "
            f"{f['aggregate_bytes_per_s'] / 1e6:.2f} MB/s, latency {f['latency_s'] * 1e3:.2f} ms, "
            f"steal {res['noise']['steal_fraction']:.1%}")
    chosen = median_of_quiet(reps, "aggregate_bytes_per_s")
    shutil.copy(chosen["path"], os.path.join(out, "probes-http", key, "probe-http.json"))
    json.dump({"repetitions": reps, "chosen": chosen["path"]}, open(os.path.join(out, "probes-http", key, "probes.json"),
                                                                    "w"), indent=1)
    return None


def run_case(spec: Dict[str, Any], case: Dict[str, Any], out: str, data: str) -> Dict[str, Any]:
    cfg, r = case_config(spec, case), spec["run"]
    os.makedirs(out, exist_ok=True)
    server = server_of(cfg, data)
    script = ["-m", "simreplay_capture.bench", "ddp", "--data", SERVER_URL if server else data,
              "--trace", os.path.join(out, "t.jsonl.gz"),
              "--summary-json", os.path.join(out, "summary.json"), "--steps", str(r["steps"]),
              "--warmup-steps", str(r["warmup_steps"]), "--step-time-s", str(r["step_time_s"]),
              "--workers", str(r["workers"]), "--batch-size", str(r["batch_size"]),
              "--image-size", str(r["image_size"]), "--frames", str(r["frames"]), "--seed", str(r["seed"]),
              "--grad-mb", str(cfg["grad_mb"])]
    if cfg.get("straggler_extra_s", 0) > 0:
        script += ["--straggler-rank", str(cfg["nodes"] - 1), "--straggler-extra-s", str(cfg["straggler_extra_s"])]
    res = harness(out, cfg["nodes"], cfg["rate"], r["timeout_s"], script, server)
    res["summary"] = os.path.join(out, "summary.json") if os.path.exists(os.path.join(out, "summary.json")) else None
    return res


def stats(binary: str, request: Dict[str, Any]) -> Dict[str, Any]:
    """Bootstrap intervals and gates from `simreplay stats`: the same code `simreplay validate` judges
    with (validation/statistics, validation/gate), not a second implementation here."""
    p = subprocess.run([binary, "stats", "-"], input=json.dumps(dict(request, schema="simreplay.stats-request/1")),
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"simreplay stats failed (exit {p.returncode}): {p.stderr.strip()}")
    return json.loads(p.stdout)


def measured_metrics(summary: Dict[str, Any]) -> Dict[str, float]:
    # step time = interval between consecutive optimizer-step ends (data wait + step), the simulator's
    # definition, averaged over ranks; the bench's own step_time_s excludes the data wait
    ranks = summary.get("ranks") or [summary]
    if all("step_interval_s" in r for r in ranks):
        step = statistics.mean(r["step_interval_s"]["mean"] for r in ranks)
    else:  # older summaries: the window over its steps
        step = statistics.mean(r["wall_s"] for r in ranks) / max(1, summary["batches"])
    return {"train_throughput_samples_per_s": summary["throughput_samples_per_s"],
            "step_time_s": step,
            "gpu_idle_fraction": summary["gpu_idle_fraction"],
            "collective_time_s": summary["collective_time_s"]["mean"],
            "data_wait_s": summary["data_wait_s"]["mean"]}


def check_run(summary: Dict[str, Any], run_dir: str, steps: int) -> List[str]:
    """Correctness of one DDP run (empty when it holds): every rank ran every step, every rank ends with
    the same parameters (DDP's all-reduce kept the replicas equal), and within each epoch the ranks'
    DistributedSampler shards are disjoint (read from the rank traces' sample records)."""
    import gzip
    problems: List[str] = []
    ranks = summary.get("ranks") or []
    if len(ranks) != summary.get("world_size"):
        problems.append(f"{len(ranks)} rank summaries for world size {summary.get('world_size')}")
    for r in ranks:
        if r.get("steps") != steps:
            problems.append(f"rank {r.get('rank')} ran {r.get('steps')} steps, not {steps}")
    digests = {r.get("param_sha256") for r in ranks}
    if None in digests:
        problems.append("a rank recorded no parameter digest")
    elif len(digests) != 1:
        problems.append(f"the ranks' parameters differ after training ({len(digests)} distinct digests)")
    seen: Dict[int, Dict[int, set]] = {}  # epoch -> rank -> indices
    for r in range(summary.get("world_size") or 0):
        # the recorder names a rank's trace t.rank<r>.jsonl.gz, or t.jsonl.gz in a one-rank job
        names = [f"t.rank{r}.jsonl.gz"] + (["t.jsonl.gz"] if summary.get("world_size") == 1 else [])
        path = next((os.path.join(run_dir, n) for n in names if os.path.exists(os.path.join(run_dir, n))), "")
        if not path:
            problems.append(f"no trace of rank {r}")
            continue
        with gzip.open(path, "rt") as f:
            for line in f:
                rec = json.loads(line)
                if rec.get("type") == "sample":
                    seen.setdefault(rec["epoch"], {}).setdefault(r, set()).add(rec["index"])
    for epoch, by_rank in sorted(seen.items()):
        owner: Dict[int, int] = {}
        for r, indices in by_rank.items():
            for i in indices:
                if i in owner and owner[i] != r:
                    problems.append(f"epoch {epoch}: sample {i} loaded by ranks {owner[i]} and {r}")
                    break
                owner[i] = r
    return problems


def calibrate(binary: str, trace: str, probe: Optional[str], cpu_probe: Optional[str], model: str,
              extra: List[str]) -> None:
    probe_args = (["--network-probe", probe] if probe else []) + (["--cpu-probe", cpu_probe] if cpu_probe else [])
    p = subprocess.run([binary, "calibrate", trace, *probe_args, "--out", model, "--no-self-check", *extra],
                       capture_output=True, text=True)
    with open(model + ".log", "w") as f:
        f.write(p.stdout + p.stderr)
    if p.returncode != 0:
        raise RuntimeError(f"calibrate {trace}: exit {p.returncode}: {p.stderr[-500:]}")


def rate_bytes_per_s(rate: str) -> float:
    """'1gbit' -> 1.25e8 (the harness's tc rate in bytes per second)."""
    return parse_rate(rate) / 8


def scenario_for(spec: Dict[str, Any], cfg: Dict[str, Any], model_path: str, name: str,
                 nominal: bool, http_probe: Optional[str] = None) -> Dict[str, Any]:
    """The case as a user writes it for a node-count question: cluster.nodes = N nodes of one GPU
    rank each, sharing the host's cores (the namespaces do: cluster.nodes_share_cores), the case's
    gradient size (collective.gradient_bytes: the simulator scales the emulated step's host CPU with
    it) and its straggler (the last node's step, gpu_step_scale = (step + extra) / step). The NICs run
    at the model's probed links; `nominal`: at the tc rate the case states instead. A case reading
    over HTTP reads shared storage with no client cache, at the HTTP probe's latency and aggregate
    rate (`nominal`: the server's tc rate and the format's default latency)."""
    r = spec["run"]
    scenario: Dict[str, Any] = {
        "name": name, "model": model_path,
        "loader": {"num_workers": r["workers"], "batch_size": r["batch_size"], "prefetch_factor": 2, "drop_last": True},
        "hardware": {"cpu_cores": os.cpu_count() or 2, "gpus": 1},
        "collective": {"gradient_bytes": grad_bytes(cfg["grad_mb"])},
        "train": {"steps": r["steps"], "dataset_samples": spec["dataset_samples"]}, "seed": 1}
    if cfg["nodes"] > 1:
        cluster: Dict[str, Any] = {"nodes": cfg["nodes"], "nodes_share_cores": True}
        if nominal:
            cluster["network"] = {"nic_bytes_per_s": rate_bytes_per_s(cfg["rate"])}
        if cfg.get("straggler_extra_s", 0) > 0:
            g = json.load(open(model_path))["gpu"]["step_time_s"]
            step = g["value"] if isinstance(g, dict) else g
            cluster["stragglers"] = [{"node": cfg["nodes"] - 1,
                                      "gpu_step_scale": (step + cfg["straggler_extra_s"]) / step}]
        scenario["cluster"] = cluster
    if cfg.get("storage", "local") == "http":
        storage: Dict[str, Any] = {"kind": "shared", "client_cache": False}
        if nominal:
            storage["aggregate_bytes_per_s"] = rate_bytes_per_s(cfg.get("server_rate", cfg["rate"]))
        else:
            # The store's aggregate rate (several streams in flight, as the nodes' loaders read it),
            # not one stream's: a single GET at a time pays connection set-up and slow start alone.
            # (A probe written before the sweep has only the one-stream rate.)
            f = json.load(open(http_probe))["fit"]
            storage.update(aggregate_bytes_per_s=f.get("aggregate_bytes_per_s", f["bytes_per_s"]),
                           latency_s=f["latency_s"])
        scenario["storage"] = storage
    return scenario


def predict(binary: str, spec: Dict[str, Any], cfg: Dict[str, Any], model_path: str, out: str,
            nominal: bool = False, http_probe: Optional[str] = None) -> Dict[str, Any]:
    os.makedirs(out, exist_ok=True)
    scenario = scenario_for(spec, cfg, os.path.abspath(model_path), os.path.basename(out), nominal, http_probe)
    spath = os.path.join(out, "scenario.json")
    json.dump(scenario, open(spath, "w"), indent=1)
    p = subprocess.run([binary, "simulate", spath, "--out", out], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"simulate {spath}: exit {p.returncode}: {p.stderr[-800:]}")
    res = json.load(open(os.path.join(out, "result.json")))
    r = spec["run"]
    pred: Dict[str, Any] = window_metrics(os.path.join(out, "timeline.json"), r["warmup_steps"], r["steps"],
                                          r["batch_size"])
    net = res.get("resolved", {}).get("network")
    pred["network"] = None if net is None else {k: {"value": v["value"], "provenance": v["provenance"]}
                                                for k, v in net.items() if isinstance(v, dict)}
    return pred


# The simulator's timeline (sim/timeline.h): the tracks a step's spans lie on, by the names its metadata
# gives them, and the spans that are the step's busy part (the rest there: its exposed collectives).
STEP_TRACKS = ("GPU step", "collectives")
BUSY_SPANS = ("GPU step", "wake-up", "step host CPU")


def window_metrics(timeline_path: str, warmup_steps: int, steps: int, batch_size: int) -> Dict[str, float]:
    """The run's own window in the simulated timeline, measured as the bench measures the real run
    (simreplay_capture.bench.ddp): from the end of the last warm-up step to the end of the last step.
    A rank's step k ends with the last span on its accelerator or collective track that starts before
    its wait for batch k+1. Throughput: every rank's window samples / the longest rank's window; step
    time: the mean interval between step ends in the window, averaged over ranks; data wait: the
    window's waits; GPU idle: 1 - the accelerator track's busy time / the window; collective time: the
    window's all-reduce spans per step. Predicting the window rather than a steady state matters when
    an epoch starts inside the window at some rank counts only (docs/validation.md, "Window")."""
    doc = json.load(open(timeline_path))
    if doc.get("otherData", {}).get("truncated"):
        raise RuntimeError(f"{timeline_path}: the timeline was truncated; the window cannot be measured")
    names: Dict[Any, str] = {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    waits: Dict[int, List[Tuple[float, float]]] = {}
    spans: Dict[int, List[Tuple[float, float, str]]] = {}
    for e in doc["traceEvents"]:
        if e.get("ph") != "X":
            continue
        track = names.get((e["pid"], e["tid"]), "")
        if track.startswith("main loop") and e["name"] == "wait for data":
            waits.setdefault(e["pid"], []).append((e["ts"] * 1e-6, e["dur"] * 1e-6))
        elif track.startswith(STEP_TRACKS):
            spans.setdefault(e["pid"], []).append((e["ts"] * 1e-6, e["dur"] * 1e-6, e["name"]))
    n = steps - warmup_steps
    windows, intervals, data_wait, idle, collective = [], [], [], [], []
    for rank, w in sorted(waits.items()):
        w.sort()
        if len(w) != steps:
            raise RuntimeError(f"{timeline_path}: rank {rank} waited for {len(w)} batches, not {steps}")
        starts = [t for t, _ in w] + [float("inf")]
        ends = [0.0] * steps
        busy = comm = 0.0
        for t, d, name in spans.get(rank, []):
            k = bisect.bisect_right(starts, t) - 1
            if k < 0:
                continue
            ends[k] = max(ends[k], t + d)
            if k >= warmup_steps:
                if name in BUSY_SPANS:
                    busy += d
                else:
                    comm += d
        window = ends[-1] - ends[warmup_steps - 1]
        windows.append(window)
        intervals.append(window / n)
        data_wait.append(statistics.mean(d for _, d in w[warmup_steps:]))
        idle.append(min(1.0, max(0.0, 1 - busy / window)))
        collective.append(comm / n)
    ranks = len(windows)
    return {"train_throughput_samples_per_s": ranks * n * batch_size / max(windows),
            "step_time_s": statistics.mean(intervals), "gpu_idle_fraction": statistics.mean(idle),
            "collective_time_s": statistics.mean(collective), "data_wait_s": statistics.mean(data_wait)}


def errors(pred: Dict[str, Any], meas: Dict[str, float]) -> Dict[str, Optional[float]]:
    err: Dict[str, Optional[float]] = {}
    for k, v in pred.items():
        if k not in meas:
            continue
        m = meas[k]
        err[k] = (v - m) * 100 if k == "gpu_idle_fraction" else ((v / m - 1) * 100 if m else None)
    return err


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", default=os.path.join(REPO, "validation", "suite", "multinode.json"))
    ap.add_argument("--out", default=os.path.join(REPO, "build", "validation-multinode"))
    ap.add_argument("--data", default=os.environ.get("SIMREPLAY_VALIDATION_DATA",
                                                     os.path.join(REPO, "build", "validation-data")))
    ap.add_argument("--bin", default=os.environ.get("SIMREPLAY_BIN", os.path.join(REPO, "build", "simreplay")))
    ap.add_argument("--reps", type=int, default=int(os.environ.get("SIMREPLAY_MULTINODE_REPS", "0") or 0),
                    help="repetitions per case (default $SIMREPLAY_MULTINODE_REPS, else the spec's)")
    ap.add_argument("--ingest", action="store_true", help="re-analyse the runs already in --out")
    ap.add_argument("--doc-table", metavar="OUT", help="print the docs' table of OUT/multinode.json and exit")
    args = ap.parse_args(argv)
    if args.doc_table:
        print(doc_table(json.load(open(os.path.join(args.doc_table, "multinode.json")))))
        return 0
    args.bin = os.path.abspath(args.bin)
    global SIMREPLAY_BIN
    SIMREPLAY_BIN = args.bin
    if os.geteuid() != 0:
        print("multinode suite: needs root for the network namespaces (validation/netns); skipped", file=sys.stderr)
        return 77
    spec = json.load(open(args.spec))
    reps = args.reps or spec["repetitions"]
    t_start = time.monotonic()
    # the single-node suite's dataset (validation/suite/run.sh), stamped the same way: one made with
    # other parameters is rebuilt, never silently reused
    dataset_args = ["--images", "320", "--videos", "8", "--frames", "8", "--formats", "files,tar", "--seed", "0"]
    stamp_path, stamp = os.path.join(args.data, ".simreplay-dataset-args"), " ".join(["make-dataset"] + dataset_args)
    stamped = os.path.exists(stamp_path) and open(stamp_path).read().strip() == stamp
    if not os.path.exists(os.path.join(args.data, "dataset.json")) or not stamped:
        shutil.rmtree(args.data, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "simreplay_capture.bench", "make-dataset", "--out", args.data,
                        *dataset_args], env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "capture")), check=True)
        with open(stamp_path, "w") as f:
            f.write(stamp + "\n")
    spec["dataset_samples"] = json.load(open(os.path.join(args.data, "dataset.json")))["files"]
    out = os.path.abspath(args.out)
    index_path = os.path.join(out, "runs.json")
    cases = spec["cases"]
    if not args.ingest:
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        runs: List[Dict[str, Any]] = []
        rates = sorted({case_config(spec, c)["rate"] for c in cases})
        for rate in rates:
            problem = probe_rate(spec, rate, out)
            if problem:
                print(f"multinode suite: {problem}", file=sys.stderr)
                return 1
        http = {http_probe_key(case_config(spec, c)): case_config(spec, c) for c in cases
                if server_of(case_config(spec, c), args.data)}
        for key, cfg in sorted(http.items()):
            problem = probe_http(spec, cfg, args.data, out)
            if problem:
                print(f"multinode suite: {problem}", file=sys.stderr)
                return 1
        for k in range(spec.get("warmup_runs", 1)):
            c = cases[0]
            log(f"warm-up run {k} ({c['name']})")
            run_case(spec, c, os.path.join(out, "runs", f"warmup{k}"), args.data)
        for rep in range(reps):
            for c in cases:
                d = os.path.join(out, "runs", f"{c['name']}.r{rep}")
                def job(c: Dict[str, Any] = c, d: str = d) -> Dict[str, Any]:
                    shutil.rmtree(d, ignore_errors=True)
                    return run_case(spec, c, d, args.data)
                res = harness_within_noise(spec, job, f"{c['name']} r{rep}")
                res["noisy"] = noisy(res, spec)
                res.update(case=c["name"], rep=rep, dir=d)
                runs.append(res)
                s = json.load(open(res["summary"])) if res["summary"] else None
                log(f"{c['name']} r{rep}: exit {res['exit_code']} in {res['wall_s']:.0f}s"
                    + (f", {s['throughput_samples_per_s']:.1f} samples/s, step {s['step_time_s']['mean'] * 1e3:.0f} ms"
                       if s else "") + f", load {res['loadavg_before']:.1f}, steal {res['noise']['steal_fraction']:.1%}")
        json.dump(runs, open(index_path, "w"), indent=1)
        probe_cpu(spec, args.data, out)
    runs = json.load(open(index_path))
    cpu_probe = os.path.join(out, "probe-cpu.json")
    return analyse(spec, runs, out, args.bin, time.monotonic() - t_start,
                   cpu_probe if spec.get("cpu_probe") and os.path.exists(cpu_probe) else None)


def analyse(spec: Dict[str, Any], runs: List[Dict[str, Any]], out: str, binary: str, elapsed_s: float,
            cpu_probe: Optional[str] = None) -> int:
    bs = spec["bootstrap"]
    measured: Dict[str, Dict[str, Any]] = {}
    correctness: Dict[str, Any] = {"runs_checked": 0, "problems": []}
    for r in runs:
        if r["exit_code"] != 0 or not r["summary"]:
            continue
        correctness["runs_checked"] += 1
        for p in check_run(json.load(open(r["summary"])), r["dir"], spec["run"]["steps"]):
            correctness["problems"].append(f"{r['case']} r{r['rep']}: {p}")
    correctness["pass"] = correctness["runs_checked"] > 0 and not correctness["problems"]
    for c in spec["cases"]:
        ok = [r for r in runs if r["case"] == c["name"] and r["exit_code"] == 0 and r["summary"] and not r.get("noisy")]
        sums = [json.load(open(r["summary"])) for r in ok]
        if not sums:
            measured[c["name"]] = {"runs": 0}
            continue
        per = [measured_metrics(s) for s in sums]
        answer = stats(binary, {"bootstrap": bs, "intervals": {k: [p[k] for p in per] for k in per[0]}})["intervals"]
        med = {k: answer[k]["median"] for k in per[0]}
        ci = {k: answer[k]["ci"] for k in per[0]}
        thr = [p["train_throughput_samples_per_s"] for p in per]
        best = sorted(zip(thr, ok), key=lambda x: x[0])[len(ok) // 2][1]  # median-throughput run
        measured[c["name"]] = {"runs": len(ok), "median": med, "ci95": ci, "values": per,
                               "cv_throughput": statistics.pstdev(thr) / statistics.mean(thr) if len(thr) > 1 else 0,
                               "calibration_trace": os.path.join(best["dir"], "t.rank0.jsonl.gz"),
                               "loadavg": [r["loadavg_before"] for r in ok],
                               "steal_max": max(r.get("noise", {}).get("steal_fraction", 0) for r in ok)}
    cal = spec["calibration"]
    results = []
    for c in spec["cases"]:
        cfg = case_config(spec, c)
        src = cal["alternate"] if c["name"] == cal["from"] else cal["from"]
        entry: Dict[str, Any] = {"case": c["name"], "config": cfg, "predicted_from": src}
        m = measured.get(c["name"], {})
        if not m.get("runs") or not measured.get(src, {}).get("runs"):
            entry["error"] = "no successful runs of the case or of its calibration source"
            results.append(entry)
            continue
        probe = os.path.join(out, "probes", cfg["rate"], "probe-network.json")
        model = os.path.join(out, "models", f"{src}--probe-{cfg['rate']}.json")
        unprobed = os.path.join(out, "models", f"{src}--no-probe.json")
        os.makedirs(os.path.dirname(model), exist_ok=True)
        try:
            if not os.path.exists(model):
                calibrate(binary, measured[src]["calibration_trace"], probe, cpu_probe, model, cal.get("args", []))
            http_probe = os.path.join(out, "probes-http", http_probe_key(cfg), "probe-http.json")
            pred = predict(binary, spec, cfg, model, os.path.join(out, "predictions", c["name"]), http_probe=http_probe)
            # the same case from nominal rates: what skipping the probe costs (reported, not gated)
            if not os.path.exists(unprobed):
                calibrate(binary, measured[src]["calibration_trace"], None, cpu_probe, unprobed, cal.get("args", []))
            nominal = predict(binary, spec, cfg, unprobed, os.path.join(out, "predictions-nominal", c["name"]),
                              nominal=True)
        except (RuntimeError, KeyError, OSError) as e:
            entry["error"] = str(e)
            results.append(entry)
            continue
        entry.update(predicted=pred, measured=m["median"], measured_ci95=m["ci95"], error=errors(pred, m["median"]),
                     nominal={"predicted": nominal, "error": errors(nominal, m["median"])}, runs=m["runs"],
                     cv_throughput=m["cv_throughput"], loadavg=m["loadavg"], steal_max=m["steal_max"])
        results.append(entry)
    # The gates cover the cases this host holds faithfully (testbed_holds); the others are reported.
    cores = os.cpu_count() or 1
    for e in results:
        e["held_by_testbed"] = testbed_holds(spec, e["config"], cores)
    gated = [e for e in results if e["held_by_testbed"]]
    beyond = [e for e in results if not e["held_by_testbed"] and isinstance(e.get("error"), dict)]
    thr_err = [abs(e["error"]["train_throughput_samples_per_s"]) for e in gated if isinstance(e.get("error"), dict)]
    step_err = [abs(e["error"]["step_time_s"]) for e in gated if isinstance(e.get("error"), dict)]
    th = spec["thresholds"]
    failed = [e["case"] for e in results if not isinstance(e.get("error"), dict)]
    gates = stats(binary, {"limits": [
        {"name": "median_abs_train_throughput_error_pct", "statistic": "median", "errors": thr_err,
         "limit": th["median_train_throughput_error_pct"]},
        {"name": "max_abs_train_throughput_error_pct", "statistic": "max", "errors": thr_err,
         "limit": th["max_case_train_throughput_error_pct"]},
        {"name": "max_abs_step_time_error_pct", "statistic": "max", "errors": step_err,
         "limit": th["max_step_time_error_pct"]}]})
    median_thr, max_thr, max_step = (g["value"] for g in gates["limits"])
    passed = not failed and gates["pass"] and correctness["pass"]
    nominal_thr = [abs(e["nominal"]["error"]["train_throughput_samples_per_s"]) for e in results if "nominal" in e]
    fresh = {c["name"] for c in spec["cases"] if c.get("fresh")}
    fresh_thr = [abs(e["error"]["train_throughput_samples_per_s"]) for e in results
                 if e["case"] in fresh and isinstance(e.get("error"), dict)]
    fresh_step = [abs(e["error"]["step_time_s"]) for e in results
                  if e["case"] in fresh and isinstance(e.get("error"), dict)]
    doc = {"schema": "simreplay.multinode-validation/1", "spec": spec, "results": results, "pass": passed,
           "beyond_testbed": {
               "note": f"more than {spec['testbed']['max_namespaces_per_core']} namespaces per core of this "
                       f"{cores}-core host: the shared CPU, not the cluster model, limits them; reported, not gated",
               "cases": [e["case"] for e in beyond],
               "max_abs_train_throughput_error_pct": max((abs(e["error"]["train_throughput_samples_per_s"])
                                                          for e in beyond), default=None),
               "max_abs_step_time_error_pct": max((abs(e["error"]["step_time_s"]) for e in beyond), default=None)},
           "fresh_cases": {"cases": sorted(fresh),
                           "median_abs_train_throughput_error_pct": statistics.median(fresh_thr) if fresh_thr else None,
                           "max_abs_step_time_error_pct": max(fresh_step) if fresh_step else None},
           "thresholds": {"median_abs_train_throughput_error_pct": {"value": median_thr,
                                                                    "limit": th["median_train_throughput_error_pct"]},
                          "max_abs_train_throughput_error_pct": {"value": max_thr,
                                                                 "limit": th["max_case_train_throughput_error_pct"]},
                          "max_abs_step_time_error_pct": {"value": max_step, "limit": th["max_step_time_error_pct"]}},
           "nominal": {"note": "the same cases from a model calibrated without the probe, NICs at the tc rate "
                               "(what skipping the probe costs; reported, not gated)",
                       "median_abs_train_throughput_error_pct": statistics.median(nominal_thr) if nominal_thr else None,
                       "max_abs_train_throughput_error_pct": max(nominal_thr) if nominal_thr else None},
           "path": "cluster: cluster.nodes = N nodes of one rank each, nodes_share_cores, NICs from the probe",
           "cases_without_prediction": failed, "elapsed_s": elapsed_s, "correctness": correctness,
           "cpu_contention": contention_of(out, cpu_probe),
           "analysed_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": git_commit(),
           "accelerator": "emulated (every step's compute is a sleep; the all-reduce is real gloo over shaped veths)"}
    tmp = os.path.join(out, "multinode.json.tmp")
    json.dump(doc, open(tmp, "w"), indent=1, sort_keys=True)
    os.replace(tmp, os.path.join(out, "multinode.json"))
    report = render(doc)
    open(os.path.join(out, "report.md"), "w").write(report)
    print(report)
    return 0 if passed else 4


def contention_of(out: str, cpu_probe: Optional[str]) -> Dict[str, Any]:
    """The shared-core curve the models were calibrated with (cpu.busy_core_slowdown and
    cpu.oversubscription_overhead, the same in every model of a run) and where it came from."""
    found: Dict[str, Any] = {"cpu_probe": cpu_probe}
    models = sorted(f for f in os.listdir(os.path.join(out, "models")) if f.endswith(".json")) \
        if os.path.isdir(os.path.join(out, "models")) else []
    if models:
        cpu = json.load(open(os.path.join(out, "models", models[0])))["cpu"]
        for key in ("busy_core_slowdown", "oversubscription_overhead"):
            v = cpu.get(key)
            found[key] = v if isinstance(v, dict) else {"value": v}
    return found


def testbed_holds(spec: Dict[str, Any], cfg: Dict[str, Any], cores: int) -> bool:
    """Whether this host holds the case's namespaces faithfully: at most `testbed.max_namespaces_per_core`
    per core (each namespace runs a rank and its loader worker on the shared cores; beyond that the
    shared CPU, not the cluster model, is what the case measures). Decided from the host, so a larger
    machine gates more cases."""
    return cfg["nodes"] <= spec["testbed"]["max_namespaces_per_core"] * cores


def storage_of(cfg: Dict[str, Any]) -> str:
    if cfg.get("storage", "local") != "http":
        return "local"
    return f"HTTP, server {cfg.get('server_rate', cfg['rate'])}"


def nics(pred: Dict[str, Any]) -> str:
    net = pred.get("network")
    if not net:
        return "–"
    rate = net["nic_bytes_per_s"]
    return f"{rate['value'] / 1e6:.1f} MB/s {rate['provenance']}"


def git_commit() -> str:
    """The commit of the tree the suite ran from, with "+dirty" when it had uncommitted changes."""
    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", REPO, *a], capture_output=True, text=True).stdout.strip()
    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def doc_table(doc: Dict[str, Any]) -> str:
    """The compact table docs/validation.md quotes (`--doc-table OUT`), from OUT/multinode.json."""
    def pct(v: Optional[float]) -> str:
        return "n/a" if v is None else f"{v:+.1f}%"
    lines = ["| case | nodes | link | grad MB | straggler | storage | thr pred | thr meas | err | step err | "
             "coll pred / meas ms | from nominal rates | gated |", "|" + "---|" * 13]
    for e in doc["results"]:
        c = e["config"]
        head = (f"| {e['case']}{' (fresh)' if e['case'] in doc['fresh_cases']['cases'] else ''} | {c['nodes']} | "
                f"{c['rate']} | {c['grad_mb']} | {c.get('straggler_extra_s', 0) or '–'} | {storage_of(c)} |")
        if not isinstance(e.get("error"), dict):
            lines.append(head + f" error: {e.get('error')} |" + " |" * 6)
            continue
        p, m, er = e["predicted"], e["measured"], e["error"]
        lines.append(head + f" {p['train_throughput_samples_per_s']:.1f} | {m['train_throughput_samples_per_s']:.1f} | "
                     f"{pct(er['train_throughput_samples_per_s'])} | {pct(er['step_time_s'])} | "
                     f"{p['collective_time_s'] * 1e3:.0f} / {m['collective_time_s'] * 1e3:.0f} | "
                     f"{pct(e['nominal']['error']['train_throughput_samples_per_s'])} | "
                     f"{'yes' if e.get('held_by_testbed', True) else 'no (beyond testbed)'} |")
    return "\n".join(lines)


def render(doc: Dict[str, Any]) -> str:
    lines = ["# Multi-node validation", "",
             f"Accelerator: {doc['accelerator']}. Elapsed {doc['elapsed_s']:.0f} s.", "",
             "| case | nodes | rate | grad MB | straggler s | storage | from | thr pred | thr meas (95% CI) | err | step pred ms | "
             "step meas ms | err | idle pred | idle meas | err pp | coll pred ms | coll meas ms | err | cv thr | load | "
             "steal | NICs | nominal thr pred | nominal err |",
             "|" + "---|" * 25]
    for e in doc["results"]:
        c = e["config"]
        if not isinstance(e.get("error"), dict):
            lines.append(f"| {e['case']} | {c['nodes']} | {c['rate']} | {c['grad_mb']} | {c.get('straggler_extra_s', 0)} | "
                         f"{storage_of(c)} | {e['predicted_from']} | error: {e.get('error')} |" + " |" * 18)
            continue
        p, m, er, ci = e["predicted"], e["measured"], e["error"], e["measured_ci95"]

        def pct(v: Optional[float]) -> str:
            return "n/a" if v is None else f"{v:+.1f}%"
        lines.append(
            f"| {e['case']}{'' if e.get('held_by_testbed', True) else ' (beyond testbed)'} | {c['nodes']} | {c['rate']} | {c['grad_mb']} | {c.get('straggler_extra_s', 0)} | "
            f"{storage_of(c)} | {e['predicted_from']} | {p['train_throughput_samples_per_s']:.1f} | "
            f"{m['train_throughput_samples_per_s']:.1f} ({ci['train_throughput_samples_per_s'][0]:.1f}-"
            f"{ci['train_throughput_samples_per_s'][1]:.1f}) | {pct(er['train_throughput_samples_per_s'])} | "
            f"{p['step_time_s'] * 1e3:.0f} | {m['step_time_s'] * 1e3:.0f} | {pct(er['step_time_s'])} | "
            f"{p['gpu_idle_fraction']:.1%} | {m['gpu_idle_fraction']:.1%} | {er['gpu_idle_fraction']:+.1f} | "
            f"{p['collective_time_s'] * 1e3:.0f} | {m['collective_time_s'] * 1e3:.0f} | {pct(er['collective_time_s'])} | "
            f"{e['cv_throughput']:.1%} | {max(e['loadavg']):.1f} | {e.get('steal_max', 0):.1%} | {nics(p)} | "
            f"{e['nominal']['predicted']['train_throughput_samples_per_s']:.1f} | "
            f"{pct(e['nominal']['error']['train_throughput_samples_per_s'])} |")
    t = doc["thresholds"]

    def val(key: str) -> str:
        v = t[key]["value"]
        return f"{'n/a' if v is None else f'{v:.1f}%'} (limit {t[key]['limit']}%)"
    lines += ["", f"median |throughput error| {val('median_abs_train_throughput_error_pct')}, max |throughput error| "
                  f"{val('max_abs_train_throughput_error_pct')}, max |step time error| "
                  f"{val('max_abs_step_time_error_pct')}: " + ("PASS" if doc["pass"] else "FAIL"), ""]
    b = doc.get("beyond_testbed") or {}
    if b.get("cases"):
        lines += [f"Beyond the testbed ({', '.join(b['cases'])}: {b['note']}): max |throughput error| "
                  f"{b['max_abs_train_throughput_error_pct']:.1f}%, max |step time error| "
                  f"{b['max_abs_step_time_error_pct']:.1f}% (against the gates' "
                  f"{t['max_abs_train_throughput_error_pct']['limit']}% and {t['max_abs_step_time_error_pct']['limit']}%)",
                  ""]
    nom = doc.get("nominal") or {}
    if nom.get("median_abs_train_throughput_error_pct") is not None:
        lines += [f"From nominal rates ({nom['note']}): median |throughput error| "
                  f"{nom['median_abs_train_throughput_error_pct']:.1f}%, max "
                  f"{nom['max_abs_train_throughput_error_pct']:.1f}%", ""]
    cc = doc.get("cpu_contention") or {}
    if "busy_core_slowdown" in cc:
        s_, o_ = cc["busy_core_slowdown"], cc["oversubscription_overhead"]
        lines += [f"Shared-core curve of the models: busy_core_slowdown {s_['value']:.3g}, oversubscription_overhead "
                  f"{o_['value']:.3g} ({'measured by the CPU probe, ' + os.path.basename(cc['cpu_probe']) if cc.get('cpu_probe') else 'assumed: no CPU probe'})", ""]
    cor = doc.get("correctness") or {}
    lines += [f"correctness ({cor.get('runs_checked', 0)} runs: every rank ran every step, the ranks' parameters "
              f"agree after training, the ranks' samples are disjoint within each epoch): "
              + ("pass" if cor.get("pass") else "FAIL: " + "; ".join(cor.get("problems", [])[:10])), ""]
    f = doc.get("fresh_cases") or {}
    if f.get("cases"):
        m1, m2 = f["median_abs_train_throughput_error_pct"], f["max_abs_step_time_error_pct"]
        lines += [f"Fresh cases ({', '.join(f['cases'])}: never run before the model they test): median "
                  f"|throughput error| {'n/a' if m1 is None else f'{m1:.1f}%'}, max |step time error| "
                  f"{'n/a' if m2 is None else f'{m2:.1f}%'}", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
