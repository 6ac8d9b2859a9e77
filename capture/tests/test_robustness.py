"""Many workers, SIGKILL of the training process, worker crashes."""
import gzip
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

import simreplay_capture as sc
from conftest import subprocess_env

TRAIN = textwrap.dedent("""
    import os, sys, time, torch
    import simreplay_capture as sc
    from simreplay_capture.bench.pipeline import BenchDataset, multimodal_collate
    data, fmt, trace, workers, epochs, step_s = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
    ds = BenchDataset(data, fmt, image_size=32, frames=4)
    with sc.Recorder(trace, seed=0) as rec:
        loader = rec.wrap_loader(torch.utils.data.DataLoader(ds, batch_size=2, shuffle=True,
                                 num_workers=workers, collate_fn=multimodal_collate))
        for ep in range(epochs):
            for b in loader:
                with rec.step():
                    time.sleep(step_s)
                print("batch", flush=True)
    print("done", flush=True)
""")


def _children(pid):
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    st = f.read()
                if int(st[st.rfind(")") + 2:].split()[1]) == pid:
                    out.append(int(p))
            except OSError:
                pass
    return out


def test_eight_workers_no_deadlock_no_leak(dataset_dir, tmp_path):
    trace = str(tmp_path / "w8.jsonl.gz")
    code = TRAIN + textwrap.dedent("""
        import gc; gc.collect(); time.sleep(0.5)
        from simreplay_capture import procfs  # the one /proc reader: a process gone mid-listing is skipped
        kids = procfs.children(os.getpid())
        print('children', len(kids), 'fds', len(os.listdir('/proc/self/fd')), flush=True)
    """)
    # A private TMPDIR: the recorder's spool directory must be gone after close(), and other processes'
    # spools in the shared /tmp must not count.
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    env = subprocess_env()
    env["TMPDIR"] = str(private_tmp)
    p = subprocess.run([sys.executable, "-c", code, dataset_dir, "hdf5", trace, "8", "2", "0.0"],
                       env=env, capture_output=True, text=True, timeout=150)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "done" in p.stdout
    line = [l for l in p.stdout.splitlines() if l.startswith("children")][0]
    assert line.split()[1] == "0", line  # every worker process is gone
    assert int(line.split()[3]) < 40, line  # no file descriptors leaked (spool/part files closed)
    spool = [d for d in os.listdir(private_tmp) if d.startswith("simreplay-capture-")]
    assert spool == [], spool  # the spool directory was removed
    t = sc.read_trace(trace)
    assert t.complete
    assert {b["worker"] for b in t.of("batch")} == set(range(8))
    assert len(t.of("batch")) == 2 * 16
    workers = {r["worker"] for r in t.of("worker")}
    assert -1 in workers


def test_sigkill_leaves_readable_prefix(dataset_dir, tmp_path):
    trace = str(tmp_path / "killed.jsonl.gz")
    env = subprocess_env()
    env["TMPDIR"] = str(tmp_path)  # the killed run's spool directory stays in tmp_path
    p = subprocess.Popen([sys.executable, "-c", TRAIN, dataset_dir, "files", trace, "2", "50", "0.05"],
                         env=env, stdout=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        seen = 0
        deadline = time.time() + 60
        while seen < 12 and time.time() < deadline:
            if p.stdout.readline().startswith("batch"):
                seen += 1
        time.sleep(0.6)  # let at least two pump flushes happen
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
        try:
            os.killpg(p.pid, signal.SIGKILL)  # the orphaned workers
        except OSError:
            pass
    assert seen >= 12
    t = sc.read_trace(trace, warn=False)
    assert not t.complete  # no footer: killed
    assert t.manifest["loader"]["num_workers"] == 2
    assert len(t.of("batch")) >= 5
    assert len(t.of("sample")) >= 10
    assert len(t.of("step")) >= 5
    # and a tail cut in the middle of a gzip member still yields the same clean prefix
    raw = open(trace, "rb").read()
    cut = str(tmp_path / "cut.jsonl.gz")
    with open(cut, "wb") as f:
        f.write(raw[: len(raw) - 7])
    t2 = sc.read_trace(cut, warn=False)
    assert len(t2.records) <= len(t.records)
    assert any("truncated" in w for w in t2.warnings)


class Boom(torch.utils.data.Dataset):
    def __len__(self):
        return 40

    def __getitem__(self, i):
        if i == 17:
            raise ValueError("bad sample 17")
        return torch.full((4,), float(i))


class Killer(torch.utils.data.Dataset):
    def __len__(self):
        return 40

    def __getitem__(self, i):
        if i == 25:
            os.kill(os.getpid(), signal.SIGKILL)
        return torch.full((4,), float(i))


def test_worker_exception_recorded_and_propagates(tmp_path):
    trace = str(tmp_path / "crash.jsonl.gz")
    with sc.Recorder(trace) as rec:
        loader = rec.wrap_loader(torch.utils.data.DataLoader(Boom(), batch_size=4, num_workers=2))
        with pytest.raises(ValueError, match="bad sample 17"):
            for _ in loader:
                pass
    t = sc.read_trace(trace)
    crash = [e for e in t.of("event") if e["kind"] == "worker_crash"]
    assert len(crash) == 1
    assert crash[0]["worker"] == 0  # batch 4 (indices 16..19) -> worker 4 mod 2
    assert crash[0]["pid"] > 0 and "bad sample 17" in crash[0]["message"]
    err = [e for e in t.of("event") if e["kind"] == "sample_error"]
    assert err and "ValueError" in err[0]["message"]


def test_worker_killed_recorded_and_propagates(tmp_path):
    trace = str(tmp_path / "killed_worker.jsonl.gz")
    with sc.Recorder(trace) as rec:
        loader = rec.wrap_loader(torch.utils.data.DataLoader(Killer(), batch_size=4, num_workers=2))
        # torch raises RuntimeError("DataLoader worker ... exited unexpectedly"), or
        # ConnectionResetError / EOFError when the death interrupts receiving a batch's shared-memory fds
        with pytest.raises((RuntimeError, ConnectionResetError, EOFError)):
            for _ in loader:
                pass
    t = sc.read_trace(trace)
    crash = [e for e in t.of("event") if e["kind"] == "worker_crash"]
    assert len(crash) == 1 and crash[0]["pid"] > 0
    # the batches delivered before the loader noticed the death (SIGCHLD: timing-dependent) are kept
    assert 1 <= len(t.of("batch")) < 10
