"""validation/allocator/lifetimes.py: page faults per process lifetime and the size rule, on traces written
here (expectations worked out by hand in the comments)."""
import importlib.util
import json
import os
import subprocess

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "validation", "allocator", "lifetimes.py")
_spec = importlib.util.spec_from_file_location("lifetimes", SCRIPT)
lifetimes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lifetimes)


def _sample(epoch, batch, index, worker, t, width, faults):
    return {"type": "sample", "rank": 0, "epoch": epoch, "index": index, "batch": batch, "worker": worker,
            "t_start_ns": t, "read_ns": 0, "decode_ns": 1000, "augment_ns": 0, "read_bytes": 10, "out_bytes": 10,
            "format": "jpeg", "width": width, "height": 1, "frames": 1, "minflt": faults}


def _trace(path, samples, persistent=False):
    with open(path, "w") as f:
        f.write(json.dumps({"type": "header", "schema": "simreplay.trace/1",
                            "manifest": {"loader": {"num_workers": 2, "persistent_workers": persistent}}}) + "\n")
        for s in samples:
            f.write(json.dumps(s) + "\n")
    return str(path)


def test_larger_flags_follow_the_largest_so_far():
    # 100 (first), 40 (<= 50), 60 (> 50), 100 (> 50), 20: larger, no, larger, larger, no
    lt = [{"width": w, "height": 1, "frames": 1} for w in (100, 40, 60, 100, 20)]
    assert lifetimes.larger_flags(lt) == [True, False, True, True, False]


def test_reassigned_deals_batches_as_the_dataloader_does():
    # batches 0..3 of epoch 0 to 2 workers: 0 and 2 to worker 0, 1 and 3 to worker 1; epoch 1 fresh processes;
    # inline: one process for everything, in stream order
    samples = [_sample(e, b, 10 * e + b, b % 3, 100 * e + b, 1, 0) for e in (0, 1) for b in range(4)]
    dealt = lifetimes.reassigned(samples, 2)
    assert [[(s["epoch"], s["batch"]) for s in lt] for lt in dealt] == [
        [(0, 0), (0, 2)], [(0, 1), (0, 3)], [(1, 0), (1, 2)], [(1, 1), (1, 3)]]
    assert [(s["epoch"], s["batch"]) for s in lifetimes.reassigned(samples, 0)[0]] == [
        (e, b) for e in (0, 1) for b in range(4)]


def test_analyse_splits_lifetimes_by_epoch_unless_persistent(tmp_path):
    # worker 0 decodes widths 100, 40 (epoch 0) then 30, 20 (epoch 1) with 1000, 0, 300, 10 faults
    samples = [_sample(0, 0, 1, 0, 1, 100, 1000), _sample(0, 0, 2, 0, 2, 40, 0),
               _sample(1, 0, 3, 0, 3, 30, 300), _sample(1, 0, 4, 0, 4, 20, 10)]
    fresh = lifetimes.analyse("fresh", lifetimes.lifetimes(_trace(tmp_path / "fresh.jsonl", samples)))
    assert fresh["trace"] == "fresh"
    assert [lt["samples"] for lt in fresh["lifetimes"]] == [2, 2]
    assert [lt["faults_per_sample"] for lt in fresh["lifetimes"]] == [500, 155]
    # the top tenth of 4 samples is 1 sample: 1000 of 1310 faults
    assert abs(fresh["share_of_faults_in_top_tenth_of_samples"] - 1000 / 1310) < 1e-12
    kept = lifetimes.analyse("kept", lifetimes.lifetimes(_trace(tmp_path / "kept.jsonl", samples, persistent=True)))
    assert [lt["samples"] for lt in kept["lifetimes"]] == [4]


def test_rule_check_reproduces_the_capture_it_comes_from(tmp_path):
    # 2 workers, one epoch, 24 samples per worker: dealt again to 2 workers, the capture's batches make its own
    # lifetimes, so the expectation sums each group's mean over that group's own samples: the measured mean.
    # Each worker's width-100 sample comes late; the 3 samples after it are the only "other" ones (5 faults)
    samples = []
    for b in range(12):
        for k in range(4):
            width = 100 if (b, k) == (10, 0) or (b, k) == (11, 0) else 10 + k
            faults = 900 if width == 100 else 5
            samples.append(_sample(0, b, 4 * b + k, b % 2, 4 * b + k, width, faults))
    lts = lifetimes.lifetimes(_trace(tmp_path / "w2.jsonl", samples))
    rule = lifetimes.rule_check("w2", lts, {2: lts})
    row = rule["configurations"][0]
    assert row["workers"] == 2
    assert abs(row["expected_faults_per_sample"] - row["measured_faults_per_sample"]) < 1e-9
    assert rule["other_sample_faults"] == 5


def test_a_bad_trace_is_one_line_and_nothing_is_written(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"type": "header", "schema": "simreplay.trace/1", "manifest": {}}) + "\n{not json\n")
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(SCRIPT), "..", "..", "capture"))
    r = subprocess.run(["/usr/bin/python3", SCRIPT, "--out", str(out), "--traces", str(bad)], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 3
    assert r.stderr.startswith(f"lifetimes.py: {bad}:2:") and r.stderr.count("\n") == 1, r.stderr
    assert not (out / "lifetimes.json").exists()
