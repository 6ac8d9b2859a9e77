"""scripts/gpu_check.sh on a machine without CUDA: one clear line, exit 77, nothing run or written."""
import os
import subprocess

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
