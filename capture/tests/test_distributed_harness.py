"""The network-namespace harness (validation/netns/netns_run.py): real namespaces, real torchrun, teardown.

Root-only tests are skipped without root; the not-root message is checked by dropping privileges.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import subprocess_env

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HARNESS = os.path.join(REPO, "validation", "netns", "netns_run.py")
root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and iproute2")


def _namespaces(tag: str):
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(f"srn{tag}")]


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root to drop to nobody")
def test_not_root_says_so_and_changes_nothing(tmp_path):
    # nobody may not be able to read the checkout (a root clone under /root is mode 700), so it runs a
    # copy of the harness (it imports only the standard library) from a place it can read, and writes
    # nowhere it could not.
    readable = tempfile.mkdtemp(prefix="srn-nobody-")
    try:
        harness = os.path.join(readable, "netns_run.py")
        shutil.copyfile(HARNESS, harness)
        os.chmod(readable, 0o755)
        os.chmod(harness, 0o644)
        p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3",
                            harness, "--nodes", "2", "--out", os.path.join(readable, "o"), "--", "x.py"],
                           capture_output=True, text=True, cwd=readable)
    finally:
        shutil.rmtree(readable, ignore_errors=True)
    assert p.returncode == 77
    assert "needs root" in p.stderr and "nothing was changed" in p.stderr


@root
def test_two_nodes_shaped_all_reduce_and_teardown(tmp_path):
    # Each rank checks its identity and address, then all-reduces 2 MiB over the 100 Mbit/s link:
    # ring time >= 2(n-1)/n x S / rate = 1 x 2 MiB x 8 / 1e8 = 0.168 s (the shaping is real).
    script = tmp_path / "job.py"
    script.write_text(r"""
import os, time, json, torch, torch.distributed as dist
dist.init_process_group("gloo")
r = dist.get_rank()
t = torch.ones(1 << 19)
dist.all_reduce(t)
t0 = time.perf_counter(); dist.all_reduce(t); dt = time.perf_counter() - t0
assert float(t[0]) == 4.0
from simreplay_capture.distributed import interface_toward
iface = interface_toward(os.environ["MASTER_ADDR"])
json.dump({"rank": r, "world": dist.get_world_size(), "dt": dt, "iface": iface, "node": os.environ["SIMREPLAY_NODE"]},
          open(os.path.join(os.environ["OUT"], f"r{r}.json"), "w"))
dist.destroy_process_group()
""")
    out = tmp_path / "out"
    env = dict(subprocess_env(), OUT=str(out))
    p = subprocess.run([sys.executable, HARNESS, "--nodes", "2", "--rate", "100mbit", "--out", str(out),
                        "--port", "29611", "--timeout-s", "120", "--", str(script)], env=env, capture_output=True,
                       text=True, timeout=180)
    assert p.returncode == 0, p.stderr + open(out / "node0.log").read()[-2000:]
    h = json.load(open(out / "harness.json"))
    assert h["exit_codes"] == [0, 0] and h["topology"]["addresses"] == ["10.213.0.1", "10.213.0.2"]
    for r in range(2):
        d = json.load(open(out / f"r{r}.json"))
        assert d["world"] == 2 and d["node"] == f"node{r}"
        assert d["iface"]["name"] == "eth0" and d["iface"]["address"] == f"10.213.0.{r + 1}"
        assert d["iface"]["tc_rate_bits_per_s"] == 100_000_000
        assert d["dt"] >= 0.168
    left = set(_namespaces("")) & set(h["topology"]["node_namespaces"] + [h["topology"]["switch_namespace"]])
    assert not left


@root
def test_sigint_tears_everything_down(tmp_path):
    script = tmp_path / "sleep.py"
    script.write_text("import time\ntime.sleep(600)\n")
    out = tmp_path / "out"
    p = subprocess.Popen([sys.executable, HARNESS, "--nodes", "2", "--out", str(out), "--port", "29612", "--",
                          str(script)], env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    tag = str(p.pid)
    for _ in range(200):  # wait until both node namespaces exist and the jobs started
        if len(_namespaces(tag)) == 3 and (out / "node1.log").exists():
            break
        time.sleep(0.1)
    assert len(_namespaces(tag)) == 3
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    p.wait(timeout=60)
    assert p.returncode == 130
    assert _namespaces(tag) == []
    h = json.load(open(out / "harness.json"))
    assert h["interrupted_by_signal"] == int(signal.SIGINT)


@root
def test_storage_server_namespace_serves_over_its_shaped_link(tmp_path):
    # --server-dir: a storage-server namespace on the bridge serves the directory over HTTP; a 1 MB
    # object through its 20 Mbit/s link takes >= 1e6 x 8 / 2e7 = 0.4 s, and the namespace is removed.
    data = tmp_path / "data"
    data.mkdir()
    (data / "blob").write_bytes(os.urandom(1_000_000))
    script = tmp_path / "get.py"
    script.write_text(r"""
import json, os, time
from simreplay_capture.bench.dataset import http_get
t0 = time.perf_counter(); body = http_get("http://10.213.0.250:8000/blob"); dt = time.perf_counter() - t0
part = http_get("http://10.213.0.250:8000/blob", (1000, 16))
json.dump({"bytes": len(body), "dt": dt, "part": part.hex()}, open(os.path.join(os.environ["OUT"], "get.json"), "w"))
""")
    out = tmp_path / "out"
    env = dict(subprocess_env(), OUT=str(out))
    p = subprocess.run([sys.executable, HARNESS, "--nodes", "1", "--rate", "1gbit", "--server-dir", str(data),
                        "--server-rate", "20mbit", "--out", str(out), "--port", "29613", "--timeout-s", "120", "--",
                        str(script)], env=env, capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr + open(out / "node0.log").read()[-2000:]
    got = json.load(open(out / "get.json"))
    assert got["bytes"] == 1_000_000 and got["dt"] >= 0.4
    assert bytes.fromhex(got["part"]) == (data / "blob").read_bytes()[1000:1016]  # a range, whole object sent
    h = json.load(open(out / "harness.json"))
    assert h["topology"]["server"]["rate_bits_per_s"] == 20_000_000
    assert h["topology"]["server"]["namespace"] not in _namespaces("")
