"""`probe http`: the latency and bandwidth of a dataset served over HTTP (an object store, a web server),
as one reader sees them.

    python3 -m simreplay_capture.probe_http http://host:port/dataset --out probe-http.json [--seed 0]

The root must hold a `make-dataset` tree (dataset.json, files/, and tar/ for large objects). The probe
GETs every sample file once in a seeded random order (small objects: the per-request cost) and every
tar shard twice (large objects: the transfer rate), one request at a time, and fits
t = latency + bytes / bandwidth the way the network probe reads a size sweep: the bandwidth from the
large objects, the latency as the median residual of the small ones. Then it fetches the shards with
2, 4 and 8 GETs in flight (--streams): the best rate is the store's aggregate rate, and the fewest
streams within 5% of it the useful concurrency. Writes `simreplay.probe-http/1` (docs/probe-format.md):
the fit, every (bytes, seconds) point, the sweep and a manifest. The latency and the aggregate rate are
the `storage.latency_s` and `storage.aggregate_bytes_per_s` of a shared-storage scenario
(docs/modelling.md, "Shared storage").
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


def aggregate_sweep(urls: List[str], levels: List[int]) -> List[Dict[str, Any]]:
    """The store's aggregate rate with k GETs in flight: k threads fetch the large objects (each once
    per level, shared out round-robin) and the rate is their bytes over the wall time of the level.
    One reader at a time pays every connection's set-up and TCP slow start alone; several readers, as
    a job's loader workers are, keep the link busy through them, so the store's aggregate rate (what
    storage.aggregate_bytes_per_s means) is what several streams achieve together."""
    from concurrent.futures import ThreadPoolExecutor
    sweep = []
    for k in levels:
        t = time.perf_counter()
        with ThreadPoolExecutor(max_workers=k) as pool:
            sizes = list(pool.map(lambda u: timed_get(u)[0], urls))
        wall = time.perf_counter() - t
        sweep.append({"streams": k, "bytes": sum(sizes), "wall_s": wall, "bytes_per_s": sum(sizes) / wall})
    return sweep


def aggregate_fit(single_stream_bytes_per_s: float, sweep: List[Dict[str, Any]]) -> Dict[str, float]:
    """The best aggregate rate over one stream (the fit) and the sweep's levels, and the useful
    concurrency: the fewest streams within 5% of that best."""
    levels = [(1, single_stream_bytes_per_s)] + [(p["streams"], p["bytes_per_s"]) for p in sweep]
    best = max(rate for _, rate in levels)
    useful = min(k for k, rate in levels if rate >= 0.95 * best)
    return {"aggregate_bytes_per_s": best, "useful_concurrency": useful}


def probe(url: str, seed: int, large_repeats: int, streams: List[int]) -> Dict[str, Any]:
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
    sweep = aggregate_sweep([f"{base}/tar/{shard}" for shard in shards], streams) if streams else []
    result.update(aggregate_fit(result["bytes_per_s"], sweep))
    return {"schema": SCHEMA, "url": url, "fit": result,
            "points": [{"bytes": b, "time_s": t} for b, t in points],
            "aggregate": sweep,
            "settings": {"seed": seed, "large_repeats": large_repeats, "concurrency": 1, "streams": streams},
            "manifest": {"source": "probe http", "versions": versions(), "hardware": hardware(),
                         "command": list(sys.argv)}}


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="probe_http", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("url", help="the dataset root, http://host:port/path")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--large-repeats", type=int, default=2, help="GETs of each tar shard")
    ap.add_argument("--streams", default="2,4,8",
                    help="concurrency levels of the aggregate sweep over the tar shards ('' skips it)")
    args = ap.parse_args(argv)
    try:
        streams = [int(k) for k in args.streams.split(",") if k.strip()]
        if any(k < 1 for k in streams):
            raise ValueError
    except ValueError:
        ap.error(f"--streams: expected comma-separated integers >= 1, got {args.streams!r}")
    if int(os.environ.get("RANK", "0")) != 0:  # under a launcher with several ranks: rank 0 probes
        return 0
    try:
        doc = probe(args.url, args.seed, args.large_repeats, streams)
    except (OSError, ValueError, KeyError) as e:
        print(f"probe_http: {args.url}: {e}", file=sys.stderr)
        return 1
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, args.out)
    f = doc["fit"]
    print(f"probe_http: latency {f['latency_s'] * 1e3:.2f} ms, bandwidth {f['bytes_per_s'] / 1e6:.2f} MB/s per "
          f"stream (MAPE {f['mape']:.1%}, {f['small_objects']} small and {f['large_objects']} large objects), "
          f"aggregate {f['aggregate_bytes_per_s'] / 1e6:.2f} MB/s from {f['useful_concurrency']} stream(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
