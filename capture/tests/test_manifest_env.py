"""Locked-environment manifest (packages, container, ROCm, revisions), per-sample tokens in the trace,
and diff_manifest over real captures of a real DataLoader reading real files."""
import json
import os
import subprocess
import sys

import pytest
import torch

import simreplay_capture as sc
from simreplay_capture import manifest as mf
from simreplay_capture.diff_manifest import diff, load_manifest
from simreplay_capture.trace import read_trace

from conftest import subprocess_env


class TextWindows(torch.utils.data.Dataset):
    """Byte windows of real text files (this package's sources), variable length, noted as tokens."""

    def __init__(self, root):
        self.root = root
        self.files = sorted(os.path.join(root, f) for f in os.listdir(root) if f.endswith(".py"))[:6]

    def __len__(self):
        return 12

    def __getitem__(self, i):
        n = 16 + 8 * (i % 4)  # 16, 24, 32, 40 tokens
        with sc.stage("read"):
            data = open(self.files[i % len(self.files)], "rb").read(n)
        sc.note(read_bytes=len(data), tokens=len(data), format="text")
        return torch.tensor(list(data) + [0] * (40 - len(data)), dtype=torch.long)


def _capture(path, data_dir, **kw):
    ds = TextWindows(data_dir)
    with sc.Recorder(str(path), seed=0, data_path=data_dir, **kw) as rec:
        loader = rec.wrap_loader(torch.utils.data.DataLoader(ds, batch_size=4, num_workers=1))
        for b in loader:
            with rec.step():
                b.float().sum()
    return read_trace(str(path))


@pytest.fixture()
def data_dir(tmp_path):
    d = tmp_path / "text"
    d.mkdir()
    src = os.path.dirname(sc.__file__)
    for f in sorted(os.listdir(src)):
        if f.endswith(".py"):
            (d / f).write_bytes(open(os.path.join(src, f), "rb").read())
    return str(d)


def test_tokens_recorded_per_sample_and_manifest_is_locked(tmp_path, data_dir):
    t = _capture(tmp_path / "a.jsonl.gz", data_dir, model_revision="m@abc", dataset_revision="d@v1")
    samples = t.of("sample")
    assert len(samples) == 12
    # sample i read 16 + 8 * (i % 4) bytes of a file longer than 40 bytes: tokens == that
    assert {s["index"]: s["tokens"] for s in samples} == {i: 16 + 8 * (i % 4) for i in range(12)}
    assert all("tokens" not in s.get("notes", {}) for s in samples)
    m = t.manifest
    assert t.header["schema"] == "simreplay.trace/1"  # an optional field: v1 kept
    p = m["packages"]
    assert p["count"] == len(p["list"]) > 5 and any(x.startswith("torch==") for x in p["list"])
    assert p["list"] == sorted(p["list"]) and len(p["sha256"]) == 64
    assert m["versions"]["hip"] == getattr(torch.version, "hip", None)
    assert m["rocm"] is None or "hip" in m["rocm"]
    assert set(m["container"]) >= {"in_container", "runtime", "image_digest", "digest_source"}
    r = m["revisions"]
    assert r["model"] == "m@abc" and r["dataset"] == "d@v1"
    n_files = len([f for f in os.listdir(data_dir)])
    assert r["dataset_files"]["files"] == n_files
    assert r["dataset_files"]["bytes"] == sum(os.path.getsize(os.path.join(data_dir, f)) for f in os.listdir(data_dir))


def test_tokens_must_be_a_non_negative_int(tmp_path):
    # a float or negative "tokens" stays a free-form note, so the trace keeps validating
    class Odd(torch.utils.data.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            sc.note(tokens=[1.5, -3][i])
            return torch.zeros(2)
    with sc.Recorder(str(tmp_path / "o.jsonl"), hash_dataset_files=False) as rec:
        for b in rec.wrap_loader(torch.utils.data.DataLoader(Odd(), batch_size=2)):
            with rec.step():
                pass
    s = read_trace(str(tmp_path / "o.jsonl")).of("sample")
    assert sorted(x["notes"]["tokens"] for x in s) == [-3, 1.5] and all("tokens" not in x for x in s)


def test_dataset_file_list_hash_sees_added_and_resized_files(tmp_path, data_dir):
    a = mf.dataset_files(data_dir)
    assert mf.dataset_files(data_dir) == a
    open(os.path.join(data_dir, "new.txt"), "w").write("x")
    b = mf.dataset_files(data_dir)
    assert b["files"] == a["files"] + 1 and b["sha256"] != a["sha256"]
    open(os.path.join(data_dir, "new.txt"), "w").write("xy")
    c = mf.dataset_files(data_dir)
    assert c["bytes"] == b["bytes"] + 1 and c["sha256"] != b["sha256"]
    assert mf.dataset_files("http://store/x") is None and mf.dataset_files(None) is None


def test_container_digest_from_environment(monkeypatch):
    monkeypatch.setenv("SIMREPLAY_IMAGE_DIGEST", "sha256:" + "ab" * 32)
    c = mf.container()
    assert c["image_digest"] == "sha256:" + "ab" * 32 and c["digest_source"] == "SIMREPLAY_IMAGE_DIGEST"
    monkeypatch.delenv("SIMREPLAY_IMAGE_DIGEST")
    assert mf.container()["digest_source"] != "SIMREPLAY_IMAGE_DIGEST"


def test_rocm_from_rocm_path(tmp_path, monkeypatch):
    (tmp_path / ".info").mkdir()
    (tmp_path / ".info" / "version").write_text("6.1.2-119\n")
    monkeypatch.setenv("ROCM_PATH", str(tmp_path))
    r = mf.rocm()
    assert r["rocm_version"] == "6.1.2-119" and r["rocm_path"] == str(tmp_path)
    assert r["hip"] == getattr(torch.version, "hip", None)


def _dm(*args):
    return subprocess.run([sys.executable, "-m", "simreplay_capture.diff_manifest", *map(str, args)],
                          env=subprocess_env(), capture_output=True, text=True, timeout=120)


def test_diff_manifest_on_real_traces(tmp_path, data_dir):
    _capture(tmp_path / "a.jsonl.gz", data_dir, dataset_revision="v1")
    _capture(tmp_path / "b.jsonl.gz", data_dir, dataset_revision="v1")
    p = _dm(tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl.gz")
    # same process environment: only informational fields differ (cwd is the same, command too)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "MATTERS" not in p.stdout and p.stdout.strip().endswith("comparable")
    _capture(tmp_path / "c.jsonl.gz", data_dir, dataset_revision="v2")
    p = _dm(tmp_path / "a.jsonl.gz", tmp_path / "c.jsonl.gz")
    assert p.returncode == 1 and "MATTERS revisions.dataset: v1 -> v2" in p.stdout, p.stdout
    assert "NOT comparable" in p.stdout


def test_diff_manifest_names_changed_packages(tmp_path, data_dir):
    t = _capture(tmp_path / "a.jsonl.gz", data_dir)
    m = json.loads(json.dumps(t.manifest))
    m2 = json.loads(json.dumps(m))
    # another torch build: the version, the package list and its digest change together
    m2["versions"]["torch"] = "2.3.1"
    m2["packages"]["list"] = sorted([x for x in m["packages"]["list"] if not x.startswith("torch==")] + ["torch==2.3.1"])
    m2["packages"]["sha256"] = "0" * 64
    m2["command"] = ["other"]
    (tmp_path / "m1.json").write_text(json.dumps(m))
    (tmp_path / "m2.json").write_text(json.dumps({"schema": "simreplay.preflight/1", "manifest": m2}))
    p = _dm(tmp_path / "m1.json", tmp_path / "m2.json")
    assert p.returncode == 1
    assert "MATTERS versions.torch:" in p.stdout and "-> 2.3.1" in p.stdout
    assert "MATTERS packages.torch:" in p.stdout and "info    command" in p.stdout
    res = diff(load_manifest(str(tmp_path / "m1.json")), load_manifest(str(tmp_path / "m2.json")))
    assert res["matters_count"] == 3 and res["info_count"] == 1  # versions.torch, sha256, packages.torch


def test_diff_manifest_older_manifest_is_unknown_not_different(tmp_path, data_dir):
    t = _capture(tmp_path / "a.jsonl.gz", data_dir)
    old = {k: v for k, v in t.manifest.items() if k not in ("packages", "container", "rocm", "revisions")}
    (tmp_path / "old.json").write_text(json.dumps(old))
    p = _dm(tmp_path / "a.jsonl.gz", tmp_path / "old.json")
    assert p.returncode == 0 and "unknown packages.sha256" in p.stdout, p.stdout


def test_diff_manifest_bad_input(tmp_path):
    (tmp_path / "bad.json").write_text("{not json")
    p = _dm(tmp_path / "bad.json", tmp_path / "bad.json")
    assert p.returncode == 3 and p.stderr.startswith(f"{tmp_path / 'bad.json'}: expected JSON")
    assert _dm(tmp_path / "bad.json").returncode == 2


def test_diff_manifest_scopes():
    # runs: everything that matters; cases: not the data revisions; software: not the hardware either
    a = {"versions": {"torch": "2.4.1"}, "revisions": {"dataset": "d1"}, "hardware": {"cores": 4}}
    b = {"versions": {"torch": "2.4.1"}, "revisions": {"dataset": "d2"}, "hardware": {"cores": 8}}
    assert diff(a, b)["matters_count"] == 2
    cases = diff(a, b, "cases")
    assert cases["matters_count"] == 1
    assert [d["field"] for d in cases["differences"] if d["matters"]] == ["hardware.cores"]
    assert diff(a, b, "software")["matters"] is False
    b["versions"]["torch"] = "2.5.0"
    assert diff(a, b, "software")["matters_count"] == 1
