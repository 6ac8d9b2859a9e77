"""Multi-rank capture under torchrun: collective records, compute/communication split, clock alignment.

The end-to-end test runs this file as the rank program under a real `torchrun --nproc_per_node 2`
with gloo (see _rank_program at the bottom).
"""
import json
import os
import subprocess
import sys

import pytest

import simreplay_capture as sc
from conftest import subprocess_env
from simreplay_capture import distributed as d


def test_best_offset_recovers_a_known_skew_within_half_the_round_trip():
    # Peer clock = ours + 5 ms. Round k: request takes q_k, peer reads at once, reply takes p_k.
    # Round 1: q=300, p=100 (asymmetric): t_peer = 1000+300+5e6; midpoint 1000+200 -> estimate 5e6+100.
    # Round 2: q=50, p=70 (rtt 120, the smallest): estimate = 5e6 + (50-70)/2 = 5e6 - 10.
    samples = [(1000, 1000 + 300 + 5_000_000, 1000 + 400), (9000, 9000 + 50 + 5_000_000, 9000 + 120)]
    off, rtt = d.best_offset(samples)
    assert rtt == 120
    assert off == 5_000_000 - 10
    assert abs(off - 5_000_000) <= rtt // 2


def test_align_clocks_with_a_simulated_peer():
    # Rank 1's clock runs 7 ms ahead of rank 0's; rank 0's t0 is 100 ns (its clock), rank 1's t0 is
    # 7_000_000 + 500 (its clock) = 500 on rank 0's clock. So rank 1's trace time t maps to rank 0's
    # trace time t + 500 - 100 = t + 400. The transport delays each message by 10 ns.
    import collections
    now = [0]
    boxes = collections.defaultdict(collections.deque)

    def clock0():
        now[0] += 10
        return now[0]

    def clock1():
        now[0] += 10
        return now[0] + 7_000_000

    # Run rank 1 as a generator interleaved with rank 0 by hand: rank 1 answers every ping at once.
    def send0(values, peer):
        boxes[(0, peer)].append(values)
        if len(values) == 1 or values[1:] == [0, 0]:
            boxes[(1, 0)].append([clock1()])

    def recv0(peer):
        return boxes[(1, 0)].popleft()
    d.align_clocks(0, 2, 100, send0, recv0, clock=clock0, rounds=4)
    final = boxes[(0, 1)][-1]
    it = iter([[0]] * 4 + [final])
    out = d.align_clocks(1, 2, 7_000_500, lambda v, p: None, lambda p: next(it), clock=clock1, rounds=4)
    assert abs(out["to_reference_ns"] - 400) <= out["uncertainty_ns"]
    assert abs(out["offset_ns"] - 7_000_000) <= out["uncertainty_ns"]


def test_interval_arithmetic():
    # comm [0,10) and [5,20) -> union [0,20) clipped to [2,18): 16. Compute [8,12): exposed 16 - 4 = 12.
    assert d.union_length([(0, 10), (5, 20)], 2, 18) == 16
    assert d.exposed_length([(0, 10), (5, 20)], [(8, 12)], 2, 18) == 12
    assert d.exposed_length([], [(0, 5)], 0, 10) == 0
    assert d.union_length([(0, 1), (3, 4)], 0, 10) == 2


def test_op_bytes_conventions():
    import torch
    t = torch.zeros(256)  # 1 KiB
    assert d.op_bytes("all_reduce", (t,), {}, 4) == 1024
    assert d.op_bytes("all_gather", ([t] * 4, t), {}, 4) == 4096
    assert d.op_bytes("reduce_scatter", (t, [t] * 4), {}, 4) == 4096
    assert d.op_bytes("send", (t, 1), {}, 4) == 1024


def test_without_process_group_records_nothing_and_says_so(tmp_path):
    path = str(tmp_path / "t.jsonl")
    with sc.Recorder(path, hash_samples=False) as rec, d.DistributedCapture(rec) as dc:
        with dc.step():
            pass
    t = sc.read_trace(path)
    info = t.manifest["distributed"]
    assert info["world_size"] == 1 and info["backend"] is None
    assert "not initialised" in info["collectives"]["notes"][0]
    assert t.of("step")[0]["comm_ns"] == 0


def _torchrun(tmp_path, nproc=2, extra_env=None):
    env = subprocess_env()
    env.update(extra_env or {})
    env["SIMREPLAY_TEST_OUT"] = str(tmp_path)
    p = subprocess.run([sys.executable, "-m", "simreplay_capture.distributed_launch", "--standalone", "--nnodes", "1",
                        "--nproc_per_node", str(nproc), os.path.abspath(__file__)],
                       env=env, capture_output=True, text=True, timeout=180, cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return [sc.read_trace(str(tmp_path / f"t.rank{r}.jsonl.gz")) for r in range(nproc)]


def test_two_ranks_under_torchrun(tmp_path):
    traces = _torchrun(tmp_path)
    for r, t in enumerate(traces):
        assert t.complete
        m = t.manifest
        assert m["rank"] == r and m["world_size"] == 2
        info = m["distributed"]
        assert info["backend"] == "gloo" and info["nodes"] == 1 and info["world_size"] == 2
        assert info["collectives"]["ddp_hook"] is True
        assert "all_reduce" in info["collectives"]["wrapped_functions"]
        coll = t.of("collective")
        # per step: DDP buckets (hook) + one explicit all_reduce of 1 MiB (wrapper) + one broadcast
        hook = [c for c in coll if c.get("via") == "ddp_hook"]
        explicit = [c for c in coll if c.get("via") == "wrap" and c["op"] == "all_reduce"]
        bcast = [c for c in coll if c["op"] == "broadcast"]
        assert len(explicit) == 3 and all(c["bytes"] == 1 << 20 for c in explicit)
        assert len(bcast) == 3 and all(c["step"] == -1 for c in bcast)  # outside any step
        assert {c["step"] for c in hook} == {0, 1, 2}
        # gradient bytes of the model: Linear(256,256) x2 = 2*(256*256+256) floats
        for s in range(3):
            assert sum(c["bytes"] for c in hook if c["step"] == s) == 2 * (256 * 256 + 256) * 4
        steps = t.of("step")
        assert len(steps) == 3
        for st in steps:
            assert st["compute_ns"] + st["comm_ns"] == st["step_ns"]
            # the 30 ms sleep is marked compute; comm is exposed only outside it
            assert st["compute_ns"] >= 30_000_000
            in_step = [c for c in coll if c["step"] == st["step"]]
            assert st["collectives"] == len(in_step) and st["comm_ns"] > 0
            assert st["comm_ns"] <= sum(c["duration_ns"] for c in in_step)
    # Clock alignment: same host, same CLOCK_MONOTONIC, so the true shift of rank 1's trace times onto
    # rank 0's is t0_1 - t0_0 exactly (from the manifests); the estimate must be within its bound.
    c1 = traces[1].manifest["distributed"]["clock"]
    true_shift = traces[1].manifest["t0_monotonic_ns"] - traces[0].manifest["t0_monotonic_ns"]
    assert abs(c1["to_reference_ns"] - true_shift) <= c1["uncertainty_ns"]
    assert traces[0].manifest["distributed"]["clock"]["to_reference_ns"] == 0
    _check_merge(tmp_path, traces, true_shift)


def _check_merge(tmp_path, traces, true_shift):
    """`simreplay merge-traces` on the two rank traces (when the binary is known: ctest sets it)."""
    binary = os.environ.get("SIMREPLAY_BINARY")
    if not binary or not os.path.exists(binary):
        return
    out = tmp_path / "merged.jsonl.gz"
    p = subprocess.run([binary, "merge-traces", traces[1].path, traces[0].path, "--out", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    m = sc.read_trace(str(out))
    inputs = m.manifest["merged"]["inputs"]
    assert [i["rank"] for i in inputs] == [0, 1] and m.manifest["ranks"] == [0, 1]
    # the earliest t0 becomes 0: the later rank's shift is |t0_1 - t0_0| (within the alignment bound)
    unc = inputs[1]["uncertainty_ns"]
    assert abs(abs(inputs[1]["shift_ns"] - inputs[0]["shift_ns"]) - abs(true_shift)) <= unc
    steps = m.of("step")
    assert sorted(st["rank"] for st in steps) == [0, 0, 0, 1, 1, 1]
    assert all(c["t_start_ns"] >= 0 for c in m.of("collective"))
    bad = subprocess.run([binary, "merge-traces", traces[0].path, traces[0].path, "--out", str(tmp_path / "x")],
                         capture_output=True, text=True)
    assert bad.returncode == 3 and "one trace per rank" in bad.stderr


def test_probe_network_two_local_ranks(tmp_path):
    out = tmp_path / "probe-network.json"
    p = subprocess.run([sys.executable, "-m", "simreplay_capture.probe_network", "--out", str(out),
                        "--nprocs", "2", "--min-bytes", "1K", "--max-bytes", "64K", "--factor", "8",
                        "--budget-s", "0.01", "--max-iters", "3"],
                       env=subprocess_env(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["schema"] == "simreplay.probe-network/1" and doc["world_size"] == 2 and doc["backend"] == "gloo"
    # sizes 1K, 8K, 64K for each of the five ops
    assert len(doc["results"]) == 15
    for r in doc["results"]:
        factor = {"all_reduce": 1.0, "all_gather": 0.5, "reduce_scatter": 0.5}.get(r["op"], 1.0)  # n = 2
        assert r["algbw_bytes_per_s"] == pytest.approx(r["bytes"] / r["time_s"])
        assert r["busbw_bytes_per_s"] == pytest.approx(r["algbw_bytes_per_s"] * factor)
    for op in ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "sendrecv"):
        assert doc["fit"][op]["points"] == 3 and doc["fit"][op]["alpha_s"] >= 0
    for r in doc["results"]:  # CPU readings: the ranks' processes and the host's busy time per rank
        assert r["cpu_s"] > 0 and r["host_cpu_s_per_rank"] >= 0
    assert doc["implementation"]["reduce_scatter"] == "ring over send/recv"


def test_probe_network_one_rank(tmp_path):
    # One rank (the one-GPU machine's nccl probe: nccl refuses two ranks on one device): its collectives
    # have no ring steps, so no latency per step; the first real-GPU run divided by zero here.
    out = tmp_path / "probe-network.json"
    p = subprocess.run([sys.executable, "-m", "simreplay_capture.probe_network", "--out", str(out),
                        "--nprocs", "1", "--ops", "all_reduce,broadcast", "--min-bytes", "1K", "--max-bytes", "8K",
                        "--factor", "8", "--budget-s", "0.01", "--max-iters", "3"],
                       env=subprocess_env(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["world_size"] == 1
    assert doc["fit"]["all_reduce"]["ring_steps"] == 0 and doc["fit"]["all_reduce"]["alpha_per_step_s"] is None
    assert doc["fit"]["broadcast"]["ring_steps"] == 1 and doc["fit"]["broadcast"]["alpha_per_step_s"] >= 0


def test_probe_network_rejects_bad_options(tmp_path):
    p = subprocess.run([sys.executable, "-m", "simreplay_capture.probe_network", "--out", str(tmp_path / "x"),
                        "--ops", "all_reduce,bogus"], env=subprocess_env(), capture_output=True, text=True)
    assert p.returncode == 2 and "bogus" in p.stderr
    assert not (tmp_path / "x").exists()


def test_ring_reduce_scatter_is_correct(tmp_path):
    # 3 ranks, rank r contributes chunks filled with (r+1)*(c+1): chunk c sums to 6*(c+1).
    code = r"""
import os, torch, torch.distributed as dist
from simreplay_capture.probe_network import _Ops
dist.init_process_group("gloo")
r, n = dist.get_rank(), dist.get_world_size()
chunks = [torch.full((5,), float((r + 1) * (c + 1))) for c in range(n)]
out = torch.empty(5)
_Ops(dist, torch, torch.device("cpu"), r, n, "gloo")._ring_reduce_scatter(chunks, out)
assert torch.all(out == 6.0 * (r + 1)), out
dist.destroy_process_group()
"""
    script = tmp_path / "rs.py"
    script.write_text(code)
    p = subprocess.run([sys.executable, "-m", "simreplay_capture.distributed_launch", "--standalone", "--nnodes", "1",
                        "--nproc_per_node", "3", str(script)], env=subprocess_env(), capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]


def test_fit_alpha_beta_exact_line():
    # t = 1e-4 + S / 1e8 exactly: the fit returns those numbers and r2 = 1, mape = 0.
    pts = [(s, 1e-4 + s / 1e8) for s in (1024, 65536, 1 << 20, 16 << 20)]
    from simreplay_capture.probe_network import fit_alpha_beta
    f = fit_alpha_beta(pts)
    assert f["alpha_s"] == pytest.approx(1e-4, rel=1e-6)
    assert f["algbw_bytes_per_s"] == pytest.approx(1e8, rel=1e-6)
    assert f["r2"] == pytest.approx(1.0) and f["mape"] < 1e-9


def test_fit_alpha_beta_takes_the_bandwidth_from_bandwidth_bound_sizes():
    # A real probe over a 1 Gbit/s link (the C++ test NetworkFit.SmallMessageScatterDoesNotSetTheBandwidth
    # holds the same points): the small sizes' 1.5-3.3 ms scatter must not set the slope.
    from simreplay_capture.probe_network import fit_alpha_beta, fit_cpu
    pts = [(1024, 1.5138e-3), (4096, 1.8502e-3), (16384, 2.0424e-3), (65536, 3.3388e-3), (262144, 1.5329e-3),
           (1048576, 8.5261e-3), (4194304, 35.093e-3), (16777216, 140.05e-3), (67108864, 561.49e-3)]
    f = fit_alpha_beta(pts)
    assert f["algbw_bytes_per_s"] == pytest.approx(119.5e6, rel=0.005)
    assert 0.5e-3 < f["alpha_s"] < 3e-3 and f["method"].startswith("two-regime")
    # host CPU = 1 ms + 2 ns per bus byte (n = 2: bus bytes = S) on the bandwidth-bound sizes
    rows = [{"op": "all_reduce", "bytes": s, "time_s": t, "host_cpu_s_per_rank": 1e-3 + 2e-9 * s} for s, t in pts]
    c = fit_cpu(rows, "all_reduce", 2)
    assert c["cpu_s_per_bus_byte"] == pytest.approx(2e-9) and c["intercept_s"] == pytest.approx(1e-3)
    assert fit_cpu(rows[:5], "all_reduce", 2) is None  # no bandwidth-bound sizes


def _rank_program():
    import time

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    out = os.environ["SIMREPLAY_TEST_OUT"]
    with sc.Recorder(os.path.join(out, "t.jsonl.gz"), hash_samples=False) as rec, \
            d.DistributedCapture(rec) as dc:
        model = dc.attach_ddp(DDP(torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Linear(256, 256))))
        ds = torch.utils.data.TensorDataset(torch.randn(12, 256))
        loader = rec.wrap_loader(torch.utils.data.DataLoader(ds, batch_size=4))
        extra = torch.ones(1 << 18)  # 1 MiB
        for (x,) in loader:
            dist.broadcast(torch.zeros(4), src=0)  # outside the step: step -1
            with dc.step():
                with dc.compute():
                    time.sleep(0.03)
                model(x).sum().backward()
                dist.all_reduce(extra)
    dist.destroy_process_group()


if __name__ == "__main__":
    _rank_program()
