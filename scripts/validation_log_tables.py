#!/usr/bin/python3
"""Markdown tables for docs/validation-log.md from a what-if or remote-storage validation's JSON output,
so that logged numbers come from the outputs, not from hand copies.

usage: scripts/validation_log_tables.py whatifs  OUT/whatifs.json
       scripts/validation_log_tables.py remote   OUT/remote.json
       scripts/validation_log_tables.py remote-summary OUT1/remote.json [OUT2/remote.json ...]
Prints the table, the gate line and the load range to standard output; remote-summary one row per
run: its streamed cases (count, outside the gate, mean |error|, range) and all its cases outside.
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
             "| without CPU probe (error) | load (1 min) | max foreign CPU, steal | scored |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, c in report["cases"].items():
        if "skipped" in c:
            lines.append(f"| {name} | | skipped: {c['skipped']} | | | | | | | | |")
            continue
        without = c.get("predicted_without_media_probe")
        without_cpu = (f"{c['predicted_without_cpu_probe']:.1f} ({_pct(c['error_without_cpu_probe_pct'])})"
                       if "predicted_without_cpu_probe" in c else "")
        load = c.get("load_avg_1min") or [0.0]
        noise = [r["noise"] for r in c.get("runs", [])]
        foreign = (f"{max(n['foreign_cpu_fraction'] for n in noise):.0%}, {max(n['steal_fraction'] for n in noise):.0%}"
                   if noise else "not recorded")
        spread = f"{c['spread_pct']:.1f}%" if "spread_pct" in c else ""
        lines.append(f"| {name} | {c['workers']} | {c['measured_median']:.1f} ({_runs(c['measured_samples_per_s'])}) "
                     f"| {spread} | {c['predicted']:.1f} | {_pct(c['error_pct'])} | "
                     f"{'' if without is None else f'{without:.1f}'} | {without_cpu} | {min(load):.1f}..{max(load):.1f} | {foreign} "
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


def remote_summary_row(path: str, report: Dict[str, Any]) -> str:
    limit = report.get("gate", {}).get("limit_pct", 10.0)
    cases = [c for cfg in report["configs"] for c in cfg["cases"].values()]
    streams = [c["error_pct"] for c in cases if c["mode"] == "stream"]
    outside = sum(abs(c["error_pct"]) > limit for c in cases)
    cells = ([str(len(streams)), str(sum(abs(e) > limit for e in streams)),
              f"{sum(map(abs, streams)) / len(streams):.1f}%", f"{_pct(min(streams))} .. {_pct(max(streams))}"]
             if streams else ["0", "", "", ""])
    return f"| {path} | {report.get('commit', 'not recorded')} | " + " | ".join(cells) + f" | {outside} of {len(cases)} |"


def main() -> int:
    kinds = ("whatifs", "remote", "remote-summary")
    if len(sys.argv) < 3 or sys.argv[1] not in kinds or (sys.argv[1] != "remote-summary" and len(sys.argv) != 3):
        print(__doc__, file=sys.stderr)
        return 2
    rows = ["| run | commit | streamed cases | outside | mean abs error | range | all cases outside |",
            "|---|---|---|---|---|---|---|"]
    for path in sys.argv[2:]:
        try:
            with open(path) as f:
                report = json.load(f)
        except (OSError, ValueError) as e:
            print(f"{path}: {e}", file=sys.stderr)
            return 3
        try:
            if sys.argv[1] == "remote-summary":
                rows.append(remote_summary_row(path, report))
                continue
            table = whatifs(report) if sys.argv[1] == "whatifs" else remote(report)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            print(f"{path}: not a {sys.argv[1].split('-')[0]} validation report ({type(e).__name__}: {e})",
                  file=sys.stderr)
            return 3
        print(table)
    if sys.argv[1] == "remote-summary":
        print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
