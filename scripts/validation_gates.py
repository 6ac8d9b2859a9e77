#!/usr/bin/python3
"""The verdict of every timed validation gate a test run left in a build directory, one short block
each: what CI prints last when its test stage fails, so that the reason survives a truncated log
(docs/reliability.md, "CI stages"). Reads the gates' own JSON outputs; prints nothing for a gate that
did not run. Never changes a verdict: it only reports the one written.

usage: scripts/validation_gates.py BUILD_DIR
"""
import json
import os
import sys

from validation_numbers import gated_pass  # the one statement of what CI gates each suite set on


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"  {path}: unreadable ({e})")
        return None


def pct(x):
    return "–" if x is None else f"{x:+.1f}%"


def suite_set(name, path, gate):
    v = load(path)
    if v is None:
        return
    t = v["thresholds"]
    # The held-out sets gate without the persistence comparison (validation/suite/run.sh,
    # errors_only_verdict): their verdict is the one that run.sh exited with, not validation.json's "pass".
    print(f"validation_suite {name} ({gate}): {'pass' if gated_pass(name, v) else 'FAIL'}")
    for key in ("median_abs_train_throughput_error_pct", "max_abs_gpu_idle_error_pp"):
        g = t.get(key) or {}
        print(f"  {key}: {g.get('value')} (limit {g.get('limit')}): {'pass' if g.get('pass') else 'FAIL'}")
    p = t.get("beats_persistence") or {}
    if p.get("model_median_abs_error_pct") is None:
        print("  persistence: not compared (no case's measured median left the calibrating case's interval): FAIL")
    else:
        print(f"  persistence: model {p.get('model_median_abs_error_pct')}% vs baseline "
              f"{p.get('baseline_median_abs_error_pct')}% (margin {p.get('margin_pp')} pp): "
              f"{'pass' if p.get('pass') else 'FAIL'}{'' if name == 'development' else ' (reported, not gated)'}")
    for c in t.get("per_case", []):
        if not c.get("pass", True):
            print(f"  per-case limit FAILED: {c['case']} train {pct(c.get('train_throughput_error_pct'))} "
                  f"(limit {c.get('train_throughput_limit_pct')}%), GPU idle {c.get('gpu_idle_error_pp')} pp "
                  f"(limit {c.get('gpu_idle_limit_pp')} pp)")
    for f in t.get("cases_over_limit", []):
        print(f"  above the median's limit (reported): {f}")
    print("  train errors: " + ", ".join(f"{c['case']} {pct(c.get('train_throughput_error_pct'))}"
                                         for c in t.get("per_case", [])))
    print(f"  completeness: {'pass' if v['completeness']['pass'] else 'FAIL'} {v['completeness'].get('problems', [])}; "
          f"correctness: {'pass' if v['correctness']['pass'] else 'FAIL'}")


def advice(path):
    v = load(path)
    if v is None:
        return
    print(f"validation_advice: {'pass' if v['pass'] else 'FAIL'} (complete: {v.get('complete')})")
    for r in v["results"]:
        print(f"  {r['pipeline']}: recommended {r['recommended']}, best measured {r['best_measured']}, "
              f"regret {100 * r['regret']:.1f}% (limit {100 * v['regret_limit']:.0f}%): "
              f"{'pass' if r['regret_pass'] else 'FAIL'}{'' if r.get('scored', True) else ' (not scored: foreign load)'}")


def thresholds_only(name, path):
    v = load(path)
    if v is None:
        return
    print(f"{name}: {'pass' if v.get('pass') else 'FAIL'}")
    for key, g in sorted((v.get("thresholds") or {}).items()):
        if isinstance(g, dict) and "limit" in g:
            print(f"  {key}: {g.get('value')} (limit {g['limit']})")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = sys.argv[1]
    found = False
    held_out = "gated on error limits, correctness and completeness; persistence reported"
    for name, rel, gate in (("development", "validation-suite/validation.json", "every check gates"),
                            ("heldout", "validation-suite/heldout/validation.json", held_out),
                            ("heldout-video", "validation-suite/heldout-video/validation.json", held_out)):
        if os.path.exists(os.path.join(build, rel)):
            found = True
            suite_set(name, os.path.join(build, rel), gate)
    if os.path.exists(os.path.join(build, "validation-advice/advice-validation.json")):
        found = True
        advice(os.path.join(build, "validation-advice/advice-validation.json"))
    for name, rel in (("validation_multinode", "validation-multinode/multinode.json"),
                      ("validation_minijob", "minijob-validation/minijob.json")):
        if os.path.exists(os.path.join(build, rel)):
            found = True
            thresholds_only(name, os.path.join(build, rel))
    if not found:
        print(f"no validation gate outputs under {build}")


if __name__ == "__main__":
    main()
