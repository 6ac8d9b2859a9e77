#!/usr/bin/env python3
"""The supervisor's kill / restart logic on a tiny job (no torch, a few seconds): every scheduled failure
before the end kills the job (or restarts a restart under way), each relaunch waits the delay, the
job resumes from its last checkpoint and finishes its target; a failure after the end never happens.
Run: python3 validation/minijob/supervisor_test.py (ctest: minijob_supervisor)."""
from __future__ import annotations

import json
import os
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import supervisor  # noqa: E402

# A job of STEPS steps of 0.02 s that saves its step count every 5 steps (write, fsync, rename) and
# resumes from it; its events as job.py writes them.
TINY_JOB = textwrap.dedent("""
    import json, os, sys, time
    ckpt, events, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ev = open(events, "a")
    def emit(name, **kw):
        ev.write(json.dumps(dict(event=name, t=time.time(), **kw)) + "\\n"); ev.flush()
    emit("start")
    step = 0
    if os.path.exists(ckpt):
        step = int(open(ckpt).read())
        emit("resumed", step=step, load_s=0.0)
    emit("first_batch", step=step)
    while step < steps:
        time.sleep(0.02)
        step += 1
        emit("step", n=step, t0=time.time())
        if step % 5 == 0 or step == steps:
            with open(ckpt + ".tmp", "w") as f:
                f.write(str(step)); f.flush(); os.fsync(f.fileno())
            os.rename(ckpt + ".tmp", ckpt)
            emit("ckpt", n=step, dur_s=0.0, bytes=1)
    emit("done", n=step)
""")


class SupervisorTest(unittest.TestCase):
    def run_tiny(self, failures, delay=0.3, steps=60):
        d = tempfile.mkdtemp(prefix="minijob-supervisor-test-")
        job = os.path.join(d, "job.py")
        with open(job, "w") as f:
            f.write(TINY_JOB)
        events = os.path.join(d, "events.jsonl")
        cmd = [sys.executable, job, os.path.join(d, "ckpt"), events, str(steps)]
        return supervisor.run_job(cmd, events, failures, delay, os.path.join(d, "log"))

    def check_consistent(self, rec, delay, steps):
        ev = rec["events"]
        self.assertEqual([e["s"] for e in ev], sorted(e["s"] for e in ev))
        launches = [e for e in ev if e["event"] == "launch"]
        self.assertEqual(len(launches), rec["launches"])
        self.assertEqual(rec["launches"], 1 + len([e for e in ev if e["event"] == "kill"]))
        # Each relaunch waits the delay after the failure before it.
        failures = [e for e in ev if e["event"] in ("kill", "failure_during_restart")]
        for launch in launches[1:]:
            last = max(f["s"] for f in failures if f["s"] < launch["s"])
            self.assertGreaterEqual(launch["s"] - last, delay - 0.01)
        # Every launch after the first resumes from the last save committed before it: the last
        # reported one, or the next one when the kill came between its rename and its event (the job
        # reports a save after committing it), in which case that step had been reached.
        saved, last_step = 0, 0
        for e in ev:
            if e["event"] == "ckpt":
                saved = e["n"]
            if e["event"] == "step":
                last_step = e["n"]
            if e["event"] == "resumed":
                self.assertIn(e["step"], (saved, saved + 5))
                self.assertLessEqual(e["step"], last_step)
                saved = e["step"]
        done = [e for e in ev if e["event"] == "done"]
        self.assertEqual(len(done), 1)
        self.assertEqual(done[0]["n"], steps)
        self.assertEqual(ev[-1]["event"], "exit")

    def test_no_failure(self):
        rec = self.run_tiny([])
        self.assertEqual((rec["launches"], rec["kills"]), (1, 0))
        self.check_consistent(rec, 0.3, 60)

    def test_kill_restart_and_a_failure_during_the_restart(self):
        # 0.8 s: training under way (a start takes ~0.05 s, 60 steps ~1.3 s); 0.9 s: inside the 0.3 s
        # delay, the restart starts again; 60 s: after the end, never happens.
        rec = self.run_tiny([0.8, 0.9, 60.0])
        self.assertEqual(rec["kills"], 2)
        self.assertEqual(rec["launches"], 2)
        kinds = [e["event"] for e in rec["events"] if e["event"] in ("kill", "failure_during_restart")]
        self.assertEqual(kinds, ["kill", "failure_during_restart"])
        self.assertAlmostEqual(rec["failures_applied_s"][0], 0.8, delta=0.05)
        launch2 = [e for e in rec["events"] if e["event"] == "launch"][1]
        self.assertGreaterEqual(launch2["s"], 0.9 + 0.3 - 0.01)
        self.assertTrue(any(e["event"] == "resumed" for e in rec["events"]))
        self.check_consistent(rec, 0.3, 60)
        # The lost work: steps done after the last save before the kill are done again.
        steps = [e["n"] for e in rec["events"] if e["event"] == "step"]
        self.assertGreater(len(steps), 60 - 1)
        self.assertEqual(max(steps), 60)
        json.dumps(rec)  # the record is plain JSON


if __name__ == "__main__":
    unittest.main()
