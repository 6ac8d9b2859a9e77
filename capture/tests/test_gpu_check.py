"""scripts/gpu_check.sh on a machine without CUDA: one clear line, exit 77, nothing run or written."""
import json
import os
import subprocess
import sys

import pytest
import torch

from conftest import subprocess_env

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                      "scripts", "gpu_check.sh")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA machine runs the real check")
def test_without_cuda_exits_77_before_doing_anything(tmp_path):
    env = subprocess_env()
    env.pop("GPU_CHECK_CPU_DRYRUN", None)
    out = tmp_path / "gc"
    p = subprocess.run(["bash", SCRIPT, str(out)], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 77, p.stdout + p.stderr
    assert p.stderr.startswith("gpu_check: no CUDA device visible to") and "torch.cuda.is_available() is False" in p.stderr
    assert not out.exists() and p.stdout == ""


TABLE = os.path.join(os.path.dirname(SCRIPT), "gpu_check_table.py")


def test_table_of_a_run_and_bad_input(tmp_path):
    summary = {"schema": "simreplay.gpu-check/1", "status": "fail", "device": "cuda", "python": "/p/python3",
               "finished": "2026-12-04T15:05:43+00:00", "total_s": 69.2,
               "checks": [{"name": "env", "pass": True, "skipped": False, "seconds": 7.8,
                           "detail": {"torch": "2.11.0", "cuda_build": "13.0", "nccl": "2.28.9", "devices": ["H200"]}},
                          {"name": "calibrate", "pass": True, "skipped": False, "seconds": 0.1,
                           "detail": {"self_check": {"max_abs_train_throughput_error_pct": 2.851, "target_pct": 3.0}}},
                          {"name": "probe_nccl", "pass": False, "skipped": False, "seconds": 11.3,
                           "detail": {"why": "FileNotFoundError: probe-network.json"}}]}
    f = tmp_path / "summary.json"
    f.write_text(json.dumps(summary))
    p = subprocess.run([sys.executable, TABLE, str(f)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("**FAIL** on cuda, finished 2026-12-04T15:05:43+00:00, 69 s, `/p/python3` (torch 2.11.0)")
    assert "| `env` | PASS | 7.8 | torch 2.11.0, CUDA 13.0, NCCL 2.28.9, H200 |" in p.stdout
    assert "| `calibrate` | PASS | 0.1 | self-check |throughput error| 2.85% (target 3.0%) |" in p.stdout
    assert "| `probe_nccl` | FAIL | 11.3 | FileNotFoundError: probe-network.json |" in p.stdout
    f.write_text(json.dumps({"schema": "other/1"}))
    bad = subprocess.run([sys.executable, TABLE, str(f)], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip() == f"gpu_check_table: {f}: expected schema 'simreplay.gpu-check/1', found 'other/1'"
