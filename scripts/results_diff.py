#!/usr/bin/env python3
"""Compares two simreplay results.json files value by value (e.g. the same scenario through two
binaries): prints the values that differ (up to --show), how many of how many, and the largest
relative difference among the numbers. Paths that name the run itself (scenario_file, out_dir) are
ignored. Exit 0 when the largest relative difference is at most --tolerance (default 0: identical),
1 otherwise, 2 with one line on a missing or malformed file.

Usage: scripts/results_diff.py A/results.json B/results.json [--tolerance 1e-8] [--show 12]
"""
import argparse
import json
import sys

IGNORED = ("/scenario_file", "/out_dir")


def flatten(value, path="", out=None):
    out = {} if out is None else out
    if isinstance(value, dict):
        for k, v in value.items():
            flatten(v, f"{path}/{k}", out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            flatten(v, f"{path}[{i}]", out)
    elif not path.endswith(IGNORED):
        out[path] = value
    return out


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return flatten(json.load(f))
    except (OSError, json.JSONDecodeError) as e:
        print(f"results_diff.py: {path}: {e}", file=sys.stderr)
        sys.exit(2)


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--tolerance", type=float, default=0.0)
    parser.add_argument("--show", type=int, default=12)
    args = parser.parse_args()
    a, b = load(args.a), load(args.b)
    differing, worst = 0, 0.0
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if x == y:
            continue
        differing += 1
        rel = abs(x - y) / max(abs(x), 1e-300) if is_number(x) and is_number(y) else float("inf")
        worst = max(worst, rel)
        if differing <= args.show:
            print(f"{key}: {x} -> {y} (relative {rel:.3g})")
    print(f"{differing} of {len(set(a) | set(b))} values differ; largest relative difference {worst:.3g}")
    sys.exit(0 if worst <= args.tolerance else 1)


if __name__ == "__main__":
    main()
