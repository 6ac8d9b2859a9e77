#!/usr/bin/env python3
"""The scheduler of the miniature job (docs/planning.md, "Checked against real jobs").

Launches the job as a subprocess in its own process group, kills the whole group with SIGKILL at each
failure time (seconds since the job's first launch), waits a fixed restart delay (detection and
rescheduling, as a scheduler would) and launches it again, until it exits having done its target. A
failure that falls inside a restart (during the delay, or while the relaunched job starts up) restarts
the restart from that moment, as the planner's replay does. Failure times after the job's end never
happen. Every event is recorded with its time: the supervisor's (launch, kill, exit, finish) and the
job's own (docs in job.py), merged into one list in time order.

Usage as a module: run_job(...) -> record. Command line (for a quick look):
  supervisor.py --failures 12.5,30 --restart-delay-s 1 --events E.jsonl -- python3 job.py ...
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

PR_SET_CHILD_SUBREAPER = 36
POLL_S = 0.005  # how late a kill may land after its time (the recorded kill time is the real one)


def become_subreaper() -> bool:
    """Orphaned DataLoader workers of a killed job are re-parented here instead of to init, so that they
    are reaped here and their CPU counts as this run's own (resource.RUSAGE_CHILDREN), not as foreign."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def reap_orphans(timeout_s: float = 2.0) -> int:
    """Wait for every remaining child (the killed job's workers); call only when no job is running."""
    reaped, end = 0, time.time() + timeout_s
    while time.time() < end:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            time.sleep(0.01)
        else:
            reaped += 1
    return reaped


def read_events(path: str) -> List[Dict[str, Any]]:
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:  # a line cut by the SIGKILL (never seen: one write per line)
                    pass
    return out


def run_job(cmd: Sequence[str], events_path: str, failures_s: Sequence[float], restart_delay_s: float,
            log_path: str, env: Optional[Dict[str, str]] = None, max_launches: int = 50) -> Dict[str, Any]:
    """Runs the job to completion under the failure schedule. Returns {wall_s, launches, kills,
    failures_applied_s, events (time order, each with `s`: seconds since the first launch)}."""
    become_subreaper()
    failures = sorted(failures_s)
    mine: List[Dict[str, Any]] = []
    kills: List[float] = []
    t0 = time.time()
    next_fail = 0  # index into failures
    launch_at = t0
    launches = 0
    with open(log_path, "a") as log:
        while True:
            # The restart delay, restarted by every failure that falls inside it.
            while True:
                now = time.time()
                if launch_at <= now:
                    break
                nxt = t0 + failures[next_fail] if next_fail < len(failures) else float("inf")
                if nxt < launch_at:
                    time.sleep(max(0.0, nxt - now))
                    mine.append({"event": "failure_during_restart", "t": time.time(),
                                 "scheduled_s": failures[next_fail]})
                    kills.append(time.time() - t0)
                    next_fail += 1
                    launch_at = time.time() + restart_delay_s
                    continue
                time.sleep(launch_at - now)
            if launches >= max_launches:
                raise RuntimeError(f"job not finished after {launches} launches")
            launches += 1
            mine.append({"event": "launch", "t": time.time(), "launch": launches})
            proc = subprocess.Popen(list(cmd), stdout=log, stderr=log, env=env, start_new_session=True)
            killed = False
            while True:
                rc = proc.poll()
                if rc is not None:
                    break
                if next_fail < len(failures) and time.time() >= t0 + failures[next_fail]:
                    os.killpg(proc.pid, signal.SIGKILL)
                    tk = time.time()
                    mine.append({"event": "kill", "t": tk, "scheduled_s": failures[next_fail]})
                    kills.append(tk - t0)
                    next_fail += 1
                    proc.wait()
                    killed = True
                    break
                time.sleep(POLL_S)
            if killed:
                reap_orphans()
                launch_at = kills[-1] + t0 + restart_delay_s
                continue
            mine.append({"event": "exit", "t": time.time(), "rc": rc})
            reap_orphans()
            if rc != 0:
                raise RuntimeError(f"job exited with {rc} (not killed by the supervisor); see {log_path}")
            break
    t_end = mine[-1]["t"]
    events = sorted(mine + read_events(events_path), key=lambda e: e["t"])
    for e in events:
        e["s"] = e["t"] - t0
    if not any(e["event"] == "done" for e in events):
        raise RuntimeError(f"job exited 0 without its done event; see {log_path}")
    return {"wall_s": t_end - t0, "launches": launches, "kills": len(kills), "failures_applied_s": kills,
            "failures_scheduled_s": list(failures), "restart_delay_s": restart_delay_s, "events": events}


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--failures", default="", help="comma-separated seconds since the first launch")
    ap.add_argument("--restart-delay-s", type=float, default=1.0)
    ap.add_argument("--events", required=True)
    ap.add_argument("--log", default="/dev/null")
    ap.add_argument("--out", default="-")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    failures = [float(x) for x in a.failures.split(",") if x]
    rec = run_job(cmd, a.events, failures, a.restart_delay_s, a.log)
    text = json.dumps(rec, indent=1)
    if a.out == "-":
        print(text)
    else:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
