#!/usr/bin/env python3
"""Markdown tables of scripts/gpu_check.sh runs, from their OUT/summary.json files (docs/gpu-check.md).

    scripts/gpu_check_table.py SUMMARY.json [SUMMARY.json ...]

One table per run: the run's status, device, interpreter, torch and total time, then each sub-check's
verdict, time and the figures that say what it measured. Exit 2 on a file that is not a gpu-check
summary (named, with the reason).
"""
import json
import sys

SCHEMA = "simreplay.gpu-check/1"


def _ms(x):
    return f"{x:.2f} ms" if isinstance(x, (int, float)) else "-"


def figures(check):
    """The sub-check's measured figures in one cell."""
    d = check.get("detail") or {}
    name = check["name"]
    if check.get("skipped") or "why" in d:
        return str(d.get("why", "")).replace("|", "/").strip()[:160]
    if name == "env":
        return f"torch {d.get('torch')}, CUDA {d.get('cuda_build')}, NCCL {d.get('nccl')}, {', '.join(d.get('devices') or [])}"
    if name in ("capture_cuda", "bench_cuda"):
        return (f"{d.get('accelerator')}: {d.get('steps')} steps, mean compute {_ms(d.get('mean_compute_ms'))}, "
                f"H2D {_ms(d.get('mean_h2d_ms'))}, pin {_ms(d.get('mean_pin_ms'))}; "
                f"{d.get('batches_with_h2d')}/{d.get('batches')} batches with timed H2D")
    if name == "preflight_cuda":
        mem = d.get("memory") or {}
        failed = d.get("failed_checks") or []
        peak = mem.get("cuda_max_allocated_bytes")
        peak_s = f"{peak / 2**20:.1f} MiB" if isinstance(peak, (int, float)) else "-"
        return (f"{d.get('status')} on {d.get('accelerator')}; CUDA peak allocated {peak_s}; "
                + (f"failed: {'; '.join(failed)[:200]}" if failed else "every check passed"))
    if name == "probe_nccl":
        return f"backend {d.get('backend')}, {d.get('world_size')} rank(s)"
    if name == "calibrate":
        sc = d.get("self_check") or {}
        err = sc.get("max_abs_train_throughput_error_pct")
        return (f"self-check |throughput error| {err:.2f}% (target {sc.get('target_pct')}%)"
                if isinstance(err, (int, float)) else "no self-check figure")
    if name == "plan_preflight":
        step = d.get("step_time") or {}
        cand = d.get("candidate") or {}
        return (f"on {d.get('measured_on')}: step_time_s {step.get('status')} "
                f"({cand.get('step_time_s')} s), fits memory {cand.get('fits_memory')}")
    return ""


def table(path):
    try:
        doc = json.load(open(path))
    except (OSError, ValueError) as e:
        raise SystemExit(f"{path}: not readable as JSON ({e})")
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise SystemExit(f"{path}: expected schema {SCHEMA!r}, found {doc.get('schema') if isinstance(doc, dict) else type(doc).__name__!r}")
    env = next((c.get("detail") or {} for c in doc["checks"] if c["name"] == "env"), {})
    lines = [f"**{doc['status'].upper()}** on {doc['device']}, finished {doc['finished']}, {doc['total_s']:.0f} s, "
             f"`{doc['python']}` (torch {env.get('torch', '?')})", "",
             "| sub-check | verdict | seconds | what it measured |", "|---|---|---|---|"]
    for c in doc["checks"]:
        verdict = "skip" if c.get("skipped") else "PASS" if c.get("pass") else "FAIL"
        lines.append(f"| `{c['name']}` | {verdict} | {c.get('seconds', 0):.1f} | {figures(c)} |")
    return "\n".join(lines)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    try:
        print("\n\n".join(table(p) for p in argv))
    except SystemExit as e:
        print(f"gpu_check_table: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
