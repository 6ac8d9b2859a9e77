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
