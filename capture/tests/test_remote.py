"""Remote loaders against real HTTP servers on loopback: WebDataset-style streaming of tar shards
(every sample once, shard assignment over workers, the request notes in the capture), and the bad
cases -- a missing shard, a server that closes the connection mid-body -- as clear errors, with the
capture keeping what it recorded."""
import gzip
import io
import json
import os
import socket
import subprocess
import sys
import tarfile
import threading
import time

import pytest
import torch

from conftest import subprocess_env
from simreplay_capture import probe_http
from simreplay_capture.remote import RemoteReadError, TarShardStream, error_line, fetch, shard_assignment


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(directory: str):
    port = _free_port()
    p = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory",
                          directory], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    return p, f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """Three tar shards of 5 samples each (KEY.txt, KEY.bin), served over HTTP."""
    root = tmp_path_factory.mktemp("shards")
    for s in range(3):
        with tarfile.open(root / f"shard-{s}.tar", "w") as tf:
            for k in range(5):
                key = f"{s:02d}{k:02d}"
                for ext, data in (("txt", key.encode()), ("bin", bytes(100 * (k + 1)))):
                    ti = tarfile.TarInfo(f"{key}.{ext}")
                    ti.size = len(data)
                    tf.addfile(ti, io.BytesIO(data))
    server, url = _serve(str(root))
    yield root, url
    server.terminate()
    server.wait()


def _decode(key, members):
    return {"key": key, "bytes": len(members["bin"]), "txt": members["txt"].decode()}


def test_shard_assignment_round_robin_over_readers():
    assert shard_assignment(5, 2) == [[0, 2, 4], [1, 3]]
    assert shard_assignment(2, 4) == [[0], [1], [], []]


@pytest.mark.parametrize("workers", [0, 2, 4])
def test_stream_delivers_every_sample_once(shards, workers):
    _, url = shards
    ds = TarShardStream([f"{url}/shard-{s}.tar" for s in range(3)], _decode, length=15)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
    got = list(loader)  # at 4 workers, one has no shard
    assert sorted(g["key"] for g in got) == sorted(f"{s:02d}{k:02d}" for s in range(3) for k in range(5))
    assert all(g["txt"] == g["key"] for g in got)


def test_a_reader_without_a_shard_warns(shards, monkeypatch):
    _, url = shards
    monkeypatch.setenv("RANK", "3")  # reader 3 of 4 (4 ranks, no workers): 3 shards go to readers 0-2
    monkeypatch.setenv("WORLD_SIZE", "4")
    ds = TarShardStream([f"{url}/shard-{s}.tar" for s in range(3)], _decode)
    with pytest.warns(RuntimeWarning, match="3 shards for 4 readers .*: reader 3 gets no data"):
        assert list(ds) == []


def test_capture_records_requests_and_keeps_what_it_recorded_before_a_missing_shard(shards, tmp_path):
    import simreplay_capture as sc
    root, url = shards
    trace = tmp_path / "t.jsonl.gz"
    ds = TarShardStream([f"{url}/shard-0.tar", f"{url}/shard-missing.tar"], _decode)
    with pytest.raises(RemoteReadError, match=r"shard-missing.tar: HTTP 404 .*missing shard"):
        with sc.Recorder(str(trace), seed=0) as rec:
            loader = rec.wrap_loader(torch.utils.data.DataLoader(rec.wrap_dataset(ds), batch_size=None,
                                                                 num_workers=0))
            for _ in loader:
                with rec.step():
                    pass
    recs = [json.loads(line) for line in gzip.open(trace, "rt")]
    samples = [r for r in recs if r.get("type") == "sample"]
    assert len(samples) == 5  # the whole first shard, recorded before the error
    notes = [s["notes"] for s in samples]
    assert notes[0]["http_requests"] == 1 and notes[0]["http_connections"] == 1 and notes[0]["http_first_byte_s"] > 0
    assert all(n["shard"] == "shard-0.tar" for n in notes) and sum(n["http_requests"] for n in notes) == 1
    assert [s["notes"]["http_bytes"] for s in samples] == [4 + 100 * (k + 1) for k in range(5)]
    # bytes per request: the shard's whole GET, noted on its first sample
    assert [n["http_request_bytes"] for n in notes] == [os.path.getsize(root / "shard-0.tar")] + [0] * 4
    assert any("shard-missing.tar" in json.dumps(r) for r in recs if r.get("type") != "sample")


class _CutServer(threading.Thread):
    """Answers every request with a 200 promising the whole of `body`, sends its first 1000 bytes and
    closes the connection."""

    def __init__(self, body: bytes) -> None:
        super().__init__(daemon=True)
        self.body = body
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/obj"

    def run(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            c.recv(65536)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(self.body) + self.body[:1000])
            c.close()


def test_a_body_cut_short_is_an_error_naming_the_url():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:  # a shard whose first member is cut off mid-body
        ti = tarfile.TarInfo("0000.bin")
        ti.size = 50000
        tf.addfile(ti, io.BytesIO(bytes(50000)))
    srv = _CutServer(buf.getvalue())
    srv.start()
    with pytest.raises(RemoteReadError, match=r"/obj: the server closed the connection after 1000 bytes"):
        fetch(srv.url)
    with pytest.raises(RemoteReadError, match=r"/obj: .*closed the connection"):
        list(TarShardStream([srv.url], _decode))
    with pytest.raises(probe_http.RequestError, match=r"/obj: the server closed the connection after 1000 of 61440 "):
        probe_http.timed_request(srv.url)
    srv.sock.close()


def test_bench_streams_its_tar_shards(dataset_dir, tmp_path):
    server, url = _serve(dataset_dir)
    try:
        trace = tmp_path / "stream.jsonl.gz"
        p = subprocess.run([sys.executable, "-m", "simreplay_capture.bench", "run", "--data", url, "--stream",
                            "--workers", "2", "--batch-size", "8", "--steps", "4", "--warmup-steps", "1",
                            "--image-size", "64", "--frames", "4", "--step-time-s", "0", "--trace", str(trace)],
                           env=subprocess_env(), capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        assert "1 shards for 2 readers" in p.stderr  # make-dataset's 32 samples fit one shard
        samples = [json.loads(line) for line in gzip.open(trace, "rt")]
        samples = [r for r in samples if r.get("type") == "sample"]
        assert len(samples) == 32 and all(s["notes"]["shard"] == "shard-000000.tar" for s in samples)
        assert sum(s["notes"]["http_bytes"] for s in samples) == sum(s["read_bytes"] for s in samples)
    finally:
        server.terminate()
        server.wait()


def test_cache_directory_fills_on_miss_and_serves_hits(shards, tmp_path):
    from simreplay_capture import context as sc_ctx
    root, url = shards
    cache = tmp_path / "nvme"
    notes = []
    for _ in range(2):
        ctx = sc_ctx.SampleContext()
        prev = sc_ctx.set_current(ctx)
        try:
            data = fetch(f"{url}/shard-1.tar", (512, 4), cache_dir=str(cache))
        finally:
            sc_ctx.set_current(prev)
        notes.append(ctx.notes)
        assert data == b"0100"  # the first member's bytes
    assert notes[0]["http_requests"] == 1 and "http_cache_hits" not in notes[0]
    # http.server ignores Range: the request moved the whole shard, the sample used 4 bytes of it
    assert notes[0]["http_bytes"] == 4 and notes[0]["http_request_bytes"] == os.path.getsize(root / "shard-1.tar")
    assert notes[1] == {"http_requests": 0, "http_bytes": 0, "http_request_bytes": 0, "http_first_byte_s": 0.0,
                        "http_connections": 0, "http_cache_hits": 1}
    assert len(os.listdir(cache)) == 1 and not [f for f in os.listdir(cache) if f.endswith(".tmp")]


def test_error_line_is_the_message_also_from_a_dataloader_worker(shards):
    _, url = shards

    class Missing(torch.utils.data.Dataset):
        def __len__(self):
            return 1

        def __getitem__(self, i):
            return fetch(f"{url}/no-such-shard.tar")
    with pytest.raises(RemoteReadError) as info:
        list(torch.utils.data.DataLoader(Missing(), batch_size=None, num_workers=1))
    assert "Traceback" in str(info.value)  # the worker's traceback is the re-raised message
    assert error_line(info.value) == f"{url}/no-such-shard.tar: HTTP 404 File not found (missing shard?)"
    assert error_line(RemoteReadError("x: y")) == "x: y"
