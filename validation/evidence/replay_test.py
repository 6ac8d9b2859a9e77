#!/usr/bin/python3
"""The evidence replay's own checks (ctest evidence_replay_checks), on the first development recording:
1. a deliberately worsened model (every recorded sample's decode, CPU and wall time x1.2, so the model
   calibrates decode costs 1.2x too high) fails the gate, naming the cases that got worse;
2. a recording whose measurement side differs from the tree's (its harness's digest edited) asks for a
   re-recording by set name (exit 2), and nothing is replayed;
3. a recording that has no baseline entry fails the gate by name;
4. replaying the same recording twice gives byte-identical results (validation.json and replay.json);
5. on the newest advice recording: a grid that lacks the configuration tune recommends (its runs taken
   out of the recording) is a coverage failure naming the pipeline and the configuration.

    validation/evidence/replay_test.py --bin build/simreplay --out DIR
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from sets import RECORDINGS  # noqa: E402

REPLAY = os.path.join(HERE, "replay.py")


def replay(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, REPLAY, *args], capture_output=True, text=True)


def check(condition: bool, what: str, proc: subprocess.CompletedProcess) -> bool:
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        print(proc.stdout[-3000:] + proc.stderr[-2000:])
    return condition


def copy_recording(src: str, root: str, name: str, set_name: str = "development") -> str:
    dest = os.path.join(root, set_name, name)
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(src, dest)
    return dest


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    dev = os.path.join(RECORDINGS, "development")
    recs = sorted(os.listdir(dev)) if os.path.isdir(dev) else []
    if not recs:
        print(f"replay_test: no development recording under {dev}")
        return 1
    ok = True

    p = replay("development", "--bin", args.bin, "--out", os.path.join(args.out, "worsened"), "--perturb-decode", "1.2")
    named = [line for line in p.stdout.splitlines() if line.startswith("REGRESSION development/")]
    ok &= check(p.returncode == 1 and bool(named),
                f"decode costs x1.2 fail the replay gate by name ({len(named)} line(s), e.g. "
                f"{named[0] if named else 'none'})", p)

    root = os.path.join(args.out, "stale-recordings")
    rec = copy_recording(os.path.join(dev, recs[0]), root, recs[0])
    meta_path = os.path.join(rec, "recording.json")
    meta = json.load(open(meta_path))
    meta["measurement_digest"]["validation/suite/run.sh"] = "0" * 64
    meta["measurement_digest"]["*"] = "0" * 64
    json.dump(meta, open(meta_path, "w"))
    p = replay("--recordings", root, "--bin", args.bin, "--out", os.path.join(args.out, "stale"))
    ok &= check(p.returncode == 2 and "re-record development" in p.stdout and "validation/suite/run.sh" in p.stdout,
                "a changed harness asks to re-record the set, naming the file", p)

    root = os.path.join(args.out, "unbaselined-recordings")
    copy_recording(os.path.join(dev, recs[0]), root, "29991231T2359-0000000")
    p = replay("--recordings", root, "--bin", args.bin, "--out", os.path.join(args.out, "unbaselined"))
    ok &= check(p.returncode == 1 and "development/29991231T2359-0000000: no baseline" in p.stdout,
                "a recording without a baseline fails by name", p)
    first = os.path.join(args.out, "determinism")
    outputs = []
    for attempt in range(2):
        p = replay("development", "--bin", args.bin, "--out", first)
        rec_out = os.path.join(first, "development", recs[-1])
        outputs.append((open(os.path.join(rec_out, "result", "validation.json"), "rb").read()
                        if os.path.exists(os.path.join(rec_out, "result", "validation.json")) else b"",
                        open(os.path.join(first, "replay.json"), "rb").read()
                        if os.path.exists(os.path.join(first, "replay.json")) else b""))
    ok &= check(bool(outputs[0][0]) and outputs[0] == outputs[1],
                "two replays of the same recording give the same bytes (validation.json, replay.json)", p)
    ok &= check_coverage(args)
    return 0 if ok else 1


def check_coverage(args: argparse.Namespace) -> bool:
    """The newest advice recording without the runs of the configuration tune recommends for its first
    pipeline (read from a replay of the untouched recording): the replay names it as a coverage failure."""
    advice = os.path.join(RECORDINGS, "advice")
    recs = sorted(os.listdir(advice)) if os.path.isdir(advice) else []
    if not recs:
        print("ok   no advice recording: coverage check skipped")
        return True
    p = replay("advice", "--bin", args.bin, "--out", os.path.join(args.out, "advice"))
    result = os.path.join(args.out, "advice", "advice", recs[-1], "result", "advice-validation.json")
    if not os.path.exists(result):
        return check(False, "the advice recording replays", p)
    first = json.load(open(result))["results"][0]
    pipeline, recommended = first["pipeline"], first["recommended"]
    root = os.path.join(args.out, "uncovered-recordings")
    rec = copy_recording(os.path.join(advice, recs[-1]), root, recs[-1], "advice")
    unpacked = os.path.join(args.out, "uncovered-unpacked")
    shutil.rmtree(unpacked, ignore_errors=True)
    with tarfile.open(os.path.join(rec, "runs.tar.gz")) as tar:
        tar.extractall(unpacked)
    runs_path = os.path.join(unpacked, "runs.json")
    doc = json.load(open(runs_path))
    doc["runs"] = [r for r in doc["runs"] if not (r["pipeline"] == pipeline and r["config"] == recommended)]
    json.dump(doc, open(runs_path, "w"))
    with tarfile.open(os.path.join(rec, "runs.tar.gz"), "w:gz") as tar:
        for name in sorted(os.listdir(unpacked)):
            tar.add(os.path.join(unpacked, name), arcname=name)
    p = replay("--recordings", root, "--bin", args.bin, "--out", os.path.join(args.out, "uncovered"))
    return check(p.returncode == 1 and f"{pipeline}: tune recommends {recommended}, outside the recorded grid" in p.stdout,
                 f"a grid without tune's recommendation ({pipeline}: {recommended}) is a coverage failure by name", p)


if __name__ == "__main__":
    sys.exit(main())
