"""The multi-node suite's correctness check (validation/suite/multinode.py, check_run) on hand-made runs."""
import gzip
import importlib.util
import json
import os

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
