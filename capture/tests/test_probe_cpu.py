"""CPU contention probe (simreplay_capture.probe_cpu) on the real bench pipeline: real DataLoader workers."""
import json
import os
import subprocess
import sys

import pytest

from conftest import subprocess_env


def _run(args, **kw):
    return subprocess.run([sys.executable, "-m", "simreplay_capture.probe_cpu"] + args, env=subprocess_env(),
                          capture_output=True, text=True, timeout=300, **kw)


def test_probe_writes_documented_curve(dataset_dir, tmp_path):
    out = tmp_path / "probe-cpu.json"
    r = _run(["--bench-data", dataset_dir, "--format", "files", "--image-size", "32", "--frames", "2",
              "--cores", "2", "--max-workers", "3", "--samples", "16", "--batch-size", "4", "--seconds-per-point", "0.3",
              "--warmup-s", "0", "--rounds", "2", "--warmup-pass-s", "0.4", "--wake-every", "1",
              "--wake-sleep-s", "0.005", "--precision-pairs", "0", "--out", str(out)])
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "simreplay.probe-cpu/1"
    # the unrecorded warm-up pass ran before the rounds and is part of the total time
    assert doc["method"]["warmup_pass_s"] == 0.4
    assert doc["total_s"] >= 0.4 + 6 * 0.3
    assert doc["host"]["cores"] == 2
    # rounds alternate direction: 1 2 3 then 3 2 1
    assert doc["method"]["order"] == [1, 2, 3, 3, 2, 1]
    assert [p["workers"] for p in doc["points"]] == [1, 2, 3, 3, 2, 1]
    assert [p["round"] for p in doc["points"]] == [0, 0, 0, 1, 1, 1]
    for p in doc["points"]:
        assert p["samples"] > 0 and p["wall_s"] >= 0.3
        assert p["throughput_samples_per_s"] == pytest.approx(p["samples"] / p["wall_s"])
        # __getitem__ really ran in the workers: thread CPU time was spent, and no more than its wall time
        assert 0 < p["getitem_cpu_s_mean"] <= p["getitem_wall_s_mean"] * 1.05
        assert p["workers_cpu_s"] > 0
        assert p["main_cpu_s"] >= 0
        # the main loop slept 5 ms after every batch and timed how late it woke up
        assert p["wake_sleeps"] >= 1 and 0 <= p["wake_delay_s_mean"] < 0.5
    assert doc["method"]["wake_sleep_s"] == 0.005 and doc["method"]["wake_every"] == 1
    assert doc["baseline_wake"]["sleeps"] == 25 and 0 <= doc["baseline_wake"]["delay_s_mean"] < 0.5
    assert doc["skipped_points"] == []
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".probe")]  # no temporary left
    # each point counts the page faults of its __getitem__ calls; after the points, the main process
    # loads the same items itself (the inline point), counted the same way
    assert all(p["minflt_per_sample_mean"] >= 0 for p in doc["points"])
    inline = doc["inline"]
    assert inline["samples"] > 0 and inline["wall_s"] >= 0.3
    assert 0 < inline["getitem_cpu_s_mean"] <= inline["getitem_wall_s_mean"] * 1.05
    assert inline["minflt_per_sample_mean"] >= 0
    # its warm-up covered a pass over the 16 items, beyond its 2 batches of 4 (tiny items: well inside
    # the pass's time bound)
    assert inline["warmup_samples"] >= 16
    assert doc["total_s"] >= 0.4 + 7 * 0.3


def test_probe_bounded_total_time(dataset_dir, tmp_path):
    out = tmp_path / "p.json"
    r = _run(["--bench-data", dataset_dir, "--image-size", "32", "--frames", "2", "--cores", "1",
              "--samples", "8", "--seconds-per-point", "0.5", "--warmup-s", "0", "--rounds", "3",
              "--max-total-s", "1.2", "--out", str(out)])
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    # 6 planned points of >= 0.5 s each; the budget of 1.2 s admits the first two at most
    assert 1 <= len(doc["points"]) <= 2
    assert len(doc["points"]) + len(doc["skipped_points"]) == 6


def test_probe_keeps_time_for_its_inline_point(dataset_dir, tmp_path):
    """Precision pairs stop while the inline point still fits, judged by how long points really took (the
    workers' start-up on top of the window), not by their nominal window: the development suite's probe
    of 2026-12-07 lost its inline point to its pairs (20 points in 85 s of 90)."""
    out = tmp_path / "p.json"
    r = _run(["--bench-data", dataset_dir, "--image-size", "32", "--frames", "2", "--max-workers", "2",
              "--samples", "8", "--seconds-per-point", "0.2", "--warmup-s", "0", "--rounds", "1",
              "--warmup-pass-s", "0", "--wake-sleep-s", "0", "--precision-target-se", "0",
              "--precision-pairs", "50", "--max-total-s", "8", "--out", str(out)])
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert not doc["skipped_points"] and doc["precision"]["pairs_run"] >= 1
    assert "inline" in doc and "inline_skipped" not in doc
    # no room at all for the inline point: the probe says so instead of dropping it silently
    r = _run(["--bench-data", dataset_dir, "--image-size", "32", "--frames", "2", "--max-workers", "1",
              "--samples", "8", "--seconds-per-point", "2", "--warmup-s", "0", "--rounds", "1",
              "--warmup-pass-s", "0", "--wake-sleep-s", "0", "--max-total-s", "3", "--out", str(out)])
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert "inline" not in doc and "max_total_s (3 s) ran out before the inline point" in doc["inline_skipped"]
    assert "warning: max_total_s (3 s) ran out before the inline point" in r.stderr


def test_probe_without_wake_measurement(dataset_dir, tmp_path):
    out = tmp_path / "p.json"
    r = _run(["--bench-data", dataset_dir, "--image-size", "32", "--frames", "2", "--cores", "1", "--max-workers", "1",
              "--samples", "8", "--seconds-per-point", "0.2", "--warmup-s", "0", "--rounds", "1",
              "--warmup-pass-s", "0", "--wake-sleep-s", "0", "--no-inline-point", "--out", str(out)])
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert "baseline_wake" not in doc and all("wake_delay_s_mean" not in p for p in doc["points"])
    assert "inline" not in doc


@pytest.mark.parametrize("args", [["--batch-size", "0"], ["--seconds-per-point", "-1"], ["--rounds", "0"],
                                  ["--wake-sleep-s", "-0.1"], ["--wake-every", "0"],
                                  ["--precision-target-se", "-0.1"], ["--precision-pairs", "-1"]])
def test_probe_rejects_bad_arguments(dataset_dir, tmp_path, args):
    out = tmp_path / "p.json"
    r = _run(["--bench-data", dataset_dir, "--out", str(out)] + args)
    assert r.returncode == 3
    assert "probe_cpu:" in r.stderr
    assert not out.exists()


def test_probe_user_dataset_factory(tmp_path):
    # A user's own dataset through --dataset MODULE:CALLABLE (a module on PYTHONPATH).
    (tmp_path / "userdata.py").write_text(
        "import torch\n"
        "class Squares(torch.utils.data.Dataset):\n"
        "    def __init__(self, n, size):\n"
        "        self.n, self.size = n, size\n"
        "    def __len__(self):\n"
        "        return self.n\n"
        "    def __getitem__(self, i):\n"
        "        x = torch.full((self.size, self.size), float(i))\n"
        "        return (x @ x).sum()\n"
        "def make(n=32, size=64):\n"
        "    return Squares(n, size)\n")
    out = tmp_path / "p.json"
    env = subprocess_env()
    env["PYTHONPATH"] = str(tmp_path) + os.pathsep + env["PYTHONPATH"]
    r = subprocess.run([sys.executable, "-m", "simreplay_capture.probe_cpu", "--dataset", "userdata:make",
                        "--dataset-kwargs", '{"n": 16}', "--cores", "1", "--max-workers", "2",
                        "--seconds-per-point", "0.2", "--warmup-s", "0", "--rounds", "1", "--out", str(out)],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["dataset"] == {"source": "userdata:make", "len": 16, "sampled_indices": 16, "seed": 0}
    assert [p["workers"] for p in doc["points"]] == [1, 2]
    bad = _run(["--dataset", "no_such_module_xyz:make", "--out", str(tmp_path / "q.json")])
    assert bad.returncode == 3 and "no_such_module_xyz" in bad.stderr


def _short_probe(dataset_dir, out, *args):
    """A fast two-core probe of the test dataset (0.2 s windows, no warm-up, no wake-up timing)."""
    return _run(["--bench-data", dataset_dir, "--format", "files", "--image-size", "32", "--frames", "2",
                 "--cores", "2", "--samples", "16", "--seconds-per-point", "0.2", "--warmup-s", "0", "--rounds", "2",
                 "--warmup-pass-s", "0", "--wake-sleep-s", "0", "--out", str(out), *args])


def test_probe_adds_precision_pairs_while_the_slowdown_is_imprecise(dataset_dir, tmp_path):
    out = tmp_path / "probe-cpu.json"
    # a target of 0 is never met by real measurements: every allowed pair runs, alternating (1, C), (C, 1)
    r = _short_probe(dataset_dir, out, "--max-workers", "3", "--precision-target-se", "0", "--precision-pairs", "2")
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert [p["workers"] for p in doc["points"]] == [1, 2, 3, 3, 2, 1, 1, 2, 2, 1]
    assert doc["method"]["order"] == [1, 2, 3, 3, 2, 1, 1, 2, 2, 1]
    # each pair is a round of its own for k = 1 and k = C: one level, one contrast in calibrate's fit
    assert [p["round"] for p in doc["points"]] == [0, 0, 0, 1, 1, 1, 2, 2, 3, 3]
    prec = doc["precision"]
    assert prec["pairs_run"] == 2 and prec["met"] is False
    assert set(prec["slowdown_se"]) == set(prec["slowdown_se_after_rounds"]) == {"throughput", "thread_cpu"}
    assert "target not met" in r.stdout
    # a target every probe meets: no pair
    r = _short_probe(dataset_dir, out, "--max-workers", "2", "--precision-target-se", "1000")
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert [p["workers"] for p in doc["points"]] == [1, 2, 2, 1]
    assert doc["precision"]["pairs_run"] == 0 and doc["precision"]["met"] is True


def _point(k, rnd, cpu_s, throughput=100.0):
    return {"workers": k, "round": rnd, "getitem_cpu_s_mean": cpu_s, "throughput_samples_per_s": throughput,
            "wall_s": 1.0, "main_cpu_s": 0.0}


def test_slowdown_standard_error_of_exact_and_noisy_curves():
    from simreplay_capture.probe_cpu import slowdown_standard_error
    # an exact curve (slowdown 0.2, a level per round) leaves no residual: standard error 0
    exact = [_point(k, r, level * (1.2 if k >= 2 else 1.0)) for r, level in ((0, 1e-3), (1, 1.3e-3))
             for k in (1, 2, 3)]
    assert slowdown_standard_error(exact, 2)["thread_cpu"] == pytest.approx(0.0, abs=1e-9)
    # two rounds of k = 1, 2 only: one contrast each, per-round levels: beta is the mean contrast and its
    # standard error is the standard error of a mean of two: their sample standard deviation / sqrt(2)
    import math
    c = [math.log(1.1), math.log(1.3)]
    pts = [_point(1, 0, 1e-3), _point(2, 0, 1e-3 * 1.1), _point(1, 1, 1e-3), _point(2, 1, 1e-3 * 1.3)]
    sd = abs(c[0] - c[1]) / math.sqrt(2)
    assert slowdown_standard_error(pts, 2)["thread_cpu"] == pytest.approx(sd / math.sqrt(2), rel=1e-9)
    # one round cannot tell a slowdown from its level's noise: infinite; one core: not applicable
    assert math.isinf(slowdown_standard_error(pts[:2], 2)["thread_cpu"])
    assert slowdown_standard_error(pts, 1) == {}
