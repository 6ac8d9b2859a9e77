#!/usr/bin/env python3
"""Renders the accuracy figures README.md and docs/validation.md quote from the outputs of one
validation run, so that no figure is copied by hand (docs/validation.md, "Current numbers").

    scripts/validation_numbers.py --replay build/evidence-replay [--write | --check]
    scripts/validation_numbers.py [--suite build/validation-suite] [--multinode build/validation-multinode] [--write]

With --replay (what README.md and docs/validation.md quote, and what CI checks byte for byte: ctest
validation_numbers): the newest recording of each evidence set as replayed by the code under test
(validation/evidence/replay.py, docs/evidence-format.md), each titled with its recording's window,
commit and host, the page-fault cost and steal the runs saw beside it. --check exits 1, naming the file,
when a document's block differs from what the replay renders (run --write and commit the result).
Without --replay, a fresh run's outputs:

Reads SUITE/validation.json (development cases), SUITE/heldout/validation.json and
SUITE/heldout-video/validation.json (the frozen held-out sets), and with --multinode the multi-node
suite's multinode.json. Prints the Markdown block; with
--write it replaces the text between `<!-- validation-numbers:begin -->` and
`<!-- validation-numbers:end -->` in README.md and docs/validation.md. Every figure names the run it
came from: the UTC window, the commit (and whether the tree was dirty) and the machine.
Exit 0 written/printed; 1 a validation.json is missing or unreadable (nothing is written).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from typing import Any, Dict, List, Optional, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "<!-- validation-numbers:begin -->", "<!-- validation-numbers:end -->"
SETS = [("development", "", "development cases (`validation/suite/suite.json`: the cases the model was "
         "developed on)"),
        ("heldout", "heldout", "held-out, other media mix (`validation/suite/heldout.json`, frozen)"),
        ("heldout-video", "heldout-video", "held-out, video-heavy (`validation/suite/heldout-video.json`, frozen)")]
TRAIN = "train_throughput_samples_per_s"
IDLE = "gpu_idle_fraction"


def load(path: str) -> Dict[str, Any]:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"validation_numbers: {path}: {e}")


def factor(matrix_row: Dict[str, Any]) -> str:
    parts = [f"{k}={json.dumps(matrix_row['config'][k])}" for k in matrix_row["factors_vs_base"]]
    return ", ".join(parts) if parts else "(base)"


def limit_text(t: Dict[str, Any]) -> str:
    per_case = [c for c in t.get("per_case", []) if c.get("train_throughput_limit_pct") is not None]
    case_limit = f", every case <= {per_case[0]['train_throughput_limit_pct']:g}%" if per_case else ""
    m = t["median_abs_train_throughput_error_pct"]
    g = t["max_abs_gpu_idle_error_pp"]
    return (f"median <= {m.get('limit', float('nan')):g}%{case_limit}, GPU idle <= {g.get('limit', float('nan')):g} pp")


def gated_pass(title: str, v: Dict[str, Any]) -> bool:
    """What CI gates on: every check on the development set; on the held-out sets every check but the
    persistence comparison (validation/suite/run.sh)."""
    if title.startswith("development"):
        return bool(v["pass"])
    t = v["thresholds"]
    return bool((not t["enabled"] or t.get("error_limits_pass", False)) and v["correctness"]["pass"]
                and v["completeness"]["pass"])


def render_set(title: str, v: Dict[str, Any]) -> List[str]:
    t = v["thresholds"]
    m = v["manifest"]
    started = m.get("runs_started_utc") or ["?", "?"]
    commit = (m.get("commit") or "unknown")[:7] + (" (dirty tree)" if m.get("dirty") else "")
    hw = m.get("hardware", {})
    out = [f"**{title}**: {'PASS' if gated_pass(title, v) else 'FAIL'} ({limit_text(t)}). Runs {started[0]} to "
           f"{started[-1]}, commit {commit}, {hw.get('cores', '?')}-core {hw.get('cpu_model', '?')} host, "
           f"{v['method']['repetitions']} repetitions per case, accelerator {v.get('accelerator', '?')}.",
           "",
           "| case | factor | predicted from | CPU probe | train pred | train meas (95% CI) | error | run-to-run cv | GPU idle error |",
           "|---|---|---|---|---|---|---|---|---|"]
    for row, mx in zip(v["results"], v["matrix"]):
        tr = row["metrics"][TRAIN]
        idle = row["metrics"][IDLE]
        meas = tr.get("measured")
        out.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            row["case"], factor(mx), mx["predicted_from"], mx.get("cpu_probe", "–"),
            f"{tr['predicted']:.1f}" if "predicted" in tr else "not predicted",
            f"{meas['median']:.1f} ({meas['ci'][0]:.1f}-{meas['ci'][1]:.1f})" if meas else "–",
            f"{tr['error']:+.1f}%" if "error" in tr else "–",
            f"{100 * meas['cv']:.1f}%" if meas else "–",
            f"{idle['error']:+.1f} pp" if "error" in idle else "–"))
    med = t["median_abs_train_throughput_error_pct"]
    worst = max((abs(c["train_throughput_error_pct"]) for c in t.get("per_case", [])
                 if c.get("train_throughput_error_pct") is not None), default=None)
    idle_worst = t["max_abs_gpu_idle_error_pp"]
    out += ["",
            f"Median |throughput error| **{med['value']:.1f}%** over {med.get('cases', 0)} cases, worst case "
            + (f"**{worst:.1f}%**" if worst is not None else "–")
            + f", worst |GPU idle error| **{idle_worst['value']:.1f} pp** ({idle_worst.get('case', '?')})."
            if med.get("value") is not None else "No case was predicted.",
            ""]
    p = t.get("beats_persistence", {})
    if p.get("model_median_abs_error_pct") is not None:
        out += [f"Persistence baseline (each case predicted as its calibrating case's measurement): model "
                f"{p['model_median_abs_error_pct']:.1f}% vs baseline {p['baseline_median_abs_error_pct']:.1f}%, "
                f"margin {p['margin_pp']:g} pp required: {'pass' if p['pass'] else 'FAIL'}"
                f"{'' if title.startswith('development') else ' (reported; held-out sets gate on the error limits, correctness and completeness)'}.",
                ""]
    if not v["completeness"].get("pass", False):
        out += ["Completeness FAILED: " + "; ".join(v["completeness"].get("problems", [])), ""]
    return out


def pct(v: Optional[float]) -> str:
    return "–" if v is None else f"{v:.1f}%"


def render_multinode(out_dir: str, replayed: bool = False) -> List[str]:
    """The multi-node suite's gates and table from OUT/multinode.json (validation/suite/multinode.py).
    REPLAYED: a re-analysis of recorded runs, whose analysis time and commit are not the figures' own."""
    doc = load(os.path.join(out_dir, "multinode.json"))
    sys.path.insert(0, os.path.join(REPO, "validation", "suite"))
    import multinode  # noqa: E402  (its doc_table renders the per-case table)
    t, beyond, fresh = doc["thresholds"], doc["beyond_testbed"], doc["fresh_cases"]
    gated = [r["case"] for r in doc["results"] if r.get("held_by_testbed")]
    lines = [f"**Multi-node cases** ({doc['spec'].get('name', 'multi-node suite')}: real DDP runs across network namespaces, "
             f"predicted through the cluster model): {'PASS' if doc['pass'] else 'FAIL'}. "
             + ("" if replayed else f"Analysed {doc.get('analysed_utc', '?')}, commit {doc.get('commit', '?')}, "
                                    f"{doc['elapsed_s']:.0f} s. ")
             + f"Over the "
             f"{len(gated)} cases the host holds (gated): median |throughput error| "
             f"**{pct(t['median_abs_train_throughput_error_pct']['value'])}** (limit "
             f"{t['median_abs_train_throughput_error_pct']['limit']}%), worst "
             f"**{pct(t['max_abs_train_throughput_error_pct']['value'])}** (limit "
             f"{t['max_abs_train_throughput_error_pct']['limit']}%), worst |step-time error| "
             f"**{pct(t['max_abs_step_time_error_pct']['value'])}** (limit {t['max_abs_step_time_error_pct']['limit']}%); "
             f"correctness {'pass' if doc['correctness']['pass'] else 'FAIL'} over {doc['correctness']['runs_checked']} runs.",
             ""]
    if beyond["cases"]:
        lines += [f"Beyond the testbed (reported, not gated: {beyond['note']}): {', '.join(beyond['cases'])}: worst "
                  f"|throughput error| {pct(beyond['max_abs_train_throughput_error_pct'])}, worst |step-time error| "
                  f"{pct(beyond['max_abs_step_time_error_pct'])}.", ""]
    if fresh["cases"]:
        lines += [f"Fresh cases ({', '.join(fresh['cases'])}): median |throughput error| "
                  f"{pct(fresh['median_abs_train_throughput_error_pct'])}, worst |step-time error| "
                  f"{pct(fresh['max_abs_step_time_error_pct'])}.", ""]
    nominal = doc["nominal"]
    lines += [f"From nominal link rates instead of the probe (not gated): median "
              f"{pct(nominal['median_abs_train_throughput_error_pct'])}, worst "
              f"{pct(nominal['max_abs_train_throughput_error_pct'])}.", "", multinode.doc_table(doc), ""]
    return lines


def recording_line(rec: Dict[str, Any]) -> str:
    """Where a replayed set's reality came from: the recording's window, commit and host."""
    h = rec["host"]
    page = h.get("fresh_page_touch_us_median")
    steal = h.get("steal_fraction_max")
    return (f"Recorded {rec['recorded_utc_start']} to {rec['recorded_utc_end']} (commit {rec['commit'][:7]}) on a "
            f"{h.get('cores', '?')}-core {h.get('cpu_model', '?')} host, a fresh page "
            + (f"{page:.1f} us" if page is not None else "not measured")
            + ", steal at most " + (f"{100 * steal:.1f}%" if steal is not None else "unknown")
            + "; replayed by the code under test (`validation/evidence/replay.py`).")


def newest_recordings(replay_dir: str) -> Dict[str, Tuple[str, Dict[str, Any]]]:
    """Set name -> (its newest recording's replay directory, its recording.json)."""
    sys.path.insert(0, os.path.join(REPO, "validation", "evidence"))
    from sets import RECORDINGS  # noqa: E402
    newest: Dict[str, Tuple[str, Dict[str, Any]]] = {}
    for name in sorted(os.listdir(RECORDINGS)):
        recs = sorted(os.listdir(os.path.join(RECORDINGS, name)))
        if recs:
            newest[name] = (os.path.join(replay_dir, name, recs[-1]),
                            load(os.path.join(RECORDINGS, name, recs[-1], "recording.json")))
    return newest


def render_replay(replay_dir: str) -> str:
    lines = ["_Generated by `scripts/validation_numbers.py --replay` from the replay of the newest recording of "
             "each evidence set (docs/evidence-format.md); CI checks it byte for byte; do not edit by hand._", ""]
    newest = newest_recordings(replay_dir)
    for name, _sub, title in SETS:
        if name not in newest:
            lines += [f"**{title}**: no recording.", ""]
            continue
        work, rec = newest[name]
        lines += [recording_line(rec), ""] + render_set(title, load(os.path.join(work, "result", "validation.json")))
    if "multinode" in newest:
        work, rec = newest["multinode"]
        lines += [recording_line(rec), ""] + render_multinode(os.path.join(work, "runs"), replayed=True)
    if "advice" in newest:
        work, rec = newest["advice"]
        lines += [recording_line(rec), ""] + render_advice(load(os.path.join(work, "result", "advice-validation.json")))
    if "whatifs" in newest:
        work, rec = newest["whatifs"]
        lines += [recording_line(rec), ""] + render_whatifs(load(os.path.join(work, "result", "whatifs.json")))
    if "remote" in newest:
        work, rec = newest["remote"]
        lines += [recording_line(rec), ""] + render_remote(load(os.path.join(work, "result", "remote.json")))
    return "\n".join(lines).rstrip() + "\n"


def render_advice(doc: Dict[str, Any]) -> List[str]:
    """The advice pipelines: tune's recommendation against the recorded grid (validation/advice/run.py)."""
    worst = max((r["regret"] for r in doc["results"] if r["regret"] is not None), default=None)
    uncovered = [r["pipeline"] for r in doc["results"] if not r["recommended_in_grid"]]
    meets = worst is not None and worst <= doc["regret_limit"] and not uncovered
    head = (f"**Advice** (`validation/advice/run.py`): worst regret {pct(None if worst is None else 100 * worst)} "
            f"(target {100 * doc['regret_limit']:g}% on every pipeline, whatever its runs' load: "
            f"{'pass' if meets else 'FAIL'})"
            + (f"; outside the recorded grid: {', '.join(uncovered)}" if uncovered else "") + ".")
    import importlib.util
    sys.path.insert(0, os.path.join(REPO, "validation", "advice"))
    spec = importlib.util.spec_from_file_location("advice_run", os.path.join(REPO, "validation", "advice", "run.py"))
    advice = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(advice)  # type: ignore[union-attr]  (its markdown renders the per-pipeline table)
    table = advice.markdown(doc["results"], doc["meta"]).splitlines()[2:]  # without its own provenance line
    return [head, ""] + table + [""]


def render_remote(doc: Dict[str, Any]) -> List[str]:
    """Reads over HTTP from nginx, each case predicted from a local capture and the configuration's probe
    (validation/remote/run.py): one row per server configuration."""
    gate = doc["gate"]
    errors = [c["error_pct"] for cfg in doc["configs"] for c in cfg["cases"].values()]
    lines = [f"**Remote storage** (`validation/remote/run.py`): {len(errors)} cases, median |error| "
             f"{pct(statistics.median(abs(e) for e in errors))}; every case within {gate['limit_pct']:g}%: "
             + ("pass" if gate["pass"] else f"FAIL ({len(gate['failing'])} cases)") + ".", "",
             "| first byte | per connection | cases | median error | worst case |", "|---|---|---|---|---|"]
    for cfg in doc["configs"]:
        cases = cfg["cases"]
        worst = max(cases, key=lambda n: abs(cases[n]["error_pct"]))
        lines.append(f"| {cfg['first_byte_ms']:g} ms | {cfg['conn_rate_bytes_per_s'] / 1e6:g} MB/s | {len(cases)} | "
                     f"{pct(statistics.median(abs(c['error_pct']) for c in cases.values()))} | "
                     f"{worst} {cases[worst]['error_pct']:+.1f}% |")
    return lines + [""]


def render_whatifs(doc: Dict[str, Any]) -> List[str]:
    """The media and storage what-ifs, each predicted from the base case (validation/whatifs/run.py)."""
    gate = doc["gate"]
    verdict = (f"FAIL ({', '.join(gate['failing'])})" if gate["failing"] else
               f"not scored: runs under foreign load ({', '.join(gate['unscored'])})" if gate["unscored"] else "pass")
    lines = [f"**What-ifs** (`validation/whatifs/run.py`): every case within {gate['limit_pct']:g}%: {verdict}.",
             "", "| case | workers | measured samples/s (runs) | predicted | error | run-to-run spread | without media probe |",
             "|---|---|---|---|---|---|---|"]
    for c, e in doc["cases"].items():
        if "skipped" in e:
            lines.append(f"| {c} | | skipped: {e['skipped']} | | | | |")
            continue
        lines.append(f"| {c} | {e['workers']} | {e['measured_median']:.1f} ({len(e['measured_samples_per_s'])}) | "
                     f"{e['predicted']:.1f} | {e['error_pct']:+.1f}% | {e['spread_pct']:.1f}% | "
                     + (f"{e['error_without_media_probe_pct']:+.1f}%" if "error_without_media_probe_pct" in e else "")
                     + " |")
    return lines + [""]


def render(suite_dir: str, multinode_dir: Optional[str]) -> str:
    lines = ["_Generated by `scripts/validation_numbers.py` from the outputs of one run of "
             "`validation/suite/run.sh`" + (" and of the multi-node suite" if multinode_dir else "")
             + "; do not edit by hand._", ""]
    for _name, sub, title in SETS:
        path = os.path.join(suite_dir, sub, "validation.json")
        lines += render_set(title, load(path))
    if multinode_dir:
        lines += render_multinode(multinode_dir)
    return "\n".join(lines).rstrip() + "\n"


def current_block(path: str) -> Optional[str]:
    with open(path) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        return None
    return text.split(BEGIN, 1)[1].split(END, 1)[0].lstrip("\n")


def replace_block(path: str, block: str) -> None:
    with open(path) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"validation_numbers: {path}: no {BEGIN} ... {END} block")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(head + BEGIN + "\n" + block + END + tail)
    os.replace(tmp, path)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default=os.path.join(REPO, "build", "validation-suite"))
    ap.add_argument("--multinode", help="also the multi-node suite's OUT (e.g. build/validation-multinode)")
    ap.add_argument("--replay", metavar="DIR", help="the evidence replay's --out (e.g. build/evidence-replay)")
    ap.add_argument("--write", action="store_true", help="update README.md and docs/validation.md")
    ap.add_argument("--check", action="store_true", help="exit 1 when README.md or docs/validation.md differ")
    args = ap.parse_args(argv)
    block = render_replay(args.replay) if args.replay else render(args.suite, args.multinode)
    if args.check:
        stale = [doc for doc in ("README.md", os.path.join("docs", "validation.md"))
                 if current_block(os.path.join(REPO, doc)) != block]
        for doc in stale:
            print(f"validation_numbers: {doc}: its figures differ from the replay's (scripts/validation_numbers.py "
                  f"--replay {args.replay or '...'} --write, then commit)")
        return 1 if stale else 0
    if args.write:
        for doc in ("README.md", os.path.join("docs", "validation.md")):
            replace_block(os.path.join(REPO, doc), block)
    else:
        sys.stdout.write(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
