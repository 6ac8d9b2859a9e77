"""A dataset that does not use sc.stage is recorded as stages="unsplit"."""
import time

import torch

import simreplay_capture as sc


class Plain(torch.utils.data.Dataset):
    def __len__(self):
        return 12

    def __getitem__(self, i):
        time.sleep(0.002)
        return torch.arange(6.0).view(2, 3) + i


def test_unsplit_and_hash(tmp_path):
    p = str(tmp_path / "u.jsonl")
    with sc.Recorder(p) as rec:
        ds = rec.wrap_dataset(Plain())
        for _ in rec.wrap_loader(torch.utils.data.DataLoader(ds, batch_size=3, num_workers=2)):
            pass
    t = sc.read_trace(p)
    s = t.of("sample")
    assert len(s) == 12
    for r in s:
        assert r["stages"] == "unsplit" and r["read_ns"] == 0 and r["augment_ns"] == 0
        assert r["decode_ns"] >= 2_000_000 and r["out_bytes"] == 24
        assert (r["width"], r["height"], r["frames"]) == (3, 2, 1)
    assert len({r["hash"] for r in s}) == 12  # distinct content, distinct hash
    # stage()/note() outside a captured __getitem__ are no-ops
    with sc.stage("read"):
        sc.note(read_bytes=1)
