"""scripts/validation_log_tables.py: the log's tables come from the harnesses' JSON, numbers unchanged."""
import json
import os
import subprocess

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "validation_log_tables.py")


def _run(kind, path):
    return subprocess.run(["/usr/bin/python3", SCRIPT, kind, str(path)], capture_output=True, text=True)


def test_whatif_table_carries_every_case_and_the_gate(tmp_path):
    report = {"started": "S", "finished": "F", "settings": {"reps": 2},
              "gate": {"pass": False, "limit_pct": 10.0, "failing": ["size2x-w1 -18.0%"]},
              "cases": {"base": {"workers": 2, "measured_median": 348.46, "measured_samples_per_s": [348.46, 339.41],
                                 "predicted": 344.68, "error_pct": -1.0836, "load_avg_1min": [1.2, 1.4]},
                        "size2x-w1": {"workers": 1, "measured_median": 284.9, "measured_samples_per_s": [284.9],
                                      "predicted": 233.7, "error_pct": -17.97, "predicted_without_media_probe": 238.2,
                                      "predicted_without_cpu_probe": 250.0, "error_without_cpu_probe_pct": -12.25}}}
    path = tmp_path / "whatifs.json"
    path.write_text(json.dumps(report))
    out = _run("whatifs", path)
    assert out.returncode == 0, out.stderr
    assert "| base | 2 | 348.5 (348.5, 339.4) |  | 344.7 | -1.1% |  |  | 1.2..1.4 | not recorded | yes |" in out.stdout
    assert "| size2x-w1 | 1 | 284.9 (284.9) |  | 233.7 | -18.0% | 238.2 | 250.0 (-12.2%) |" in out.stdout
    assert "FAIL (size2x-w1 -18.0%)" in out.stdout


def test_whatif_table_shows_spread_noise_and_unscored_cases(tmp_path):
    quiet = {"foreign_cpu_fraction": 0.02, "steal_fraction": 0.0}
    busy = {"foreign_cpu_fraction": 0.31, "steal_fraction": 0.04}
    report = {"started": "S", "finished": "F", "settings": {"reps": 2},
              "gate": {"pass": False, "limit_pct": 10.0, "failing": [], "unscored": ["half"]},
              "cases": {"half": {"workers": 2, "measured_median": 300.0, "measured_samples_per_s": [300.0, 306.0],
                                 "spread_pct": 2.0, "predicted": 303.0, "error_pct": 1.0, "scored": False,
                                 "load_avg_1min": [1.0, 2.5],
                                 "runs": [{"noise": quiet}, {"noise": busy}]},
                        "cold": {"skipped": "drop_caches needs root"}}}
    path = tmp_path / "whatifs.json"
    path.write_text(json.dumps(report))
    out = _run("whatifs", path)
    assert out.returncode == 0, out.stderr
    assert "| half | 2 | 300.0 (300.0, 306.0) | 2.0% | 303.0 | +1.0% |  |  | 1.0..2.5 | 31%, 4% | no (foreign load) |" \
        in out.stdout
    assert "| cold | | skipped: drop_caches needs root |" in out.stdout
    assert "NOT SCORED (half)" in out.stdout


def test_remote_table_counts_cases_outside_the_limit(tmp_path):
    case = {"mode": "get", "workers": 1, "measured_median": 21.8, "measured_samples_per_s": [21.7, 21.9],
            "predicted": 21.6, "error_pct": -0.7}
    bad = dict(case, workers=8, error_pct=25.7, predicted=27.4)
    report = {"started": "S", "finished": "F", "settings": {}, "gate": {"pass": False, "limit_pct": 10.0},
              "configs": [{"first_byte_ms": 10.0, "conn_rate_bytes_per_s": 500000,
                           "probe": {"first_byte_s": 0.0135, "per_connection_bytes_per_s": 5.0e5},
                           "cases": {"get-w1": case, "get-w8": bad}}]}
    path = tmp_path / "remote.json"
    path.write_text(json.dumps(report))
    out = _run("remote", path)
    assert out.returncode == 0, out.stderr
    assert "| 10 ms | 0.5 MB/s | 13.5 ms, 0.50 MB/s | get | 1 | 21.8 (21.7, 21.9) | 21.6 | -0.7% |" in out.stdout
    assert "FAIL, 1 of 2 cases outside." in out.stdout


def test_a_truncated_report_is_one_line_naming_the_file(tmp_path):
    path = tmp_path / "remote.json"
    path.write_text('{"configs": [')
    out = _run("remote", path)
    assert out.returncode == 3
    assert out.stderr.startswith(str(path)) and out.stderr.count("\n") == 1


def test_a_report_of_another_kind_is_refused(tmp_path):
    path = tmp_path / "whatifs.json"
    path.write_text(json.dumps({"started": "S", "finished": "F", "settings": {}, "cases": {"x": {}}}))
    out = _run("whatifs", path)
    assert out.returncode == 3 and "not a whatifs validation report" in out.stderr


def test_remote_summary_counts_streams_apart(tmp_path):
    def case(mode, err):
        return {"mode": mode, "workers": 2, "measured_median": 1.0, "measured_samples_per_s": [1.0],
                "predicted": 1.0, "error_pct": err}
    report = {"commit": "abc1234", "gate": {"limit_pct": 10.0},
              "configs": [{"cases": {"get-w2": case("get", 12.0), "stream-w1": case("stream", -34.0),
                                     "stream-w2": case("stream", 4.0)}}]}
    path = tmp_path / "remote.json"
    path.write_text(json.dumps(report))
    out = subprocess.run(["/usr/bin/python3", SCRIPT, "remote-summary", str(path), str(path)], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    row = f"| {path} | abc1234 | 2 | 1 | 19.0% | -34.0% .. +4.0% | 2 of 3 |"
    assert out.stdout.count(row) == 2
