"""The bench CLI end to end, every storage format, capture on and off, plus rank handling."""
import json
import os
import subprocess
import sys

import pytest

import simreplay_capture as sc
from conftest import subprocess_env


def _bench(*args, env=None):
    p = subprocess.run([sys.executable, "-m", "simreplay_capture.bench", *args],
                       env=env or subprocess_env(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout


def test_dataset_manifest(dataset_dir):
    man = json.load(open(os.path.join(dataset_dir, "dataset.json")))
    assert man["files"] == 32 and man["mix"] == {"jpeg": 28, "mp4": 4}
    assert set(man["formats"]) == {"files", "tar", "lmdb", "hdf5"}
    assert os.path.exists(os.path.join(dataset_dir, "tar", "shard-000000.tar"))
    import tarfile
    names = tarfile.open(os.path.join(dataset_dir, "tar", "shard-000000.tar")).getnames()
    assert any(n.endswith(".mp4") for n in names) and any(n.endswith(".jpg") for n in names)


def test_make_dataset_deterministic(tmp_path):
    from simreplay_capture.bench.dataset import make_dataset
    a = make_dataset(str(tmp_path / "a"), 6, 1, ["files"], frames=3, seed=5)
    b = make_dataset(str(tmp_path / "b"), 6, 1, ["files"], frames=3, seed=5)
    assert a["samples"] == b["samples"]
    for s in a["samples"]:
        fa = open(tmp_path / "a" / "files" / f"{s['key']}.{s['ext']}", "rb").read()
        fb = open(tmp_path / "b" / "files" / f"{s['key']}.{s['ext']}", "rb").read()
        assert fa == fb


def test_make_dataset_exclude_sources_shares_no_photo(tmp_path):
    """A held-out split (the validation suite's CPU probe dataset): no photo of the other tree."""
    _bench("make-dataset", "--out", str(tmp_path / "a"), "--images", "40", "--videos", "0", "--formats", "files")
    _bench("make-dataset", "--out", str(tmp_path / "b"), "--images", "40", "--videos", "0", "--formats", "files",
           "--seed", "3", "--exclude-sources", str(tmp_path / "a"))
    from simreplay_capture.bench.dataset import sources_of
    a, b = set(sources_of(str(tmp_path / "a"))), sources_of(str(tmp_path / "b"))
    assert len(b) == 40 and not a & set(b)


@pytest.mark.parametrize("fmt", ["files", "tar", "lmdb", "hdf5"])
def test_run_each_format(dataset_dir, tmp_path, fmt):
    trace = str(tmp_path / f"{fmt}.jsonl.gz")
    summ = str(tmp_path / "s.json")
    _bench("run", "--data", dataset_dir, "--format", fmt, "--trace", trace, "--workers", "2",
           "--batch-size", "4", "--steps", "8", "--warmup-steps", "1", "--step-time-s", "0.005",
           "--image-size", "32", "--frames", "4", "--summary-json", summ, "--step-dist", "lognormal",
           "--step-cv", "0.3", "--grad-accum", "2")
    s = json.load(open(summ))
    assert s["samples"] == 7 * 4 and s["throughput_samples_per_s"] > 0
    assert s["accelerator"] in ("emulated", "cuda") and 0 <= s["gpu_idle_fraction"] <= 1
    t = sc.read_trace(trace)
    assert t.complete and t.manifest["data"]["format"] == fmt
    assert t.manifest["data"]["mix"] == {"jpeg": 28, "mp4": 4}
    assert len(t.of("step")) == 8 and t.of("step")[0]["micro_batches"] == 2
    fmts = {r["format"] for r in t.of("sample")}
    assert fmts <= {"jpeg", "mp4"}
    vids = [r for r in t.of("sample") if r["format"] == "mp4"]
    for v in vids:
        assert v["frames"] == 4 and v["decode_ns"] > 0
    # every sample counts the page faults its __getitem__ took (RUSAGE_THREAD), beside its CPU time;
    # decoding into fresh buffers takes some in a fresh worker
    samples = t.of("sample")
    assert all(isinstance(r["minflt"], int) and r["minflt"] >= 0 for r in samples)
    assert sum(r["minflt"] for r in samples) > 0


def test_run_no_capture_and_pipeline_only(dataset_dir, tmp_path):
    summ = str(tmp_path / "s.json")
    out = _bench("run", "--data", dataset_dir, "--no-capture", "--pipeline-only", "--workers", "1",
                 "--batch-size", "4", "--epochs", "1", "--warmup-steps", "0", "--image-size", "32",
                 "--summary-json", summ)
    s = json.load(open(summ))
    assert s["kind"] == "pipeline" and s["samples"] == 32 and s["gpu_idle_fraction"] is None
    assert "samples/s" in out and not s["capture"]


def test_rank_trace_name(dataset_dir, tmp_path):
    env = subprocess_env()
    env.update(RANK="1", WORLD_SIZE="2", LOCAL_RANK="1")
    trace = str(tmp_path / "r.jsonl.gz")
    _bench("run", "--data", dataset_dir, "--trace", trace, "--workers", "0", "--batch-size", "4",
           "--steps", "3", "--step-time-s", "0", "--image-size", "32", env=env)
    assert not os.path.exists(trace)
    t = sc.read_trace(str(tmp_path / "r.rank1.jsonl.gz"))
    assert t.manifest["rank"] == 1 and t.manifest["world_size"] == 2
    assert {r["rank"] for r in t.of("sample")} == {1}
    assert {r["worker"] for r in t.of("sample")} == {-1}


def test_page_faults_reach_the_model_and_the_diagnosis(dataset_dir, tmp_path):
    """A real capture's per-sample page faults go through calibrate (cpu.page_fault_cpu_share, measured
    or assumed with the reason) and diagnose (observed.page_faults) of the built binary."""
    binary = os.environ.get("SIMREPLAY_BINARY")
    assert binary and os.path.exists(binary), "ctest sets SIMREPLAY_BINARY to the built simreplay"
    trace = str(tmp_path / "w2.jsonl.gz")
    _bench("run", "--data", dataset_dir, "--trace", trace, "--workers", "2", "--batch-size", "4", "--steps", "24",
           "--warmup-steps", "2", "--step-time-s", "0.002", "--image-size", "32", "--frames", "2")
    samples = sc.read_trace(trace).of("sample")
    model = tmp_path / "model.json"
    r = subprocess.run([binary, "calibrate", trace, "--out", str(model)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    m = json.loads(model.read_text())
    # The workers' main-thread CPU splits their overhead: what ran off it (the send thread's) runs apart,
    # per tensor byte; the rest stays per sample on the worker's thread.
    workers = [w for w in sc.read_trace(trace).of("worker") if w["worker"] >= 0]
    assert workers and all(0 <= w["main_thread_cpu_ns"] <= w["cpu_ns"] + 10**7 for w in workers)
    contention = m["fit_quality"]["cpu"]["contention"][0]
    assert contention["send_s_per_byte"] >= 0 and contention["send_per_sample_s"] >= 0
    send = m["cpu"]["worker_send_s_per_byte"]
    if contention["send_s_per_byte"] > 0:
        assert send["value"] == pytest.approx(contention["send_s_per_byte"]) and not send["assumed"]
        assert "off the main threads per tensor byte" in send["source"]
        overhead = m["cpu"]["worker_overhead_per_sample_s"]["value"]
        assert overhead == pytest.approx(contention["overhead_per_sample_s"] - contention["send_per_sample_s"])
    else:
        assert send["value"] == 0 and send["assumed"] and send["source"].startswith("0: no worker CPU counted off")
    share = m["cpu"]["page_fault_cpu_share"]
    q = m["fit_quality"]["cpu"]["page_faults"]
    assert q["samples"] == len(samples) and q["trace"] == trace
    assert q["faults_per_sample"] == pytest.approx(sum(s["minflt"] for s in samples) / len(samples))
    if q["measured"]:
        assert 0 < share["value"] <= 0.95 and not share["assumed"]
        assert share["source"].startswith("least squares of the samples' cpu_ns on their minflt")
    else:
        assert share["value"] == 0 and share["assumed"] and share["source"].startswith("assumed 0: ")
    out = tmp_path / "diag"
    r = subprocess.run([binary, "diagnose", trace, "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    pf = json.loads((out / "diagnosis.json").read_text())["observed"]["page_faults"]
    assert pf["visible"] and pf["from"]["records"]["sample"] == len(samples)
    assert pf["measured"] == q["measured"] and pf["faults_per_sample"] == pytest.approx(q["faults_per_sample"])
    assert "page faults:" in r.stdout
    # With a CPU probe's inline point, inline loading is charged its own page faults relative to the
    # captured workers' (cpu.inline_page_fault_ratio); without churn measured it stays 1, assumed.
    probe = tmp_path / "probe.json"
    p = subprocess.run([sys.executable, "-m", "simreplay_capture.probe_cpu", "--bench-data", dataset_dir,
                        "--image-size", "32", "--frames", "2", "--cores", "2", "--max-workers", "2", "--samples", "16",
                        "--seconds-per-point", "0.3", "--warmup-s", "0", "--rounds", "1", "--warmup-pass-s", "0",
                        "--precision-pairs", "0", "--out", str(probe)], env=subprocess_env(), capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    inline_faults = json.loads(probe.read_text())["inline"]["minflt_per_sample_mean"]
    r = subprocess.run([binary, "calibrate", trace, "--cpu-probe", str(probe), "--out", str(model)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    calibrated = json.loads(model.read_text())
    ratio = calibrated["cpu"]["inline_page_fault_ratio"]
    if q["measured"]:
        assert ratio["value"] == pytest.approx(inline_faults / q["faults_per_sample"]) and not ratio["assumed"]
    else:
        assert ratio["value"] == 1 and ratio["assumed"]
    # With the trace's churn measured (the probe counts each point's faults), the curves the model uses
    # are fitted with every point brought to the trace's page-fault level; the fits of the points as
    # measured are reported beside them.
    curve = calibrated["fit_quality"]["cpu"]["contention_curve"]
    level = curve["fault_level"]
    assert level["normalized"] == q["measured"]
    assert calibrated["cpu"]["busy_core_slowdown"]["value"] == pytest.approx(curve["throughput_fit"]["slowdown"])
    points = curve["points"]
    if q["measured"]:
        assert "slowdown" in level["as_measured_throughput_fit"] and "slowdown" in level["as_measured_thread_cpu_fit"]
        assert level["note"].startswith("the model's curves are fitted with each point's cost")
        assert level["reference_faults_per_sample"] == pytest.approx(q["faults_per_sample"])
        a, b = level["no_fault_cpu_s"], level["fault_cost_s"]
        for pt in points:
            want = (a + b * q["faults_per_sample"]) / (a + b * pt["minflt_per_sample"])
            assert pt["fault_level_factor"] == pytest.approx(want)
    else:
        assert all(pt["fault_level_factor"] == 1 for pt in points)
