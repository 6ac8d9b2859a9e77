"""Preflight end to end on a real DataLoader and a real small model on CPU: the SIGKILL/restore cycle
passes and compares bitwise with a reference run; broken resumes are caught by the right check;
damaged checkpoints give one clear line; nothing is left behind."""
import glob
import json
import os
import subprocess
import sys

import pytest

from conftest import subprocess_env

SMALL = ["--opt", "image_size=32", "--opt", "hidden=128", "--opt", "batch_size=4"]


def _preflight(out, *args, data=None):
    cmd = [sys.executable, "-m", "simreplay_capture.preflight", "--out", str(out)]
    if data:
        cmd += ["--opt", f"data={data}"]
    p = subprocess.run(cmd + list(args), env=subprocess_env(), capture_output=True, text=True, timeout=600)
    doc = None
    if os.path.exists(os.path.join(out, "preflight.json")):
        doc = json.load(open(os.path.join(out, "preflight.json")))
    return p, doc


def _checks(doc):
    return {c["name"]: c for c in doc["checks"]}


def _no_leftovers(out):
    # the work directory, temporary files and every launched process are gone
    assert not glob.glob(os.path.join(out, ".preflight-work-*"))
    assert not glob.glob(os.path.join(out, "**", "*.tmp"), recursive=True)
    mine = []
    for n in os.listdir("/proc"):
        if n.isdigit():
            try:
                cmd = open(f"/proc/{n}/cmdline", "rb").read().decode(errors="replace")
            except OSError:
                continue
            if "_child" in cmd and str(out) in cmd:
                mine.append((n, cmd))
    assert not mine, mine


def test_kill_restore_cycle_passes(dataset_dir, tmp_path):
    out = tmp_path / "ok"
    p, doc = _preflight(out, "--opt", "workers=2", "--warmup-steps", "1", "--steps", "2", *SMALL,
                        data=dataset_dir)
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    assert doc["schema"] == "simreplay.preflight/1" and doc["status"] == "pass"
    assert all(c["pass"] for c in doc["checks"]), doc["checks"]
    assert [c["name"] for c in doc["checks"]] == [
        "steps_ran", "checkpoint_saved", "async_identical", "killed", "no_orphans", "checkpoint_readable",
        "loader_position", "resume_loss", "resume_parameters", "checkpoint_config", "eval_restored", "precision",
        "pilot_matches_plan"]
    # no GPU here: labelled as CPU, host memory figures
    assert doc["accelerator"] in ("cpu", "cuda")
    if doc["accelerator"] == "cpu":
        assert "no GPU" in doc["accelerator_note"]
        assert doc["memory"]["kind"] == "host" and doc["memory"]["cuda_max_allocated_bytes"] is None
        assert doc["memory"]["host_rss_peak_bytes"] > doc["memory"]["rss_before_steps_bytes"] > 0
        assert doc["measured"]["peak_memory_kind"] == "host_pss"
    # 1 warm-up + 2 measured steps, then the save at step 3; the resumed step is step 4.
    # 32 samples / batch 4 with drop_last = 8 batches per epoch, so 3 batches are replayed.
    assert doc["steps"]["warmup_steps"] == 1 and doc["steps"]["measured_steps"] == 2
    assert len(doc["steps"]["per_step"]) == 3 and doc["steps"]["comm_s"] is None
    assert doc["checkpoint"]["step"] == 3
    assert doc["restore"]["fast_forward"] == "replay" and doc["restore"]["fast_forward_batches"] == 3
    ck = doc["checkpoint"]
    assert set(ck["contents"]) == {"model", "optimizer", "extra:lr_scheduler", "loader", "rng", "step", "config"}
    assert ck["sync"]["bytes"] == os.path.getsize(os.path.join(ck["dir"], "step-3", "rank0.pt"))
    assert ck["async"]["identical_to_sync"] and ck["async"]["blocking_s"] <= ck["async"]["total_s"]
    assert doc["kill"]["exit_signals"] == [9] and doc["kill"]["orphans_left"] == 0
    rs = doc["resume"]
    assert rs["bitwise_equal"] and rs["loss_resumed"] == rs["loss_reference"] and rs["param_max_abs_diff"] == 0
    assert rs["batch_sha256_resumed"] == rs["batch_sha256_reference"] and rs["losses_before_save_equal"]
    m = doc["measured"]
    assert doc["restore"]["checkpoint_read_bytes"] == ck["sync"]["bytes"]
    for k in ("step_time_s", "compute_s", "data_wait_s", "samples_per_s", "checkpoint_read_bytes_per_s", "peak_memory_bytes", "checkpoint_bytes",
              "checkpoint_save_s", "checkpoint_write_bytes_per_s", "checkpoint_blocking_s", "restore_s", "restart_s"):
        assert m[k] is not None and m[k] > 0, k
    assert m["restart_s"] > doc["restore"]["time_to_first_step_s"] >= doc["restore"]["restore_s"]
    assert m["global_batch_samples"] == 4 and m["world_size"] == 1
    assert doc["manifest"]["config"]["steps"] == 2 and "torch_lacks" in doc["manifest"]
    assert open(out / "summary.txt").read().startswith("preflight PASS")
    # the bundled entry's hooks: evaluation identical after the restore, bf16 within tolerance of fp32,
    # checkpointing measured; no sequence length (images), said so
    assert doc["eval"]["bitwise_equal"] and doc["measured"]["eval_s"] > 0
    assert doc["precision"]["pass"] and doc["precision"]["loss_max_rel_diff"] > 0
    assert doc["activation_checkpointing"]["activation_bytes_saved"] > 0
    assert doc["sequence_length"]["measured"] is False and "batch_at_sequence_length" in doc["sequence_length"]["note"]
    assert doc["measured"]["attention_share_time"] is None
    # the kept checkpoint is readable on its own
    v = subprocess.run([sys.executable, "-m", "simreplay_capture.preflight", "verify-checkpoint",
                        ck["dir"]], env=subprocess_env(), capture_output=True, text=True, timeout=120)
    assert v.returncode == 0 and "step 3" in v.stdout, v.stderr
    _no_leftovers(out)


def test_two_ranks(dataset_dir, tmp_path):
    # 2 gloo ranks, DistributedSampler: 32 samples -> 16 per rank -> 4 batches of 4 per epoch;
    # 1 warm-up + 1 measured step, save at step 2, so 2 batches are replayed on restore
    out = tmp_path / "ddp"
    p, doc = _preflight(out, "--nproc-per-node", "2", "--opt", "workers=0", "--steps", "1", *SMALL,
                        data=dataset_dir)
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    assert doc["job"]["world_size"] == 2 and doc["measured"]["global_batch_samples"] == 8
    assert doc["steps"]["comm_s"]["mean"] > 0 and "all-reduce" in doc["steps"]["comm_note"]
    assert doc["checkpoint"]["sync"]["files"] == 2 and doc["checkpoint"]["distributed"]["used"] is False
    assert doc["kill"]["exit_signals"] == [9, 9] and len(set(doc["kill"]["pids"])) == 2
    assert doc["restore"]["fast_forward_batches"] == 2 and doc["resume"]["bitwise_equal"]
    assert len(doc["steps"]["per_rank_step_time_s"]) == 2
    _no_leftovers(out)


def test_rng_not_restored_is_detected(dataset_dir, tmp_path):
    # the loader position is still restored (its epoch-start RNG is part of it), so the batch matches;
    # the dropout mask of the resumed step comes from the wrong RNG state, so loss and parameters differ
    out = tmp_path / "rng"
    p, doc = _preflight(out, "--opt", "workers=1", "--steps", "1", "--inject", "skip-rng-restore", *SMALL,
                        data=dataset_dir)
    assert p.returncode == 1, p.stderr[-3000:]
    c = _checks(doc)
    assert doc["status"] == "fail"
    assert c["loader_position"]["pass"] and c["checkpoint_readable"]["pass"]
    assert not c["resume_loss"]["pass"] and "vs reference" in c["resume_loss"]["reason"]
    assert not c["resume_parameters"]["pass"]
    assert "[FAIL] resume_loss" in p.stdout
    _no_leftovers(out)


def test_truncated_checkpoint_is_a_clear_failure(dataset_dir, tmp_path):
    out = tmp_path / "trunc"
    p, doc = _preflight(out, "--opt", "workers=0", "--steps", "1", "--inject", "truncate-checkpoint", *SMALL,
                        data=dataset_dir)
    assert p.returncode == 1
    c = _checks(doc)
    assert c["checkpoint_saved"]["pass"] and c["killed"]["pass"]
    r = c["checkpoint_readable"]["reason"]
    assert not c["checkpoint_readable"]["pass"]
    assert "rank0.pt: expected" in r and "bytes (truncated)" in r, r
    assert c["resume_loss"]["reason"] == "not run: the checkpoint could not be restored"
    assert doc["measured"]["restore_s"] is None  # the planner keeps its assumption
    _no_leftovers(out)


# ------------------------------------------------------------------ checkpoint files alone (fast)
@pytest.fixture()
def saved(tmp_path):
    """A real one-rank checkpoint written by the preflight's own save path."""
    import torch
    from simreplay_capture import preflight_ckpt as ck
    m = torch.nn.Linear(8, 4)
    opt = torch.optim.AdamW(m.parameters())
    m(torch.randn(2, 8)).sum().backward()
    opt.step()
    d = ck.step_dir(str(tmp_path / "ckpt"), 1)
    os.makedirs(d)
    n, sha = ck.save_rank_file(os.path.join(d, "rank0.pt"), ck.to_cpu({"model": m.state_dict(),
                                                                      "optimizer": opt.state_dict()}))
    ck.write_manifest(d, 1, 1, {"rank0.pt": {"bytes": n, "sha256": sha}})
    return d


def test_own_checkpoints_load_with_weights_only_off(saved, monkeypatch):
    # torch >= 2.6 defaults torch.load to weights_only=True, which refuses the preflight's non-tensor
    # state (the first real-GPU run, torch 2.11, failed its restore so). Emulate that default on this
    # torch: every load of the preflight's own files must say weights_only=False.
    import torch
    from simreplay_capture import preflight_ckpt as ck
    real, seen = torch.load, []

    def newer_default(f, map_location=None, *, weights_only=True, **kw):
        seen.append(weights_only)
        if weights_only:
            raise RuntimeError("Weights only load failed (emulated torch >= 2.6 default)")
        return real(f, map_location=map_location, weights_only=False, **kw)

    monkeypatch.setattr(torch, "load", newer_default)
    f = os.path.join(saved, "rank0.pt")
    obj = ck.load_bytes(f, open(f, "rb").read(), "cpu")
    assert "model" in obj and seen == [False]


def _verify(path):
    return subprocess.run([sys.executable, "-m", "simreplay_capture.preflight", "verify-checkpoint", str(path)],
                          env=subprocess_env(), capture_output=True, text=True, timeout=120)


def test_verify_ok_and_root_resolves_newest(saved):
    p = _verify(os.path.dirname(saved))
    assert p.returncode == 0 and "step 1, 1 file(s)" in p.stdout


def test_truncated_file(saved):
    f = os.path.join(saved, "rank0.pt")
    size = os.path.getsize(f)
    os.truncate(f, size - 100)
    p = _verify(saved)
    assert p.returncode == 3
    assert p.stderr.strip() == f"{f}: expected {size} bytes, found {size - 100} bytes (truncated)"


def test_corrupted_byte(saved):
    f = os.path.join(saved, "rank0.pt")
    with open(f, "r+b") as fh:
        fh.seek(200)
        b = fh.read(1)
        fh.seek(200)
        fh.write(bytes([b[0] ^ 1]))
    p = _verify(saved)
    assert p.returncode == 3 and "expected sha256" in p.stderr and "(the file is corrupted)" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_missing_manifest_is_an_incomplete_save(saved):
    os.unlink(os.path.join(saved, "manifest.json"))
    p = _verify(saved)
    assert p.returncode == 3 and "the save did not complete" in p.stderr


def test_bad_manifest(saved):
    mp = os.path.join(saved, "manifest.json")
    open(mp, "w").write('{"schema": "simreplay.preflight.checkpoint/1",\n "files": ')
    p = _verify(saved)
    assert p.returncode == 3 and p.stderr.startswith(f"{mp}:2: expected JSON"), p.stderr
    doc = {"schema": "simreplay.preflight.checkpoint/9", "step": 1, "world_size": 1, "files": {}}
    open(mp, "w").write(json.dumps(doc))
    p = _verify(saved)
    assert p.returncode == 3 and "expected schema 'simreplay.preflight.checkpoint/1', found " \
                                 "'simreplay.preflight.checkpoint/9'" in p.stderr


def test_manifest_and_file_agree_but_file_is_not_torch(saved):
    # a file that matches its manifest but torch.load rejects (e.g. written by something else)
    from simreplay_capture import preflight_ckpt as ck
    f = os.path.join(saved, "rank0.pt")
    open(f, "wb").write(b"not a zip archive" * 10)
    import hashlib
    ck.write_manifest(saved, 1, 1, {"rank0.pt": {"bytes": 170, "sha256": hashlib.sha256(open(f, "rb").read()).hexdigest()}})
    p = _verify(saved)
    assert p.returncode == 3 and "expected a torch.save archive" in p.stderr


def test_bad_entry_and_bad_args(tmp_path):
    p, doc = _preflight(tmp_path / "e", "--step", "no_such_module_xyz:build")
    assert p.returncode == 3 and doc is None
    assert "expected an importable module 'no_such_module_xyz'" in p.stderr
    p, _ = _preflight(tmp_path / "e", "--step", "json")
    assert p.returncode == 3 and "expected module:function" in p.stderr
    p, _ = _preflight(tmp_path / "e", "--steps", "0")
    assert p.returncode == 2 and "--steps: expected an integer >= 1, found 0" in p.stderr


def test_step_protocol_violation_is_bad_input(dataset_dir, tmp_path):
    # an entry that returns the wrong type: exit 3, one clear line, preflight.json says why
    mod = tmp_path / "bad_entry_mod.py"
    mod.write_text("def build(ctx):\n    return {'model': None}\n")
    env = subprocess_env()
    env["PYTHONPATH"] = str(tmp_path) + os.pathsep + env["PYTHONPATH"]
    out = tmp_path / "proto"
    p = subprocess.run([sys.executable, "-m", "simreplay_capture.preflight", "--out", str(out), "--step",
                        "bad_entry_mod:build"], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 3, p.stderr
    assert p.stderr.strip().splitlines()[-1] == ("--step bad_entry_mod:build: expected build() to return a "
                                                 "PreflightJob, found dict")
    doc = json.load(open(out / "preflight.json"))
    assert doc["status"] == "fail" and not _checks(doc)["steps_ran"]["pass"]
    _no_leftovers(out)


# ------------------------------------------------------------------ loader position (in-process, fast)
class _RandomAug(object):
    """Map-style dataset whose samples draw from the worker's torch RNG, like random augmentation."""

    def __len__(self):
        return 24

    def __getitem__(self, i):
        import torch
        return torch.full((2,), float(i)) + torch.rand(2)


def _loader(workers):
    import torch
    g = torch.Generator()
    g.manual_seed(7)
    return torch.utils.data.DataLoader(_RandomAug(), batch_size=4, shuffle=True, num_workers=workers,
                                       generator=g)


@pytest.mark.parametrize("workers", [0, 2])
def test_cursor_replay_restores_the_exact_next_batch(workers):
    # 24 samples / batch 4 = 6 batches per epoch; save after 8 batches (epoch 1, 2 batches in)
    import torch
    from simreplay_capture.preflight_state import LoaderCursor, rng_state, set_rng_state
    torch.manual_seed(3)
    a = LoaderCursor(_loader(workers))
    for _ in range(8):
        a.next()
        torch.rand(1)  # the training step draws from the global RNG too (dropout)
    pos, rng = a.state(), rng_state(a.loader)
    want = a.next()
    a.close()
    assert pos["epoch"] == 1 and pos["batch_in_epoch"] == 2
    torch.manual_seed(99)  # a fresh process: some other RNG state
    b = LoaderCursor(_loader(workers))
    assert b.restore(pos) == 2
    set_rng_state(b.loader, rng)
    assert torch.equal(b.next(), want)
    b.close()
    c = LoaderCursor(_loader(workers))  # without the replay the position is lost
    c.restore(pos, replay=False)
    set_rng_state(c.loader, rng)
    assert not torch.equal(c.next(), want)
    c.close()


def test_checkpoint_dir_with_other_files_is_refused(tmp_path):
    d = tmp_path / "ckpts"
    d.mkdir()
    (d / "precious.pt").write_bytes(b"x")
    p, doc = _preflight(tmp_path / "o", "--checkpoint-dir", str(d))
    assert p.returncode == 3 and doc is None
    assert f"--checkpoint-dir {d}: expected an empty directory" in p.stderr and "'precious.pt'" in p.stderr
    assert (d / "precious.pt").read_bytes() == b"x"
