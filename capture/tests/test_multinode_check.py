"""The multi-node suite's correctness check (validation/suite/multinode.py, check_run) on hand-made runs."""
import gzip
import importlib.util
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "multinode", os.path.join(HERE, "..", "..", "validation", "suite", "multinode.py"))
multinode = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(multinode)


def _write_run(tmp_path, shards, digests, steps):
    """One run of len(shards) ranks: rank r loaded shards[r][epoch] = indices."""
    for r, by_epoch in enumerate(shards):
        with gzip.open(tmp_path / f"t.rank{r}.jsonl.gz", "wt") as f:
            f.write(json.dumps({"type": "header"}) + "\n")
            for epoch, indices in by_epoch.items():
                for i in indices:
                    f.write(json.dumps({"type": "sample", "epoch": epoch, "index": i}) + "\n")
    return {"world_size": len(shards),
            "ranks": [{"rank": r, "steps": steps[r], "param_sha256": digests[r]} for r in range(len(shards))]}


def test_a_correct_run_has_no_problem(tmp_path):
    s = _write_run(tmp_path, [{0: [0, 2, 4], 1: [1, 3]}, {0: [1, 3, 5], 1: [0, 2]}], ["ab", "ab"], [20, 20])
    assert multinode.check_run(s, str(tmp_path), 20) == []


def test_each_violation_is_named(tmp_path):
    s = _write_run(tmp_path, [{0: [0, 2, 4]}, {0: [4, 5]}], ["ab", "cd"], [20, 19])
    problems = multinode.check_run(s, str(tmp_path), 20)
    text = "; ".join(problems)
    assert "rank 1 ran 19 steps" in text
    assert "parameters differ" in text
    assert "sample 4 loaded by ranks 0 and 1" in text


def test_a_missing_trace_or_digest_fails(tmp_path):
    s = _write_run(tmp_path, [{0: [0]}, {0: [1]}], ["ab", None], [20, 20])
    os.remove(tmp_path / "t.rank1.jsonl.gz")
    text = "; ".join(multinode.check_run(s, str(tmp_path), 20))
    assert "no parameter digest" in text and "no trace of rank 1" in text


def _spec():
    return json.load(open(os.path.join(HERE, "..", "..", "validation", "suite", "multinode.json")))


def test_cases_are_predicted_through_the_cluster_path_from_scenario_inputs(tmp_path):
    # The scenario a user writes: N nodes of one rank sharing the host's cores, the NICs left to the
    # probe, the gradient and the straggler as inputs; the model file is only read, never written.
    model = tmp_path / "model.json"
    model.write_text(json.dumps({"schema": "simreplay.model/1", "gpu": {"step_time_s": {"value": 0.05}}}))
    before = model.read_text()
    spec = dict(_spec(), dataset_samples=320)
    cfg = dict(spec["base"], nodes=4, straggler_extra_s=0.05, grad_mb=16)
    sc = multinode.scenario_for(spec, cfg, str(model), "case", nominal=False)
    assert sc["cluster"]["nodes"] == 4 and sc["cluster"]["nodes_share_cores"] is True
    assert "network" not in sc["cluster"]  # probed links
    assert sc["hardware"]["gpus"] == 1
    assert sc["collective"]["gradient_bytes"] == multinode.grad_bytes(16)
    assert sc["cluster"]["stragglers"] == [{"node": 3, "gpu_step_scale": (0.05 + 0.05) / 0.05}]
    nominal = multinode.scenario_for(spec, cfg, str(model), "case", nominal=True)
    assert nominal["cluster"]["network"] == {"nic_bytes_per_s": 1.25e8}  # 1gbit / 8
    assert model.read_text() == before
    probe = tmp_path / "probe-http.json"
    # The store's aggregate rate (several streams), not one stream's, is the scenario's aggregate.
    probe.write_text(json.dumps({"fit": {"latency_s": 0.002, "bytes_per_s": 2.4e6, "aggregate_bytes_per_s": 2.45e6}}))
    http = multinode.scenario_for(spec, dict(cfg, storage="http", server_rate="20mbit"), str(model), "c", False,
                                  str(probe))
    assert http["storage"] == {"kind": "shared", "client_cache": False, "aggregate_bytes_per_s": 2.45e6,
                               "latency_s": 0.002}
    # A probe written before the aggregate sweep: its one-stream rate.
    probe.write_text(json.dumps({"fit": {"latency_s": 0.002, "bytes_per_s": 2.4e6}}))
    old = multinode.scenario_for(spec, dict(cfg, storage="http", server_rate="20mbit"), str(model), "c", False,
                                 str(probe))
    assert old["storage"]["aggregate_bytes_per_s"] == 2.4e6


def test_the_gates_cover_the_namespaces_the_host_holds():
    spec = _spec()
    assert multinode.testbed_holds(spec, {"nodes": 4}, 2)
    assert not multinode.testbed_holds(spec, {"nodes": 5}, 2)
    assert multinode.testbed_holds(spec, {"nodes": 6}, 4)


def test_bootstrap_and_gates_come_from_the_simreplay_binary():
    """multinode.py judges with `simreplay stats` (validation/statistics and validation/gate), the code
    `simreplay validate` uses: medians, seeded intervals that repeat exactly, and failing gates."""
    binary = os.environ.get("SIMREPLAY_BINARY")
    assert binary and os.path.exists(binary), "ctest sets SIMREPLAY_BINARY to the built simreplay"
    request = {"bootstrap": {"resamples": 500, "seed": 7, "confidence": 0.95},
               "intervals": {"thr": [100.0, 110.0, 90.0, 105.0], "one": [3.0]},
               "limits": [{"name": "median", "statistic": "median", "errors": [-4.0, 2.0, 12.0], "limit": 10},
                          {"name": "worst", "statistic": "max", "errors": [-4.0, 2.0, 12.0], "limit": 10},
                          {"name": "empty", "statistic": "max", "errors": [], "limit": 10}]}
    a = multinode.stats(binary, request)
    assert a == multinode.stats(binary, request)
    assert a["intervals"]["thr"]["median"] == 102.5
    lo, hi = a["intervals"]["thr"]["ci"]
    assert 90.0 <= lo <= 102.5 <= hi <= 110.0
    assert a["intervals"]["one"]["ci"] == [3.0, 3.0]
    median, worst, empty = a["limits"]
    assert (median["value"], median["pass"]) == (4.0, True)
    assert (worst["value"], worst["pass"]) == (12.0, False)
    assert (empty["value"], empty["pass"], empty["n"]) == (None, False, 0)
    assert a["pass"] is False
    try:
        multinode.stats(binary, {"intervals": {"x": [1.0, float("nan")]}})
    except RuntimeError as e:
        assert "finite" in str(e) or "NaN" in str(e)
    else:
        raise AssertionError("a NaN measurement must be refused")


def test_the_cpu_probe_measures_a_held_out_split_and_reaches_calibrate(tmp_path):
    """The suite's CPU probe (multinode.probe_cpu) runs the real probe on a dataset that shares no photo
    with the cases' one, and its curve reaches the models through `simreplay calibrate --cpu-probe`."""
    binary = os.environ.get("SIMREPLAY_BINARY")
    assert binary and os.path.exists(binary), "ctest sets SIMREPLAY_BINARY to the built simreplay"
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, ".."))
    data = tmp_path / "data"
    subprocess.run([sys.executable, "-m", "simreplay_capture.bench", "make-dataset", "--out", str(data),
                    "--images", "24", "--videos", "1", "--frames", "2", "--formats", "files", "--seed", "0"],
                   env=env, check=True, capture_output=True)
    spec = {"run": {"image_size": 64, "frames": 2, "batch_size": 4, "seed": 0},
            "cpu_probe": {"seconds_per_point": 0.4, "rounds": 1, "max_workers": 2, "max_total_s": 20,
                          "dataset_args": ["--images", "24", "--videos", "1", "--frames", "2", "--formats", "files",
                                           "--seed", "11", "--exclude-sources", "{data}"]}}
    out = tmp_path / "out"
    out.mkdir()
    path = multinode.probe_cpu(spec, str(data), str(out))
    assert path == str(out / "probe-cpu.json")
    probe = json.load(open(path))
    assert {p["workers"] for p in probe["points"]} >= {1, 2}
    def photos(d):
        return {s["source"] for s in json.load(open(d / "dataset.json"))["samples"] if s["kind"] == "image"}
    assert photos(data) and photos(out / "probe-data") and not photos(data) & photos(out / "probe-data")
    # No probe asked for: none run, the models assume the curve.
    assert multinode.probe_cpu({"run": spec["run"]}, str(data), str(tmp_path / "elsewhere")) is None
    # Its curve in a model calibrated with it, and in the suite's record of the run.
    trace = os.path.join(HERE, "..", "..", "examples", "quickstart", "trace.jsonl.gz")
    (out / "models").mkdir()
    model = out / "models" / "m.json"
    multinode.calibrate(binary, trace, None, path, str(model), [])
    cpu = json.load(open(model))["cpu"]
    assert "CPU probe" in cpu["busy_core_slowdown"]["source"]
    assert cpu["busy_core_slowdown"]["assumed"] is False
    recorded = multinode.contention_of(str(out), path)
    assert recorded["cpu_probe"] == path
    assert recorded["busy_core_slowdown"]["value"] == cpu["busy_core_slowdown"]["value"]


def test_ci_spec_gates_every_case_on_two_cores_and_the_rest_is_opt_in():
    """multinode.json (CI) holds only cases a 2-core host gates; the 5-6-namespace ones, reported and never
    gated there, are in multinode-oversubscribed.json with the calibration cases they are predicted from."""
    spec = _spec()
    for c in spec["cases"]:
        assert multinode.testbed_holds(spec, multinode.case_config(spec, c), 2), c["name"]
    opt = json.load(open(os.path.join(HERE, "..", "..", "validation", "suite", "multinode-oversubscribed.json")))
    names = [c["name"] for c in opt["cases"]]
    assert opt["calibration"]["from"] in names and opt["calibration"]["alternate"] in names
    beyond = [c for c in opt["cases"] if c["name"] not in (opt["calibration"]["from"], opt["calibration"]["alternate"])]
    assert beyond and not any(multinode.testbed_holds(opt, multinode.case_config(opt, c), 2) for c in beyond)
    assert not {c["name"] for c in beyond} & {c["name"] for c in spec["cases"]}


def test_the_cpu_table_leaves_the_warm_up_steps_out_of_its_steady_columns(tmp_path):
    """scripts/multinode_cpu_table.py (the validation log's figures): per case, the loop thread's host CPU
    over all steps and after the warm-up, and the loader's CPU and faults per sample, over runs and ranks."""
    run = tmp_path / "runs" / "n2.r0"
    run.mkdir(parents=True)
    for rank in range(2):
        with gzip.open(run / f"t.rank{rank}.jsonl.gz", "wt") as f:
            for step, ms in enumerate([100, 10, 10, 10]):
                f.write(json.dumps({"type": "step", "step": step, "cpu_ns": ms * 1_000_000}) + "\n")
            for ms, faults in ((2, 10), (4, 30)):
                f.write(json.dumps({"type": "sample", "cpu_ns": ms * 1_000_000, "minflt": faults}) + "\n")
    script = os.path.join(HERE, "..", "..", "scripts", "multinode_cpu_table.py")
    out = subprocess.run([sys.executable, script, str(tmp_path), "--warmup-steps", "1"],
                         capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[2] == "| n2 | 32.5 | 10.0 | 10.0 | 3.00 | 3.00 | 20 | 4 |"


def _timeline(tmp_path, step_ends_by_rank, wait_s=0.01):
    """A simulator timeline (sim/timeline.h's tracks) of ranks whose step k waits `wait_s` for data,
    then runs a GPU step and an all-reduce ending at step_ends_by_rank[rank][k]."""
    ev = []
    for rank, ends in enumerate(step_ends_by_rank):
        ev += [{"name": "thread_name", "ph": "M", "pid": rank, "tid": 0, "args": {"name": "main loop (next, H2D issue)"}},
               {"name": "thread_name", "ph": "M", "pid": rank, "tid": 2, "args": {"name": "GPU step (emulated)"}}]
        prev = 0.0
        for end in ends:
            ev.append({"name": "wait for data", "ph": "X", "pid": rank, "tid": 0, "ts": prev * 1e6, "dur": wait_s * 1e6})
            start = prev + wait_s
            comm = 0.02
            ev.append({"name": "GPU step", "ph": "X", "pid": rank, "tid": 2, "ts": start * 1e6,
                       "dur": (end - comm - start) * 1e6})
            ev.append({"name": "all-reduce", "ph": "X", "pid": rank, "tid": 2, "ts": (end - comm) * 1e6,
                       "dur": comm * 1e6})
            prev = end
    path = tmp_path / "timeline.json"
    path.write_text(json.dumps({"traceEvents": ev, "otherData": {"truncated": False}}))
    return str(path)


def test_predictions_are_measured_over_the_runs_own_window(tmp_path):
    # 2 ranks, 4 steps, 1 warm-up step: the window runs from the end of step 0 to the end of step 3.
    # Rank 0's steps end at 0.5 (a slow start), 0.6, 0.7, 0.8 s; rank 1's at 0.3, 0.45, 0.6, 0.75 s:
    # windows 0.3 and 0.45 s, so 2 ranks x 3 steps x 8 samples / 0.45 s; step time the mean interval.
    path = _timeline(tmp_path, [[0.5, 0.6, 0.7, 0.8], [0.3, 0.45, 0.6, 0.75]])
    m = multinode.window_metrics(path, warmup_steps=1, steps=4, batch_size=8)
    assert m["train_throughput_samples_per_s"] == pytest.approx(48 / 0.45)
    assert m["step_time_s"] == pytest.approx((0.1 + 0.15) / 2)
    assert m["data_wait_s"] == pytest.approx(0.01)
    assert m["collective_time_s"] == pytest.approx(0.02)
    # busy = each step less its wait and its all-reduce: rank 0 3 x 0.07 over 0.3 s, rank 1 3 x 0.12 over 0.45 s
    assert m["gpu_idle_fraction"] == pytest.approx(((1 - 0.21 / 0.3) + (1 - 0.36 / 0.45)) / 2)
    # A timeline with another number of steps than the run's is refused, not measured.
    with pytest.raises(RuntimeError, match="waited for 4 batches, not 5"):
        multinode.window_metrics(path, warmup_steps=1, steps=5, batch_size=8)
