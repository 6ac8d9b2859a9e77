"""The host screen for the Python validation harnesses: how many of its cores the host delivers right
now, as `simreplay probe host` measures it (a fixed integer workload timed on one core and on every
core at once; validation/host_capacity.h holds the workload and the bound, docs/validation.md "Noise").

A VM's neighbours can take CPU without a trace in the guest's /proc (no steal, no load, a fixed clock),
so the harnesses screen before and after every real run, and a run whose mean delivered share is
under the bound is repeated like a run under foreign load. Without the binary there is no screen
(None), and nothing is repeated for it."""
from __future__ import annotations

import json
import subprocess
from typing import Any, Dict, Optional


def screen(binary: str, window_s: float = 0.1) -> Optional[Dict[str, Any]]:
    """One screen: {"cores", "delivered_cores", "delivered_share", "bound", ...}, or None when the binary
    cannot run it."""
    try:
        out = subprocess.run([binary, "probe", "host", "--window-s", str(window_s)], capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    return json.loads(out.stdout.splitlines()[0])


def window_share(before: Optional[Dict[str, Any]], after: Optional[Dict[str, Any]]) -> Optional[float]:
    """The run's delivered share: the mean of the screens on either side; None without both."""
    if not before or not after:
        return None
    return (before["delivered_share"] + after["delivered_share"]) / 2


def below_bound(before: Optional[Dict[str, Any]], after: Optional[Dict[str, Any]]) -> bool:
    """Whether the host delivered less than the bound around a run (False when not screened)."""
    share = window_share(before, after)
    return share is not None and share < after["bound"]
