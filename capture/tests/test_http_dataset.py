"""Reading a dataset over HTTP from a real server (Python's http.server on loopback): the bench's
reader returns the same bytes as from the files, and probe_http fits the store's latency and rate."""
import json
import os
import socket
import subprocess
import sys
import time

import pytest

from conftest import subprocess_env
from simreplay_capture import probe_http
from simreplay_capture.bench.dataset import Reader, load_manifest

HERE_DIR = os.path.dirname(os.path.abspath(__file__))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("httpdata")
    subprocess.run([sys.executable, "-m", "simreplay_capture.bench", "make-dataset", "--out", str(root), "--images",
                    "12", "--videos", "2", "--frames", "4", "--formats", "files,tar", "--seed", "0"],
                   env=subprocess_env(), check=True, capture_output=True)
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory",
                               str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    yield str(root), f"http://127.0.0.1:{port}"
    server.terminate()
    server.wait()


def test_reader_over_http_returns_the_files_bytes(served):
    root, url = served
    local, remote = load_manifest(root), load_manifest(url)
    assert remote == local
    for fmt in ("files", "tar"):
        a, b = Reader(root, fmt, local), Reader(url, fmt, remote)
        for i in range(len(local["samples"])):
            assert b.read(i) == a.read(i)
    with pytest.raises(ValueError, match="not read over HTTP"):
        Reader(url, "lmdb", dict(remote, formats={"lmdb": {}})).read(0)


def test_probe_http_fits_latency_and_bandwidth(served, tmp_path):
    _, url = served
    out = tmp_path / "probe-http.json"
    p = subprocess.run([sys.executable, "-m", "simreplay_capture.probe_http", url, "--out", str(out)],
                       env=subprocess_env(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    doc = json.load(open(out))
    assert doc["schema"] == "simreplay.probe-http/1" and doc["endpoint"] == {"kind": "http"}
    f = doc["fit"]
    assert f["latency_s"] > 0 and f["bytes_per_s"] > 1e6 and f["large_objects"] >= 2
    assert len(doc["points"]) == f["small_objects"] + f["large_objects"]
    # The aggregate sweep: one level per --streams value, each fetching every shard once.
    assert [lv["streams"] for lv in doc["aggregate"]] == [2, 4, 8]
    assert all(lv["bytes"] == doc["aggregate"][0]["bytes"] > 0 for lv in doc["aggregate"])
    assert f["aggregate_bytes_per_s"] >= f["bytes_per_s"]
    assert f["useful_concurrency"] in (1, 2, 4, 8)


def _simreplay() -> str:
    return os.environ.get("SIMREPLAY_BINARY", os.path.join(os.path.dirname(os.path.dirname(HERE_DIR)), "build",
                                                           "simreplay"))


def test_probe_storage_of_one_object_on_a_server_that_ignores_range(served, tmp_path):
    """Python's http.server answers a ranged GET with 200 and the whole object: `simreplay probe storage`
    of one shard still measures it, with whole-object GETs read for their first 4096 bytes, and says so."""
    root, url = served
    shard = sorted(os.listdir(os.path.join(root, "tar")))[0]
    size = os.path.getsize(os.path.join(root, "tar", shard))
    assert size >= 2 * probe_http.SMALL_BYTES
    out = tmp_path / "probe.json"
    p = subprocess.run([_simreplay(), "probe", "storage", f"{url}/tar/{shard}", "--quick", "--out", str(out)],
                       env=subprocess_env(), capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.load(open(out))
    assert doc["kind"] == "object" and doc["object_bytes"] == size
    assert doc["range_requests"]["honoured"] is False and "ignores Range" in doc["range_requests"]["note"]
    small = doc["points"][:doc["settings"]["small_requests"]]
    assert small and all(pt["bytes"] == probe_http.SMALL_BYTES for pt in small)
    f = doc["fit"]
    assert f["first_byte_s"] > 0 and f["per_connection_bytes_per_s"] > 0 and f["bytes_per_s"] > 0


def test_probe_storage_of_a_directory_listing_says_what_to_give(served, tmp_path):
    _, url = served
    out = tmp_path / "probe.json"
    p = subprocess.run([_simreplay(), "probe", "storage", f"{url}/files/", "--quick", "--out", str(out)],
                       env=subprocess_env(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and "directory listing" in p.stderr and "one large object" in p.stderr, p.stderr
    assert not out.exists()


def test_aggregate_fit_takes_the_best_rate_and_the_fewest_streams_near_it():
    sweep = [{"streams": 2, "bytes_per_s": 2.45e6}, {"streams": 4, "bytes_per_s": 2.5e6},
             {"streams": 8, "bytes_per_s": 2.49e6}]
    f = probe_http.aggregate_fit(2.2e6, sweep)
    assert f["aggregate_bytes_per_s"] == 2.5e6 and f["useful_concurrency"] == 2
    assert probe_http.aggregate_fit(3e6, sweep) == {"aggregate_bytes_per_s": 3e6, "useful_concurrency": 1}


def test_bad_streams_is_a_usage_error(served, tmp_path):
    _, url = served
    p = subprocess.run([sys.executable, "-m", "simreplay_capture.probe_http", url, "--out", str(tmp_path / "p.json"),
                        "--streams", "2,0"], env=subprocess_env(), capture_output=True, text=True)
    assert p.returncode == 2 and "--streams" in p.stderr and not (tmp_path / "p.json").exists()


def test_fit_recovers_a_line():
    pts = [(b, 2e-3 + b / 5e7) for b in (1000, 5000, 20000, 40000)] + [(3_000_000, 2e-3 + 3e6 / 5e7)] * 2
    f = probe_http.fit(pts, 100_000)
    assert abs(f["latency_s"] - 2e-3) < 1e-9 and abs(f["bytes_per_s"] - 5e7) < 1.0


def test_unreachable_store_is_one_line_and_exit_1(tmp_path):
    p = subprocess.run([sys.executable, "-m", "simreplay_capture.probe_http", f"http://127.0.0.1:{_free_port()}",
                        "--out", str(tmp_path / "p.json")], env=subprocess_env(), capture_output=True, text=True)
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "probe_http: http://127.0.0.1" in p.stderr
    assert not (tmp_path / "p.json").exists()


def test_s3_probe_unreachable_endpoint_bad_url_and_no_credentials(tmp_path):
    """probe_s3 (boto3): an endpoint nobody answers, a URL that names no object, and a signed request with
    no credentials anywhere: one line naming the URL (exit 1; a bad URL is a usage error, exit 2), nothing
    written. The measurement itself against nginx is test_object_server.py (root)."""
    pytest.importorskip("boto3")
    out = tmp_path / "p.json"
    endpoint = f"http://127.0.0.1:{_free_port()}"
    env = subprocess_env()
    env.update(HOME=str(tmp_path), AWS_CONFIG_FILE=str(tmp_path / "none"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"), AWS_EC2_METADATA_DISABLED="true")
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        env.pop(k, None)

    def probe(*args):
        return subprocess.run([sys.executable, "-m", "simreplay_capture.probe_s3", *args, "--out", str(out)],
                              env=env, capture_output=True, text=True, timeout=60)
    p = probe("s3://bucket/shard.tar", "--endpoint-url", endpoint, "--no-sign-request")
    assert p.returncode == 1 and p.stderr.count("\n") == 1, p.stderr
    assert p.stderr.startswith("probe_s3: s3://bucket/shard.tar: EndpointConnectionError")
    p = probe("s3://bucket/", "--endpoint-url", endpoint)
    assert p.returncode == 2 and "expected s3://BUCKET/KEY naming one object" in p.stderr
    p = probe("s3://bucket/shard.tar", "--endpoint-url", endpoint, "--region", "us-east-1")
    assert p.returncode == 1 and p.stderr.count("\n") == 1, p.stderr
    assert "NoCredentialsError" in p.stderr and "--no-sign-request" in p.stderr
    assert not out.exists() and not (tmp_path / "p.json.tmp").exists()

