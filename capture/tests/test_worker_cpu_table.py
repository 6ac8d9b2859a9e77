"""scripts/worker_cpu_table.py: per-sample CPU by position in a worker's life, from a trace."""
import gzip
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "worker_cpu_table.py")


def _trace(path, workers, costs_per_process):
    with gzip.open(path, "wt") as f:
        f.write(json.dumps({"type": "header", "manifest": {"loader": {"num_workers": workers}}}) + "\n")
        for w, costs in enumerate(costs_per_process):
            for o, c in enumerate(costs):
                f.write(json.dumps({"type": "sample", "worker": w, "epoch": 0, "rank": 0, "t_start_ns": o,
                                    "cpu_ns": c, "width": 10, "height": 10, "frames": 1}) + "\n")


def test_a_worker_whose_first_samples_cost_three_times_the_rest(tmp_path):
    p = str(tmp_path / "t.jsonl.gz")
    # Two worker processes of 200 samples: the first 10 cost 3 ms, the rest 1 ms.
    _trace(p, 2, [[3_000_000] * 10 + [1_000_000] * 190] * 2)
    out = subprocess.run([sys.executable, SCRIPT, p], capture_output=True, text=True, check=True).stdout
    row = [line for line in out.splitlines() if line.startswith("| t.jsonl.gz")][0].split("|")
    assert row[2].strip() == "2"                          # workers
    assert row[3].strip() == "1.10" and row[4].strip() == "1.00"  # mean, median ms per sample
    assert row[5].strip() == "3.00 / 3.00 (20)"           # ordinals 0-9 over the median level
    assert row[6].strip() == "1.00 / 1.00 (20)"
    assert row[10].strip() == "1.00 / 1.00 (80)"          # 160+


def test_a_file_that_is_not_a_trace_is_named_and_exits_2(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text("{\"type\": \"sample\"}\nnot json\n")
    r = subprocess.run([sys.executable, SCRIPT, str(p)], capture_output=True, text=True)
    assert r.returncode == 2 and "x.jsonl: line 2: not JSON" in r.stderr
