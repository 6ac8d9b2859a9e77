"""`probe http`: the latency and bandwidth of a dataset served over HTTP (an object store, a web server),
as one reader sees them.

    python3 -m simreplay_capture.probe_http http://host:port/dataset --out probe-http.json [--seed 0]

The root must hold a `make-dataset` tree (dataset.json, files/, and tar/ for large objects). The probe
GETs every sample file once in a seeded random order (small objects: the per-request cost) and every
tar shard twice (large objects: the transfer rate), one request at a time, and fits
t = latency + bytes / bandwidth the way the network probe reads a size sweep: the bandwidth from the
large objects, the latency as the median residual of the small ones. Writes `simreplay.probe-http/1`
(docs/probe-format.md): the fit, every (bytes, seconds) point and a manifest. These are the
`storage.latency_s` and `storage.aggregate_bytes_per_s` of a shared-storage scenario (docs/modelling.md,
"Shared storage").
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from .bench.dataset import http_get, load_manifest
from .manifest import hardware, versions

SCHEMA = "simreplay.probe-http/1"


def timed_get(url: str) -> Tuple[int, float]:
    t = time.perf_counter()
    data = http_get(url)
    return len(data), time.perf_counter() - t


def fit(points: List[Tuple[int, float]], large_from_bytes: int) -> Dict[str, float]:
    """latency + bytes / bandwidth: bandwidth from the points of at least `large_from_bytes` (their
    bytes over their time less the latency), latency = the median of t - bytes / bandwidth over the
    rest; alternated until they settle (each uses the other's estimate; 50 rounds at most)."""
    large = [(b, t) for b, t in points if b >= large_from_bytes]
    small = [(b, t) for b, t in points if b < large_from_bytes]
    if not large or not small:
        raise ValueError(f"expected objects both below and from {large_from_bytes} bytes")
    latency = 0.0
    bandwidth = 0.0
    for _ in range(50):
        bandwidth = sum(b for b, _ in large) / sum(max(t - latency, 1e-9) for _, t in large)
        previous, latency = latency, max(0.0, statistics.median(t - b / bandwidth for b, t in small))
        if abs(latency - previous) <= 1e-12:
            break
    residuals = [abs(latency + b / bandwidth - t) / t for b, t in points]
    return {"latency_s": latency, "bytes_per_s": bandwidth, "mape": statistics.mean(residuals),
            "small_objects": len(small), "large_objects": len(large)}


def probe(url: str, seed: int, large_repeats: int) -> Dict[str, Any]:
    base = url.rstrip("/")
    man = load_manifest(base)
    samples = list(man["samples"])
    random.Random(seed).shuffle(samples)
    points: List[Tuple[int, float]] = []
    for s in samples:
        points.append(timed_get(f"{base}/files/{s['key']}.{s['ext']}"))
    shards = sorted({entry[0] for entry in man.get("formats", {}).get("tar", {}).get("index", [])})
    for _ in range(large_repeats):
        for shard in shards:
            points.append(timed_get(f"{base}/tar/{shard}"))
    largest_sample = max((b for b, _ in points[:len(samples)]), default=0)
    result = fit(points, largest_sample + 1)
    return {"schema": SCHEMA, "url": url, "fit": result,
            "points": [{"bytes": b, "time_s": t} for b, t in points],
            "settings": {"seed": seed, "large_repeats": large_repeats, "concurrency": 1},
            "manifest": {"source": "probe http", "versions": versions(), "hardware": hardware(),
                         "command": list(sys.argv)}}


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="probe_http", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("url", help="the dataset root, http://host:port/path")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--large-repeats", type=int, default=2, help="GETs of each tar shard")
    args = ap.parse_args(argv)
    if int(os.environ.get("RANK", "0")) != 0:  # under a launcher with several ranks: rank 0 probes
        return 0
    try:
        doc = probe(args.url, args.seed, args.large_repeats)
    except (OSError, ValueError, KeyError) as e:
        print(f"probe_http: {args.url}: {e}", file=sys.stderr)
        return 1
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, args.out)
    f = doc["fit"]
    print(f"probe_http: latency {f['latency_s'] * 1e3:.2f} ms, bandwidth {f['bytes_per_s'] / 1e6:.1f} MB/s "
          f"(MAPE {f['mape']:.1%}, {f['small_objects']} small and {f['large_objects']} large objects)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
