"""`python3 -m simreplay_capture.diff_manifest A B`: what differs between two runs' manifests.

A and B are traces (`.jsonl` / `.jsonl.gz`: the header's manifest), preflight outputs (`preflight.json`
or its directory: its `manifest`) or bare manifest JSON files. Prints one line per difference, marked
`MATTERS` or `info` (docs/manifest.md defines which fields matter), then a verdict line. Exit 0 when
nothing that matters differs, 1 when something does, 2 bad command line, 3 an input cannot be read.

    python3 -m simreplay_capture.diff_manifest A B [--scope runs|cases|software] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional, Tuple

# Fields whose difference makes two runs incomparable (docs/manifest.md, "What matters"), in three
# groups: the software stack (with the image and the model revision), the data revisions, and the
# hardware the figures depend on. Dotted prefixes: "versions" covers every key under it. Everything
# else (commit, command, cwd, times, storage, network, notes, loader and preflight config, rank) is
# reported as info: A/B experiments change those on purpose. The same rule as `simreplay diff-manifest`
# (replay/manifest.cc).
SOFTWARE: Tuple[str, ...] = ("versions", "packages.sha256", "container.image_digest", "rocm", "revisions.model")
DATA: Tuple[str, ...] = ("revisions.dataset", "revisions.dataset_files.sha256")
HARDWARE: Tuple[str, ...] = ("hardware.cpu_model", "hardware.cores", "hardware.threads", "hardware.gpus")
# --scope: runs (repetitions of one configuration), cases (cases of one experiment: other data on
# purpose), software (a preflight against a capture for a plan: other hardware on purpose)
SCOPES: Dict[str, Tuple[str, ...]] = {"runs": SOFTWARE + DATA + HARDWARE, "cases": SOFTWARE + HARDWARE,
                                      "software": SOFTWARE}
MATTERS: Tuple[str, ...] = SCOPES["runs"]
# never compared: identical by construction or different in every run
SKIP: Tuple[str, ...] = ("start_time", "t0_monotonic_ns", "t0_time_ns", "packages.list")


class ManifestError(Exception):
    """An input that is not a readable trace, preflight output or manifest (exit 3)."""


def load_manifest(path: str) -> Dict[str, Any]:
    if os.path.isdir(path):
        path = os.path.join(path, "preflight.json")
    if ".jsonl" in os.path.basename(path):
        from .trace import TraceError, iter_lines
        try:
            for _, rec in iter_lines(path, []):
                if not isinstance(rec, dict) or rec.get("type") != "header":
                    raise ManifestError(f"{path}:1: expected a trace header, found {str(rec)[:60]}")
                m = rec.get("manifest")
                if not isinstance(m, dict):
                    raise ManifestError(f"{path}:1: expected a manifest object in the header, found {type(m).__name__}")
                return m
        except (OSError, TraceError) as e:
            raise ManifestError(f"{path}: expected a readable trace, found {e}") from None
        raise ManifestError(f"{path}:1: expected a trace header, found an empty file")
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise ManifestError(f"{path}: expected a readable file, found {e.strerror}") from None
    except ValueError as e:
        raise ManifestError(f"{path}: expected JSON, found {e}") from None
    if not isinstance(doc, dict):
        raise ManifestError(f"{path}: expected a JSON object, found {type(doc).__name__}")
    m = doc.get("manifest", doc) if "schema" in doc else doc
    if not isinstance(m, dict):
        raise ManifestError(f"{path}: expected a manifest object, found {type(m).__name__}")
    return m


def _flatten(x: Any, prefix: str, out: Dict[str, Any]) -> None:
    if isinstance(x, dict) and x:
        for k, v in x.items():
            _flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    else:
        out[prefix] = x


def _under(path: str, prefixes: Tuple[str, ...]) -> bool:
    return any(path == p or path.startswith(p + ".") for p in prefixes)


def _package_changes(a: Dict[str, Any], b: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Per-distribution differences when both manifests list their packages."""
    la = (a.get("packages") or {}).get("list")
    lb = (b.get("packages") or {}).get("list")
    if not isinstance(la, list) or not isinstance(lb, list):
        return []

    def by_name(lst: List[str]) -> Dict[str, str]:
        out: Dict[str, str] = {}
        for s in lst:
            n, _, v = str(s).partition("==")
            out[n] = f"{out[n]} | {v}" if n in out else v
        return out
    da, db = by_name(la), by_name(lb)
    return [{"field": f"packages.{n}", "a": da.get(n), "b": db.get(n), "matters": True}
            for n in sorted(set(da) | set(db)) if da.get(n) != db.get(n)]


def diff(a: Dict[str, Any], b: Dict[str, Any], scope: str = "runs") -> Dict[str, Any]:
    matters_prefixes = SCOPES[scope]
    fa: Dict[str, Any] = {}
    fb: Dict[str, Any] = {}
    _flatten(a, "", fa)
    _flatten(b, "", fb)
    diffs: List[Dict[str, Any]] = []
    unknown: List[str] = []
    for k in sorted(set(fa) | set(fb)):
        if _under(k, SKIP):
            continue
        in_a, in_b = k in fa, k in fb
        va, vb = fa.get(k), fb.get(k)
        if in_a and in_b and va == vb:
            continue
        matters = _under(k, matters_prefixes)
        if matters and (not in_a or not in_b):
            # an older manifest without the field: it cannot be checked, which is not a difference
            unknown.append(k)
            continue
        diffs.append({"field": k, "a": va, "b": vb, "matters": matters})
    if any(d["field"] == "packages.sha256" for d in diffs):
        diffs.extend(_package_changes(a, b))
    matter = [d for d in diffs if d["matters"]]
    return {"differences": diffs, "unknown": unknown, "matters": bool(matter),
            "matters_count": len(matter), "info_count": len(diffs) - len(matter)}


def _show(v: Any) -> str:
    s = json.dumps(v, sort_keys=True, default=str) if not isinstance(v, str) else v
    return s if len(s) <= 100 else s[:97] + "..."


def report_text(res: Dict[str, Any], a: str, b: str) -> str:
    lines = [f"--- A {a}", f"+++ B {b}"]
    for d in sorted(res["differences"], key=lambda d: (not d["matters"], d["field"])):
        lines.append(f"{'MATTERS' if d['matters'] else 'info   '} {d['field']}: {_show(d['a'])} -> {_show(d['b'])}")
    for k in res["unknown"]:
        lines.append(f"unknown {k}: recorded in only one manifest (an older writer), not compared")
    lines.append(f"{res['matters_count']} difference(s) that matter, {res['info_count']} informational: "
                 + ("the runs are NOT comparable as they are" if res["matters"] else "comparable"))
    return "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m simreplay_capture.diff_manifest",
                                 description="what differs between two runs' manifests")
    ap.add_argument("a", help="trace, preflight.json (or its directory), or manifest JSON")
    ap.add_argument("b")
    ap.add_argument("--json", help="also write the differences as JSON here")
    ap.add_argument("--scope", choices=sorted(SCOPES), default="runs",
                    help="what matters: runs (default), cases (no data revisions), software (software only)")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    try:
        ma, mb = load_manifest(args.a), load_manifest(args.b)
    except ManifestError as e:
        sys.stderr.write(f"{e}\n")
        return 3
    res = diff(ma, mb, args.scope)
    sys.stdout.write(report_text(res, args.a, args.b))
    if args.json:
        with open(args.json + ".tmp", "w") as f:
            json.dump(dict(res, a=args.a, b=args.b), f, indent=1, sort_keys=True, default=str)
        os.replace(args.json + ".tmp", args.json)
    return 1 if res["matters"] else 0


if __name__ == "__main__":
    sys.exit(main())
