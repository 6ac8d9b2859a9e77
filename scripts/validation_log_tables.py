#!/usr/bin/python3
"""Markdown tables for docs/validation-log.md from a what-if or remote-storage validation's JSON output,
so that logged numbers come from the outputs, not from hand copies.

usage: scripts/validation_log_tables.py whatifs  OUT/whatifs.json
       scripts/validation_log_tables.py remote   OUT/remote.json
Prints the table, the gate line and the load range to standard output.
"""
from __future__ import annotations

import json
import sys
from typing import Any, Dict, List


def _pct(x: float) -> str:
    return f"{x:+.1f}%"


def _runs(xs: List[float]) -> str:
    return ", ".join(f"{x:.1f}" for x in xs)


def whatifs(report: Dict[str, Any]) -> str:
    lines = [f"Run {report['started']} to {report['finished']}; settings {json.dumps(report['settings'])}.", "",
             "| case | workers | measured median (runs) | spread | predicted | error | without media probe "
             "| load (1 min) | max foreign CPU, steal | scored |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, c in report["cases"].items():
        if "skipped" in c:
            lines.append(f"| {name} | | skipped: {c['skipped']} | | | | | | | |")
            continue
        without = c.get("predicted_without_media_probe")
        load = c.get("load_avg_1min") or [0.0]
        noise = [r["noise"] for r in c.get("runs", [])]
        foreign = (f"{max(n['foreign_cpu_fraction'] for n in noise):.0%}, {max(n['steal_fraction'] for n in noise):.0%}"
                   if noise else "not recorded")
        spread = f"{c['spread_pct']:.1f}%" if "spread_pct" in c else ""
        lines.append(f"| {name} | {c['workers']} | {c['measured_median']:.1f} ({_runs(c['measured_samples_per_s'])}) "
                     f"| {spread} | {c['predicted']:.1f} | {_pct(c['error_pct'])} | "
                     f"{'' if without is None else f'{without:.1f}'} | {min(load):.1f}..{max(load):.1f} | {foreign} "
                     f"| {'yes' if c.get('scored', True) else 'no (foreign load)'} |")
    gate = report["gate"]
    unscored = gate.get("unscored", [])
    verdict = ("FAIL (" + ", ".join(gate["failing"]) + ")" if gate["failing"] else
               "NOT SCORED (" + ", ".join(unscored) + ")" if unscored else "PASS")
    lines += ["", f"Gate (every case within {gate['limit_pct']:g}%): {verdict}."]
    return "\n".join(lines)


def remote(report: Dict[str, Any]) -> str:
    lines = [f"Run {report['started']} to {report['finished']}; settings {json.dumps(report['settings'])}.", "",
             "| first byte (server) | rate per connection | probe: first byte, rate | mode | workers "
             "| measured median (runs) | predicted | error |",
             "|---|---|---|---|---|---|---|---|"]
    failing = 0
    total = 0
    for cfg in report["configs"]:
        probe = cfg["probe"]
        ptxt = f"{1e3 * probe['first_byte_s']:.1f} ms, {probe['per_connection_bytes_per_s'] / 1e6:.2f} MB/s"
        for c in cfg["cases"].values():
            total += 1
            failing += abs(c["error_pct"]) > report.get("gate", {}).get("limit_pct", 10.0)
            lines.append(f"| {cfg['first_byte_ms']:g} ms | {cfg['conn_rate_bytes_per_s'] / 1e6:g} MB/s | {ptxt} "
                         f"| {c['mode']} | {c['workers']} | {c['measured_median']:.1f} "
                         f"({_runs(c['measured_samples_per_s'])}) | {c['predicted']:.1f} | {_pct(c['error_pct'])} |")
    gate = report.get("gate", {})
    lines += ["", f"Gate (every case within {gate.get('limit_pct', 10):g}%): "
              f"{'PASS' if gate.get('pass') else 'FAIL'}, {failing} of {total} cases outside."]
    return "\n".join(lines)


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in ("whatifs", "remote"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        with open(sys.argv[2]) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{sys.argv[2]}: {e}", file=sys.stderr)
        return 3
    try:
        table = whatifs(report) if sys.argv[1] == "whatifs" else remote(report)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        print(f"{sys.argv[2]}: not a {sys.argv[1]} validation report ({type(e).__name__}: {e})", file=sys.stderr)
        return 3
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
