"""The preflight's pilot measurements on real entries, real DataLoaders and real files (CPU): the
sequence-length rule, activation checkpointing, fp32 vs bf16 drift, evaluation before the kill and
after the restore, the training configuration in the checkpoint, and a pilot smaller than the plan."""
import json
import os
import subprocess
import sys

import pytest
import torch

from conftest import subprocess_env
from simreplay_capture.preflight_measure import attention_share

TEXT = "simreplay_capture.bench.preflight_text_step:build"


def _run(out, *args, env=None):
    p = subprocess.run([sys.executable, "-m", "simreplay_capture.preflight", "--out", str(out), *args],
                       env=env or subprocess_env(), capture_output=True, text=True, timeout=300)
    path = os.path.join(out, "preflight.json")
    return p, (json.load(open(path)) if os.path.exists(path) else None)


def _checks(doc):
    return {c["name"]: c for c in doc["checks"]}


def test_attention_share_rule_by_hand():
    # f(L) = 3 L + 0.01 L^2: f(100) = 300 + 100 = 400, f(200) = 600 + 400 = 1000.
    # k = 2, r = 2.5: share(100) = (2.5 - 2) / (4 - 2) = 0.25 = 100/400; share(200) = 4 * 0.25 / 2.5 = 0.4 = 400/1000
    s1, s2, note = attention_share(100, 400.0, 200, 1000.0)
    assert s1 == pytest.approx(0.25) and s2 == pytest.approx(0.4) and note == "fitted"
    # purely linear: r = k, share 0; sub-linear (a constant part): clamped to 0 and said so
    assert attention_share(100, 1.0, 300, 3.0)[:2] == (0.0, 0.0)
    s1, s2, note = attention_share(100, 1.0, 200, 1.5)
    assert (s1, s2) == (0.0, 0.0) and note.startswith("clamped to 0")
    # purely quadratic: r = k^2 -> share 1 at both lengths
    s1, s2, _ = attention_share(64, 1.0, 256, 16.0)
    assert s1 == pytest.approx(1.0) and s2 == pytest.approx(1.0)
    assert attention_share(256, 1.0, 64, 2.0)[0] is None


def test_text_pilot_measures_and_flags_a_pilot_shorter_than_the_plan(tmp_path):
    # seq_len 64 pilot, the plan declares 128: pilot_matches_plan fails loudly; a parameter-drift
    # tolerance of 0 makes the precision check fail too (bf16 never equals fp32 bit for bit)
    out = tmp_path / "text"
    p, doc = _run(out, "--step", TEXT, "--opt", "seq_len=64", "--opt", "samples=32", "--steps", "1",
                  "--seq-lens", "64,256", "--plan-sequence-length", "128", "--plan-micro-batch", "4",
                  "--precision-param-rtol", "0", "--model-revision", "tinylm@test")
    assert p.returncode == 1, p.stdout + p.stderr[-3000:]
    c = _checks(doc)
    assert [n for n, x in c.items() if not x["pass"]] == ["precision", "pilot_matches_plan"], doc["checks"]
    assert "PILOT SMALLER THAN THE PLAN: sequence length 64 < the plan's 128" in c["pilot_matches_plan"]["reason"]
    assert "!!! PILOT SMALLER THAN THE PLAN" in p.stdout.splitlines()[1]
    assert doc["pilot"]["smaller_than_plan"] and doc["measured"]["pilot_smaller_than_plan"] is True
    assert doc["measured"]["sequence_length"] == 64 and doc["measured"]["micro_batch_samples"] == 4
    # sequence length: two points; the attention probabilities saved for backward are B*H*L^2 floats,
    # so the activation bytes grow faster than linearly (x4 length -> more than x4 bytes)
    q = doc["sequence_length"]
    assert q["measured"] and [x["sequence_length"] for x in q["points"]] == [64, 256]
    a1, a2 = (x["activation_bytes"] for x in q["points"])
    assert a2 > 4 * a1
    m = q["attention_share_activation_memory"]
    assert 0 < m["at_l1"] < m["at_l2"] < 1 and m["note"] == "fitted"
    assert 0 <= q["attention_share_time"]["at_l2"] <= 1
    assert doc["measured"]["attention_share_at_sequence_length"] == 256
    # activation checkpointing around each layer: fewer saved activations, the same losses
    ac = doc["activation_checkpointing"]
    assert ac["measured"] and 0 < ac["activation_bytes_on"] < ac["activation_bytes_off"]
    assert ac["activation_bytes_saved"] == ac["activation_bytes_off"] - ac["activation_bytes_on"]
    assert ac["losses_equal"] and doc["measured"]["activation_checkpointing_recompute_s"] == ac["recompute_s"]
    # precision: measured through the entry's hook; losses close but not equal
    pr = doc["precision"]
    assert pr["measured"] and pr["low"] == "bf16" and pr["how"] == "the step entry's set_precision hook"
    assert 0 < pr["loss_max_rel_diff"] < 0.05 and pr["param_drift_rel_to_norm"] > 0 and not pr["pass"]
    assert len(pr["losses_fp32"]) == len(pr["losses_low"]) == 3
    # evaluation: timed, identical after the restore; restart figures exclude it
    ev = doc["eval"]
    assert ev["available"] and ev["eval_s"] > 0 and ev["bitwise_equal"] and doc["measured"]["eval_s"] == ev["eval_s"]
    assert c["eval_restored"]["pass"] and c["checkpoint_config"]["pass"]
    # the checkpoint carries the training configuration
    st = torch.load(os.path.join(doc["checkpoint"]["dir"], "step-2", "rank0.pt"))
    assert st["config"]["training"]["seq_len"] == 64 and st["config"]["optimizer"]["type"] == "AdamW"
    assert st["config"] == doc["restore"]["config_saved"] and "config" in doc["checkpoint"]["contents"]
    # the manifest: declared model revision, the dataset's file-list hash, packages
    mf = doc["manifest"]
    assert mf["revisions"]["model"] == "tinylm@test" and mf["revisions"]["dataset_files"] is None  # no data opt
    assert mf["packages"]["count"] > 5 and mf["config"]["plan_sequence_length"] == 128
    assert doc["memory"]["device"]["available"] is False and "no GPU" in doc["memory"]["device"]["note"]


ENTRY = '''
import torch
from simreplay_capture.bench import preflight_step


def build(ctx):
    job = preflight_step.build(ctx)
    # a running statistic kept in a non-persistent buffer: not in state_dict, so not checkpointed
    job.model.register_buffer("seen", torch.zeros(()), persistent=False)
    inner_step, inner_eval = job.step, job.evaluate

    def step(batch):
        job.model.seen += 1
        return inner_step(batch)

    def evaluate():
        out = inner_eval()
        out["loss"] = out["loss"] + job.model.seen
        return out
    job.step, job.evaluate = step, evaluate
    return job
'''


def test_eval_that_depends_on_unsaved_state_fails_after_restore(dataset_dir, tmp_path):
    (tmp_path / "unsaved_entry.py").write_text(ENTRY)
    env = subprocess_env()
    env["PYTHONPATH"] = str(tmp_path) + os.pathsep + env["PYTHONPATH"]
    out = tmp_path / "unsaved"
    p, doc = _run(out, "--step", "unsaved_entry:build", "--opt", f"data={dataset_dir}", "--opt", "image_size=32",
                  "--opt", "hidden=64", "--opt", "batch_size=4", "--opt", "workers=0", "--steps", "1",
                  "--precision", "none", "--plan-micro-batch", "4", env=env)
    assert p.returncode == 1, p.stdout + p.stderr[-3000:]
    c = _checks(doc)
    # before the kill 2 steps had run (seen = 2); the restored process has seen = 0: the loss differs by 2
    assert not c["eval_restored"]["pass"] and doc["eval"]["max_abs_diff"] == pytest.approx(2.0)
    assert [n for n, x in c.items() if not x["pass"]] == ["eval_restored"]
    assert c["pilot_matches_plan"]["pass"] and "not smaller than the plan's (4, None)" in c["pilot_matches_plan"]["reason"]
    assert doc["precision"] == {"measured": False, "note": "--precision none"} and c["precision"]["pass"]
    assert doc["manifest"]["revisions"]["dataset_files"]["files"] > 0


def test_bad_measure_options(tmp_path):
    p, _ = _run(tmp_path / "x", "--seq-lens", "256,64")
    assert p.returncode == 2 and "--seq-lens: expected L1,L2 with 0 < L1 < L2, found '256,64'" in p.stderr
    p, _ = _run(tmp_path / "x", "--plan-micro-batch", "0")
    assert p.returncode == 2 and "--plan-micro-batch: expected an integer >= 1, found 0" in p.stderr
