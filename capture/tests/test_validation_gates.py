"""scripts/validation_gates.py: what CI prints last when its test stage fails, from the gates' own JSON."""
import json
import os
import subprocess

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "validation_gates.py")


def _run(build):
    return subprocess.run(["/usr/bin/python3", SCRIPT, str(build)], capture_output=True, text=True)


def _suite(ok_case_pass=True):
    return {"pass": ok_case_pass, "completeness": {"pass": True, "problems": []}, "correctness": {"pass": True},
            "thresholds": {"median_abs_train_throughput_error_pct": {"value": 3.9, "limit": 10.0, "pass": True},
                           "max_abs_gpu_idle_error_pp": {"value": 6.2, "limit": 10.0, "pass": True},
                           "beats_persistence": {"model_median_abs_error_pct": 4.0,
                                                 "baseline_median_abs_error_pct": 24.4, "margin_pp": 5.0,
                                                 "pass": True},
                           "cases_over_limit": ["w6: train throughput +10.3%"],
                           "per_case": [{"case": "w6", "train_throughput_error_pct": 10.3,
                                         "train_throughput_limit_pct": 15.0, "gpu_idle_error_pp": -6.2,
                                         "gpu_idle_limit_pp": 10.0, "pass": True},
                                        {"case": "bs16", "train_throughput_error_pct": -16.2,
                                         "train_throughput_limit_pct": 15.0, "gpu_idle_error_pp": 0.7,
                                         "gpu_idle_limit_pp": 10.0, "pass": ok_case_pass}]}}


def test_names_the_failing_case_and_the_advice_regret(tmp_path):
    (tmp_path / "validation-suite").mkdir()
    (tmp_path / "validation-suite" / "validation.json").write_text(json.dumps(_suite(ok_case_pass=False)))
    (tmp_path / "validation-advice").mkdir()
    (tmp_path / "validation-advice" / "advice-validation.json").write_text(json.dumps(
        {"pass": False, "complete": True, "regret_limit": 0.05,
         "results": [{"pipeline": "cpu_heavy", "recommended": "w3_pf4_pers1", "best_measured": "w3_pf2_pers1",
                      "regret": 0.067, "regret_pass": False}]}))
    out = _run(tmp_path)
    assert out.returncode == 0, out.stderr
    assert "validation_suite development (every check gates): FAIL" in out.stdout
    assert "per-case limit FAILED: bs16 train -16.2% (limit 15.0%)" in out.stdout
    assert "above the median's limit (reported): w6: train throughput +10.3%" in out.stdout
    assert "train errors: w6 +10.3%, bs16 -16.2%" in out.stdout
    assert ("cpu_heavy: recommended w3_pf4_pers1, best measured w3_pf2_pers1, regret 6.7% (limit 5%): FAIL"
            in out.stdout)
    assert "per-case limit FAILED: w6" not in out.stdout


def test_says_when_no_gate_ran_and_survives_a_truncated_file(tmp_path):
    out = _run(tmp_path)
    assert out.returncode == 0, out.stderr
    assert f"no validation gate outputs under {tmp_path}" in out.stdout
    (tmp_path / "validation-multinode").mkdir()
    (tmp_path / "validation-multinode" / "multinode.json").write_text('{"pass": tr')
    out = _run(tmp_path)
    assert out.returncode == 0, out.stderr
    assert "multinode.json: unreadable" in out.stdout


def test_a_held_out_set_is_judged_without_the_persistence_comparison(tmp_path):
    # CI on 830b704: the held-out video set passed its gate (run.sh's errors-only verdict) but failed the
    # persistence comparison, and this summary printed FAIL for it.
    doc = _suite()
    doc["pass"] = False
    doc["thresholds"]["error_limits_pass"] = True
    doc["thresholds"]["enabled"] = True
    doc["thresholds"]["beats_persistence"].update(model_median_abs_error_pct=8.9, baseline_median_abs_error_pct=8.2,
                                                  **{"pass": False})
    d = tmp_path / "validation-suite" / "heldout-video"
    d.mkdir(parents=True)
    (d / "validation.json").write_text(json.dumps(doc))
    out = _run(tmp_path)
    assert out.returncode == 0, out.stderr
    assert "validation_suite heldout-video (gated on error limits, correctness and completeness; " \
           "persistence reported): pass" in out.stdout
    assert "(margin 5.0 pp): FAIL (reported, not gated)" in out.stdout
    # An error limit still fails it.
    doc["thresholds"]["error_limits_pass"] = False
    (d / "validation.json").write_text(json.dumps(doc))
    assert "persistence reported): FAIL" in _run(tmp_path).stdout
