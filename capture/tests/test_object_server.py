"""The real object server (validation/remote/object_server.py: nginx in a network namespace) measured by
`simreplay probe storage http://...` and `s3://...` (boto3): first-byte latency, per-connection rate and
the connection limit come out as configured; and the remote loaders' bad input against it (a missing
shard, a body cut short, an unreachable server). Needs root and nginx (skipped otherwise)."""
import gzip
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import subprocess_env

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "validation", "remote"))

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("nginx", path="/usr/sbin:/usr/bin"),
                                reason="needs root (network namespaces) and nginx")


def test_probe_measures_the_servers_first_byte_rate_and_connection_limit(tmp_path):
    from object_server import ObjectServer
    data = tmp_path / "bucket"
    data.mkdir()
    (data / "shard.tar").write_bytes(os.urandom(1_000_000))
    binary = os.environ.get("SIMREPLAY_BINARY", os.path.join(REPO, "build", "simreplay"))
    out = tmp_path / "probe.json"
    with ObjectServer(str(data), str(tmp_path / "srv"), first_byte_ms=20, conn_rate_bytes_per_s=2_000_000,
                      max_conns=4) as srv:
        p = srv.run_client([binary, "probe", "storage", f"{srv.url}/shard.tar", "--quick", "--out", str(out)],
                           env=subprocess_env(), capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        missing = srv.run_client([binary, "probe", "storage", f"{srv.url}/no-such-shard.tar", "--quick", "--out",
                                  str(tmp_path / "missing.json")], env=subprocess_env(), capture_output=True,
                                 text=True, timeout=60)
        log = srv.access_log()
    doc = json.load(open(out))
    f = doc["fit"]
    assert doc["kind"] == "object" and doc["object_bytes"] == 1_000_000
    # 20 ms in the server is the floor the host guarantees; what it adds on top depends on its load (up to
    # 40 ms seen on a busy 2-core VM), so the ceiling only separates the first byte from the transfer: a
    # probe that timed the 1 MB body at 2 MB/s would report 0.5 s.
    assert 0.019 <= f["first_byte_s"] <= 0.25
    assert 1.5e6 <= f["per_connection_bytes_per_s"] <= 2.6e6  # nginx limit_rate 2 MB/s
    # 8 at once: 503s. At exactly 4, nginx sometimes still counts a finished request when the same client's
    # next one arrives (the slot is freed when the request is finalised), so the level below may be 2.
    assert f["connection_limit"] in (2, 4)
    eight = next(lv for lv in doc["connections"] if lv["connections"] == 8)
    assert eight["rejected"] > 0 and "503" in eight["errors"][0]
    tier = f["object_store_tier"]
    assert tier["kind"] == "object_store" and tier["max_streams"] == f["connection_limit"]
    assert {r["status"] for r in log} >= {200, 206, 503}
    # a missing object: one line naming it, exit 1, nothing written
    assert missing.returncode == 1 and "no-such-shard.tar: HTTP 404" in missing.stderr
    assert not (tmp_path / "missing.json").exists()
    assert not [n for n in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
                if n.startswith(f"srn{os.getpid()}")]  # torn down


def test_s3_probe_through_boto3_measures_the_same_server(tmp_path):
    """`simreplay probe storage s3://...`: real boto3 get_object calls (unsigned, path-style /BUCKET/KEY,
    retries off) against the same nginx: the same first byte, per-connection rate and 503s as the HTTP
    probe sees, each request on its own connection; a missing key and a body cut short are one line."""
    pytest.importorskip("boto3")
    from object_server import ObjectServer
    data = tmp_path / "root"
    (data / "bucket").mkdir(parents=True)
    (data / "bucket" / "shard.tar").write_bytes(os.urandom(1_000_000))
    binary = os.environ.get("SIMREPLAY_BINARY", os.path.join(REPO, "build", "simreplay"))
    out = tmp_path / "probe-s3.json"

    def probe(url, path):
        return srv.run_client([binary, "probe", "storage", url, "--endpoint-url", srv.url, "--no-sign-request",
                               "--quick", "--out", str(path)], env=subprocess_env(), capture_output=True, text=True,
                              timeout=120)

    with ObjectServer(str(data), str(tmp_path / "srv"), first_byte_ms=20, conn_rate_bytes_per_s=2_000_000,
                      max_conns=4) as srv:
        p = probe("s3://bucket/shard.tar", out)
        assert p.returncode == 0, p.stdout + p.stderr
        log = srv.access_log()
        missing = probe("s3://bucket/no-such-key.tar", tmp_path / "missing.json")
        cut = probe("s3://_cut/1000/bucket/shard.tar", tmp_path / "cut.json")
        http_cut = srv.run_client([binary, "probe", "storage", f"{srv.url}/_cut/1000/bucket/shard.tar", "--quick",
                                   "--out", str(tmp_path / "http-cut.json")], env=subprocess_env(),
                                  capture_output=True, text=True, timeout=60)
    doc = json.load(open(out))
    f = doc["fit"]
    assert doc["schema"] == "simreplay.probe-http/1" and doc["kind"] == "object"
    assert doc["endpoint"]["kind"] == "s3" and doc["endpoint"]["client"] == "boto3"
    assert doc["endpoint"]["signed"] is False and doc["endpoint"]["retries"] == 0
    assert doc["url"] == "s3://bucket/shard.tar" and doc["object_bytes"] == 1_000_000
    assert 0.019 <= f["first_byte_s"] <= 0.25  # 20 ms in the server, plus boto3's own work (as above)
    assert doc["first_byte"]["connect_median_s"] is None and doc["first_byte"]["client_median_s"] > 0
    assert 1.5e6 <= f["per_connection_bytes_per_s"] <= 2.6e6
    assert f["connection_limit"] in (2, 4)  # as in the HTTP probe above (a limiter strict at its limit)
    eight = next(lv for lv in doc["connections"] if lv["connections"] == 8)
    assert eight["rejected"] > 0 and "HTTP 503" in eight["errors"][0]  # counted, not retried
    assert f["object_store_tier"]["max_streams"] == f["connection_limit"]
    # What nginx saw: path-style GETs of /BUCKET/KEY, ranged for the first-byte requests, one per connection.
    assert log and {r["uri"] for r in log} == {"/bucket/shard.tar"} and {r["method"] for r in log} == {"GET"}
    assert sum(1 for r in log if r["range"].startswith("bytes=")) >= 11  # the 1-byte head + 10 small ranges
    assert all(r["connection_requests"] == 1 for r in log)
    assert len({r["connection"] for r in log}) == len(log)
    assert len(log) == 1 + 10 + 1 + 2 * (1 + 2 + 4 + 8)  # head, small, large, the sweep: no retries
    # A missing key and a body cut short: one line naming the object, exit 1, nothing written.
    assert missing.returncode == 1 and "probe_s3: s3://bucket/no-such-key.tar: HTTP 404" in missing.stderr
    assert cut.returncode == 1 and ("probe_s3: s3://_cut/1000/bucket/shard.tar: the server closed the connection "
                                    "after 1000 of 1000000 bytes") in cut.stderr
    assert http_cut.returncode == 1 and (f"probe_http: {srv.url}/_cut/1000/bucket/shard.tar: the server closed the "
                                         "connection after 1000 of 1000000 bytes") in http_cut.stderr
    assert not [f for f in os.listdir(tmp_path) if f.endswith((".json", ".tmp")) and f != "probe-s3.json"]
    for r in (missing, cut):
        assert len([line for line in r.stderr.splitlines() if line.startswith("probe_s3:")]) == 1
        assert "Traceback" not in r.stderr


# Runs in the client namespace: the remote loaders under capture, each case ending in an error; prints one
# JSON line per case: the error's one line, and what the trace kept.
_BAD_INPUT_SCRIPT = r'''
import gzip, json, sys, torch
import simreplay_capture as sc
from simreplay_capture.remote import RemoteReadError, TarShardStream, error_line, fetch

base, out = sys.argv[1], sys.argv[2]

def decode(key, members):
    return {"key": key, "bytes": len(members["bin"])}

class PerSample(torch.utils.data.Dataset):
    """Sample i: a ranged GET of 64 bytes of urls[i]."""
    def __init__(self, urls):
        self.urls = urls
    def __len__(self):
        return len(self.urls)
    def __getitem__(self, i):
        return len(fetch(self.urls[i], (0, 64)))

def captured(name, ds, workers):
    trace = f"{out}/{name}.jsonl.gz"
    err = None
    try:
        with sc.Recorder(trace, seed=0) as rec:
            loader = rec.wrap_loader(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers))
            for _ in loader:
                with rec.step():
                    pass
    except OSError as e:
        err = error_line(e)
    recs = [json.loads(line) for line in gzip.open(trace, "rt")]
    samples = [r for r in recs if r.get("type") == "sample"]
    errors = [r["message"] for r in recs if r.get("kind") == "sample_error"]
    print(json.dumps({"case": name, "error": err, "samples": len(samples), "footer": recs[-1]["type"],
                      "notes": [s["notes"] for s in samples], "sample_errors": errors}), flush=True)

shards = [f"{base}/shards/shard-{s}.tar" for s in range(2)]
captured("missing_shard", TarShardStream(shards + [f"{base}/shards/shard-missing.tar"], decode), 1)
captured("stream_cut", TarShardStream([f"{base}/_cut/12000/shards/shard-0.tar"], decode), 0)
captured("get_cut", PerSample(shards + [f"{base}/_cut/30/shards/shard-1.tar"]), 0)
captured("unreachable", PerSample(shards + [base.rsplit(":", 1)[0] + ":1/shards/shard-0.tar"]), 2)
'''


def test_remote_loaders_fail_clearly_and_the_capture_keeps_what_it_recorded(tmp_path):
    """Bad input against the real nginx: a shard list with a missing shard, a body cut short mid-stream and
    mid-GET, an unreachable server: one line naming the URL, and a complete trace (footer) holding every
    sample recorded before the error, with its requests' notes."""
    import io
    import tarfile
    from object_server import ObjectServer
    root = tmp_path / "root"
    (root / "shards").mkdir(parents=True)
    sizes = {}
    for s in range(2):  # 2 shards x 5 samples (KEY.txt, KEY.bin), as WebDataset writes them
        path = root / "shards" / f"shard-{s}.tar"
        with tarfile.open(path, "w") as tf:
            for k in range(5):
                for ext, blob in (("txt", b"%02d%02d" % (s, k)), ("bin", bytes(1000 * (k + 1)))):
                    ti = tarfile.TarInfo(f"{s:02d}{k:02d}.{ext}")
                    ti.size = len(blob)
                    tf.addfile(ti, io.BytesIO(blob))
        sizes[s] = path.stat().st_size
    script = tmp_path / "bad_input.py"
    script.write_text(_BAD_INPUT_SCRIPT)
    (tmp_path / "traces").mkdir()
    with ObjectServer(str(root), str(tmp_path / "srv"), first_byte_ms=5) as srv:
        p = srv.run_client([sys.executable, str(script), srv.url, str(tmp_path / "traces")], env=subprocess_env(),
                           capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stdout + p.stderr
    cases = {c["case"]: c for c in map(json.loads, [ln for ln in p.stdout.splitlines() if ln.startswith("{")])}
    assert set(cases) == {"missing_shard", "stream_cut", "get_cut", "unreachable"}
    for c in cases.values():
        assert c["footer"] == "footer" and "\n" not in c["error"]  # a complete trace; a one-line error
    m = cases["missing_shard"]  # one worker: both shards' 10 samples, then the 404
    assert m["error"] == "http://10.213.0.250:8000/shards/shard-missing.tar: HTTP 404 Not Found (missing shard?)"
    assert m["samples"] == 10 and any("shard-missing.tar: HTTP 404" in e for e in m["sample_errors"])
    firsts = [n for n in m["notes"] if n["http_requests"] == 1]
    assert sorted(n["http_request_bytes"] for n in firsts) == sorted(sizes.values())  # bytes per request
    assert all(n["http_connections"] == 1 and n["http_first_byte_s"] >= 0.005 for n in firsts)
    assert sum(n["http_bytes"] for n in m["notes"]) == 2 * sum(4 + 1000 * (k + 1) for k in range(5))
    # 12000 of a 30720-byte shard: tarfile reads the stream in 10240-byte records, so the samples wholly in
    # the first record (the first two) are delivered, and the error comes on reading the second record
    s = cases["stream_cut"]
    assert s["error"].startswith("http://10.213.0.250:8000/_cut/12000/shards/shard-0.tar: the server closed the "
                                 "connection after 12000 bytes")
    assert 1 <= s["samples"] < 5 and s["sample_errors"]
    g = cases["get_cut"]  # a 64-byte range of an object cut after 30 bytes: the third sample
    assert g["error"].startswith("http://10.213.0.250:8000/_cut/30/shards/shard-1.tar: the server closed the "
                                 "connection after 30 bytes")
    assert g["samples"] == 2 and [n["http_request_bytes"] for n in g["notes"]] == [64, 64]
    assert all(n["http_requests"] == 1 and n["http_connections"] == 1 for n in g["notes"])
    u = cases["unreachable"]  # two workers: the refused connection surfaces from a worker, still one line
    assert u["error"].startswith("http://10.213.0.250:1/shards/shard-0.tar: ConnectionRefusedError")
    assert u["samples"] <= 2 and any("ConnectionRefusedError" in e for e in u["sample_errors"])


def test_bench_over_http_with_a_missing_file_is_one_line_and_keeps_its_trace(tmp_path, dataset_dir):
    """`bench run --data http://...` (per-sample GETs, one worker, in order) with one sample's file gone:
    `run: URL: HTTP 404 ...` on one line, exit 1, no summary, and the trace closed with the samples before it."""
    from object_server import ObjectServer
    data = tmp_path / "data"
    shutil.copytree(dataset_dir, data, ignore=shutil.ignore_patterns("lmdb", "hdf5"))
    man = json.load(open(data / "dataset.json"))
    gone = man["samples"][10]
    os.remove(data / "files" / f"{gone['key']}.{gone['ext']}")
    trace = tmp_path / "t.jsonl.gz"
    with ObjectServer(str(data), str(tmp_path / "srv"), first_byte_ms=2) as srv:
        p = srv.run_client([sys.executable, "-m", "simreplay_capture.bench", "run", "--data", srv.url, "--workers",
                            "1", "--batch-size", "4", "--steps", "6", "--warmup-steps", "0", "--no-shuffle",
                            "--image-size", "32", "--frames", "2", "--step-time-s", "0", "--trace", str(trace),
                            "--summary-json", str(tmp_path / "summary.json")],
                           env=subprocess_env(), capture_output=True, text=True, timeout=300)
    url = f"{srv.url}/files/{gone['key']}.{gone['ext']}"
    assert p.returncode == 1, p.stdout + p.stderr
    assert f"run: {url}: HTTP 404 Not Found (missing shard?)\n" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "summary.json").exists()
    recs = [json.loads(line) for line in gzip.open(trace, "rt")]
    samples = [r for r in recs if r.get("type") == "sample"]
    # batches 0-1 delivered; the one worker may have read on past the failed batch 2 before shutting down
    assert recs[-1]["type"] == "footer" and len(samples) >= 8
    assert {s["index"] for s in samples} >= set(range(8)) and 10 not in {s["index"] for s in samples}
    assert all(s["notes"]["http_requests"] == 1 and s["notes"]["http_bytes"] == s["read_bytes"] for s in samples)
    assert any(r.get("kind") == "sample_error" and url in r["message"] for r in recs)
