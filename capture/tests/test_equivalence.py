"""Capture must not change batches, their order, or any random state."""
import random

import numpy as np
import pytest
import torch

import simreplay_capture as sc
from simreplay_capture.bench.pipeline import BenchDataset, multimodal_collate


def _rng_state():
    return (torch.get_rng_state().clone(), random.getstate(), np.random.get_state()[1].copy())


def _run(dataset_dir, fmt, workers, capture, trace=None, epochs=2, seed=123):
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    ds = BenchDataset(dataset_dir, fmt, image_size=32, frames=4)
    kw = dict(batch_size=5, shuffle=True, num_workers=workers, collate_fn=multimodal_collate)
    if workers:
        kw["prefetch_factor"] = 2
    loader = torch.utils.data.DataLoader(ds, **kw)  # global RNG: sampler and base_seed draw from it
    out = []
    if capture:
        with sc.Recorder(trace, seed=seed) as rec:
            loader = rec.wrap_loader(loader)
            for _ in range(epochs):
                for b in loader:
                    with rec.step():
                        # a random draw in the loop: must see the same global stream
                        noise = torch.rand(1)
                    out.append((b, noise))
    else:
        for _ in range(epochs):
            for b in loader:
                out.append((b, torch.rand(1)))
    return out, _rng_state()


def _same(a, b):
    assert len(a) == len(b)
    for (x, nx), (y, ny) in zip(a, b):
        assert set(x) == set(y)
        for k in x:
            assert torch.equal(x[k], y[k]), k
        assert torch.equal(nx, ny)


@pytest.mark.parametrize("workers,fmt", [(0, "files"), (2, "tar"), (3, "lmdb")])
def test_capture_on_off_identical(dataset_dir, tmp_path, workers, fmt):
    off, st_off = _run(dataset_dir, fmt, workers, False)
    on, st_on = _run(dataset_dir, fmt, workers, True, str(tmp_path / "t.jsonl.gz"))
    _same(off, on)
    assert torch.equal(st_off[0], st_on[0])
    assert st_off[1] == st_on[1]
    assert np.array_equal(st_off[2], st_on[2])
    t = sc.read_trace(str(tmp_path / "t.jsonl.gz"))
    assert t.complete
    batches = t.of("batch")
    assert len(batches) == len(on)
    # every delivered batch joined with its worker-side collate record
    assert all(not b.get("joined") is False for b in batches)
    n = len(on) // 2
    assert sorted((b["epoch"], b["batch"]) for b in batches) == sorted(
        [(0, i) for i in range(n)] + [(1, i) for i in range(n)])
    if workers:
        assert {b["worker"] for b in batches} == set(range(workers))
        # in-order delivery: batch k comes from worker k mod W
        assert all(b["worker"] == b["batch"] % workers for b in batches)
    # sample records: indices of each delivered batch match the batch content
    samples = {}
    for s in t.of("sample"):
        samples.setdefault((s["epoch"], s["batch"]), set()).add(s["index"])
    for ep in range(2):
        for i in range(n):
            b = on[ep * n + i][0]
            assert samples[(ep, i)] == set(b["index"].tolist())
    s0 = t.of("sample")[0]
    assert s0["stages"] == "split" and s0["decode_ns"] > 0 and s0["read_bytes"] > 0
    assert len(t.of("step")) == len(on)
