#!/usr/bin/env python3
"""Renders the case table docs/planning.md quotes from one run of validation/minijob/run.py, so that no
figure of it is copied by hand ("Checked against real jobs").

    scripts/minijob_table.py OUT [--band-file FILE]

OUT is the run's --out directory (its minijob.json). The heading names the run's UTC window (recorded in
minijob.json since 2026-12-05; for earlier runs, the first and last event of the supervised runs under
OUT, or "not recorded"), the band it was planned with (a held-out run: embedded in minijob.json) or the
band it wrote (--band-file, a development run), and that band's commit. Exit 0 printed; 1 minijob.json
missing or unreadable.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
from typing import Any, Dict, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "validation", "minijob"))
import run  # noqa: E402  (the harness's own case table)


def load(path: str) -> Dict[str, Any]:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"minijob_table: {path}: {e}")


def utc(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(t))


def window(doc: Dict[str, Any], out: str) -> str:
    """The run's UTC window: recorded, or from its supervised runs' event times."""
    if "started_utc" in doc:
        return f"{doc['started_utc']} to {doc['ended_utc']}"
    times = []
    for path in glob.glob(os.path.join(out, "*", "**", "*.json"), recursive=True):
        try:
            times += [e["t"] for e in load(path).get("events", [])]
        except (AttributeError, KeyError, TypeError):
            continue
    if not times:
        return "window not recorded"
    return f"{utc(min(times))}-{utc(max(times))[11:]} UTC"


def heading(doc: Dict[str, Any], when: str, band: Optional[Dict[str, Any]], wrote: bool) -> str:
    cases = doc["cases"]
    scored = [c for c in cases if c["scored"]]
    passed = [c for c in scored if c["passed"]]
    workers = sorted({c["workers"] for c in cases})
    widths = [c["interval_width_pct"] for c in cases]
    errors = [c["error_pct"] for c in cases]
    code = f" on commit {doc['commit']}" if "commit" in doc else ""
    parts = [f"Run {when}{code}, {len(cases)} cases at "
             f"{'/'.join(map(str, workers))} loader worker(s), {len(cases[0]['real_runs_s'])} real runs each: "
             f"**{len(passed)} of {len(scored)} scored cases pass** (exit {doc['exit_code']}: {doc['verdict']}); "
             f"errors {min(errors):+.2f}% .. {max(errors):+.2f}%, intervals {min(widths):.1f}-{max(widths):.1f}% wide."]
    if band:
        verb = "wrote the band" if wrote else "planned with the band"
        bias = cases[0]["prediction"].get("training_bias", 0.0)
        parts.append(f"It {verb} {band['error_low']:+.4f} .. {band['error_high']:+.4f} (commit {band['commit']}, "
                     f"from {len(band['cases'])} cases, mean {band['mean']:+.4f}, sd {band['stddev']:.4f})"
                     + (f", the expected row at its mean as the bias ({bias:+.4f})." if bias else "."))
    else:
        parts.append("Planned with the planner's default band.")
    return " ".join(parts)


def table(doc: Dict[str, Any]) -> str:
    return run.case_table(doc["cases"], ["case", "set", "failures (s)", "real s (median)", "real runs s", "predicted s",
                                         "error", "interval s", "width", "verdict"])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--band-file", default=None, help="the band a development run wrote (--write-band)")
    args = ap.parse_args()
    path = os.path.join(args.out, "minijob.json")
    doc = load(path)
    band = load(args.band_file) if args.band_file else doc.get("band")
    print(heading(doc, window(doc, args.out), band, wrote=bool(args.band_file)))
    print()
    print(table(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
