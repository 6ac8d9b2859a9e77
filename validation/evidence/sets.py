"""The evidence sets: which harness records each, which files are its measurement side, and how a
recording is replayed and scored (docs/evidence-format.md). One home for what record.py and replay.py
both need."""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Dict, List, Tuple

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EVIDENCE = os.path.join(REPO, "validation", "evidence")
RECORDINGS = os.path.join(EVIDENCE, "recordings")
BASELINE = os.path.join(EVIDENCE, "baseline.json")
# Debian's Python, whatever runs these scripts: the harnesses import torch from python3-torch.
PYTHON = "/usr/bin/python3"


@dataclass(frozen=True)
class EvidenceSet:
    name: str
    kind: str                    # "suite": `simreplay validate --ingest`; "multinode": multinode.py --ingest;
                                 # "advice", "whatifs", "remote": validation/<kind>/run.py --ingest
    spec: str                    # the spec, relative to the repository
    measurement_side: Tuple[str, ...]  # files and folders (relative) whose digest the recording keeps
    targets: Dict[str, float]    # the accuracy targets, reported on every replay (docs/validation.md)
    held_out: bool = False       # frozen: a model change is never motivated by it


# The measurement side: the bench pipeline that every set's runs execute, the harness that drives them
# and the spec. The probes (probe_cpu, probe_network, probe_http) and the capture package's tracer are
# product code a user runs: their recorded outputs are data the predictions are made from, their changes
# are judged by their own tests against real servers and processes, and old outputs keep reading
# (versioned formats) -- as the issue that introduced the corpus asks of the trace format.
_BENCH = ("capture/simreplay_capture/bench",)
_SUITE = _BENCH + ("validation/suite/run.sh",)
_MULTINODE = _BENCH + ("validation/suite/multinode.py", "validation/netns")
_ADVICE = _BENCH + ("validation/advice/measure.py", "validation/advice/slowfs.py")
_WHATIFS = _BENCH + ("validation/whatifs/measure.py",)
_REMOTE = _BENCH + ("validation/remote/measure.py", "validation/remote/object_server.py")

SETS: Dict[str, EvidenceSet] = {s.name: s for s in [
    EvidenceSet("development", "suite", "validation/suite/suite.json", _SUITE + ("validation/suite/suite.json",),
                {"median_abs_train_throughput_error_pct": 10.0, "max_abs_train_throughput_error_pct": 15.0,
                 "max_abs_gpu_idle_error_pp": 10.0}),
    EvidenceSet("heldout", "suite", "validation/suite/heldout.json", _SUITE + ("validation/suite/heldout.json",),
                {"median_abs_train_throughput_error_pct": 10.0, "max_abs_train_throughput_error_pct": 20.0,
                 "max_abs_gpu_idle_error_pp": 10.0}, held_out=True),
    EvidenceSet("heldout-video", "suite", "validation/suite/heldout-video.json",
                _SUITE + ("validation/suite/heldout-video.json",),
                {"median_abs_train_throughput_error_pct": 10.0, "max_abs_train_throughput_error_pct": 20.0,
                 "max_abs_gpu_idle_error_pp": 10.0}, held_out=True),
    EvidenceSet("multinode", "multinode", "validation/suite/multinode.json",
                _MULTINODE + ("validation/suite/multinode.json",),
                {"median_abs_train_throughput_error_pct": 10.0, "max_abs_train_throughput_error_pct": 20.0,
                 "max_abs_step_time_error_pct": 15.0}),
    # The advice pipelines with their measured grid: regret of tune's recommendation against the best
    # measured configuration (validation/advice/run.py --ingest).
    EvidenceSet("advice", "advice", "validation/advice/measure.py", _ADVICE, {"max_regret_pct": 5.0}),
    # Media and storage what-ifs, each predicted from the base case's captures and probes
    # (validation/whatifs/run.py --ingest).
    EvidenceSet("whatifs", "whatifs", "validation/whatifs/measure.py", _WHATIFS,
                {"median_abs_train_throughput_error_pct": 10.0, "max_abs_train_throughput_error_pct": 10.0}),
    # Reads over HTTP from nginx in a network namespace, each case predicted from a local capture and its
    # configuration's HTTP probe (validation/remote/run.py --ingest).
    EvidenceSet("remote", "remote", "validation/remote/measure.py", _REMOTE,
                {"median_abs_train_throughput_error_pct": 10.0, "max_abs_train_throughput_error_pct": 10.0}),
]}


def _files_under(path: str) -> List[str]:
    full = os.path.join(REPO, path)
    if os.path.isfile(full):
        return [path]
    found = []
    for root, dirs, files in os.walk(full):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        found += [os.path.relpath(os.path.join(root, f), REPO) for f in sorted(files) if not f.endswith(".pyc")]
    return found


def measurement_digest(evidence_set: EvidenceSet) -> Dict[str, str]:
    """sha256 of every measurement-side file of the set, by path, and of them all ("*")."""
    per_file: Dict[str, str] = {}
    for path in evidence_set.measurement_side:
        for f in _files_under(path):
            with open(os.path.join(REPO, f), "rb") as fh:
                per_file[f] = hashlib.sha256(fh.read()).hexdigest()
    total = hashlib.sha256("".join(f"{k} {v}\n" for k, v in sorted(per_file.items())).encode()).hexdigest()
    return dict(per_file, **{"*": total})
