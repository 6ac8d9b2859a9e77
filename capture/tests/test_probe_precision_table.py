"""scripts/probe_precision_table.py: the docs' table of probes' slowdown and its precision."""
import json
import math
import os
import subprocess

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "probe_precision_table.py")


def _probe(path, contrasts, pairs_run=0):
    """Rounds of k = 1, 2 on two cores whose thread CPU and throughput cost rise by each contrast."""
    points = []
    for r, c in enumerate(contrasts):
        for k, factor in ((1, 1.0), (2, c)):
            points.append({"workers": k, "round": r, "getitem_cpu_s_mean": 1e-3 * factor, "wall_s": 1.0,
                           "main_cpu_s": 0.0, "throughput_samples_per_s": 100.0 * k / factor})
    path.write_text(json.dumps({"host": {"cores": 2}, "method": {"rounds": 2}, "points": points,
                                "precision": {"pairs_run": pairs_run}}))
    return str(path)


def test_rows_spread_and_rounds_only_columns(tmp_path):
    a = _probe(tmp_path / "a.json", [1.1, 1.3])
    b = _probe(tmp_path / "b.json", [1.1, 1.3, 1.2, 1.2], pairs_run=2)
    out = subprocess.run(["/usr/bin/python3", SCRIPT, f"g={a},{b}"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    # s = exp(mean log contrast) - 1 over the rounds; the pairs (rounds 2, 3) only enter "all"
    s_rounds = math.exp((math.log(1.1) + math.log(1.3)) / 2) - 1
    se_rounds = abs(math.log(1.1) - math.log(1.3)) / 2
    assert f"| g | a.json | 0 | 100, 100 | {s_rounds:.3f} ({se_rounds:.3f}) / {s_rounds:.3f} ({se_rounds:.3f}) |" in out.stdout
    assert "| g | b.json | 2 | 100, 100, 100, 100 |" in out.stdout
    assert "| g | thread_cpu | rounds | 2 |" in out.stdout and "| g | thread_cpu | all | 2 |" in out.stdout


def test_usage_without_arguments():
    out = subprocess.run(["/usr/bin/python3", SCRIPT], capture_output=True, text=True)
    assert out.returncode != 0 and "usage" in out.stderr
