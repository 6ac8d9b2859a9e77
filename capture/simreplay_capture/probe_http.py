"""`probe http`: the latency and bandwidth of a dataset or an object served over HTTP (an object store, a
web server), as one reader sees them, and how many connections it takes to get its aggregate rate.

    python3 -m simreplay_capture.probe_http http://host:port/dataset --out probe-http.json [--seed 0]
    python3 -m simreplay_capture.probe_http http://host:port/path/shard-000000.tar --out probe-http.json
    simreplay probe storage http://host:port/path [--out probe.json] [--quick]      (runs this module)

Two kinds of URL. An object (any URL that is not a make-dataset root): `--small-requests` ranged GETs of
4 KiB at seeded offsets (the first-byte latency: from opening the connection to the first body byte)
and `--large-repeats` GETs of the whole object (up to 64 MiB: the per-connection rate, bytes after the
first byte over the time after it), fitted as below; then the connection sweep (`--connections`,
default 1,2,4,8,16): k connections at once, each GETting the object twice, counting the 503s of a
server that limits connections or requests and any connection that broke mid-body.

A make-dataset root (it serves dataset.json):

The root must hold a `make-dataset` tree (dataset.json, files/, and tar/ for large objects). The probe
GETs every sample file once in a seeded random order (small objects: the per-request cost) and every
tar shard twice (large objects: the transfer rate), one request at a time, and fits
t = latency + bytes / bandwidth the way the network probe reads a size sweep: the bandwidth from the
large objects, the latency as the median residual of the small ones. Then it fetches the shards with
2, 4 and 8 GETs in flight (--streams): the best rate is the store's aggregate rate, and the fewest
streams within 5% of it the useful concurrency. Writes `simreplay.probe-http/1` (docs/probe-format.md):
the fit, every (bytes, seconds) point, the sweep and a manifest. The latency and the aggregate rate are
the `storage.latency_s` and `storage.aggregate_bytes_per_s` of a shared-storage scenario
(docs/modelling.md, "Shared storage"). Both kinds also write `first_byte` (connect and first-byte
times of the small requests), `per_connection` and `connections` (the connection sweep), and
`fit.object_store_tier`: the `storage.tiers` entry of an object store with these figures
(docs/remote-storage.md).

Every document records `endpoint`: {"kind": "http"} here; probe_s3 measures an S3 object through boto3
with this module's object mode and writes the same document with {"kind": "s3", ...}.

An unreachable URL, a server that closes a connection before the whole body came, or a 4xx/5xx outside
the sweep: one line on stderr naming the URL, exit 1, nothing written.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import sys
import time
import urllib.parse
from typing import Any, Callable, Dict, List, Optional, Tuple

from .bench.dataset import http_get, load_manifest
from .manifest import hardware, versions

SCHEMA = "simreplay.probe-http/1"


class RequestError(OSError):
    """A GET that did not return its whole body: refused, reset, closed mid-body, or a 4xx/5xx status."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


def timed_request(url: str, byte_range: Optional[Tuple[int, int]] = None, timeout_s: float = 60,
                  max_bytes: int = 0) -> Dict[str, Any]:
    """One GET on a new connection, timed: connect_s (TCP connected), first_byte_s (the first body byte
    arrived), total_s (the whole body), all from the start; bytes; status. `byte_range` = (offset, size).
    `max_bytes` > 0 stops reading after that many bytes (a huge object's rate). Raises RequestError."""
    u = urllib.parse.urlsplit(url)
    if u.scheme not in ("http", "https"):
        raise RequestError(f"{url}: expected an http:// or https:// URL")
    cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
    conn = cls(u.hostname, u.port, timeout=timeout_s)
    t0 = time.perf_counter()
    try:
        conn.connect()
        t_conn = time.perf_counter()
        headers = {}
        if byte_range is not None:
            headers["Range"] = f"bytes={byte_range[0]}-{byte_range[0] + byte_range[1] - 1}"
        conn.request("GET", (u.path or "/") + (f"?{u.query}" if u.query else ""), headers=headers)
        r = conn.getresponse()
        if r.status >= 400:
            r.read()
            raise RequestError(f"{url}: HTTP {r.status} {r.reason}", r.status)
        first = r.read(1)
        t_first = time.perf_counter()
        got = len(first)
        while True:
            want = 1 << 16 if not max_bytes else min(1 << 16, max_bytes - got)
            chunk = r.read(want) if want > 0 else b""
            if not chunk:
                break
            got += len(chunk)
        t_end = time.perf_counter()
        if max_bytes and got >= max_bytes:
            pass  # stopped on purpose
        elif r.length:  # bytes the Content-Length promised that never came
            raise RequestError(f"{url}: the server closed the connection after {got} of {got + r.length} bytes")
        total_size = None
        cr = r.getheader("Content-Range")
        if cr and "/" in cr and cr.rsplit("/", 1)[1].isdigit():
            total_size = int(cr.rsplit("/", 1)[1])
        return {"status": r.status, "bytes": got, "connect_s": t_conn - t0, "first_byte_s": t_first - t0,
                "total_s": t_end - t0, "object_bytes": total_size,
                "content_type": (r.getheader("Content-Type") or "").split(";")[0].strip()}
    except http.client.IncompleteRead as e:
        raise RequestError(f"{url}: the server closed the connection after {len(e.partial)} bytes of the body "
                           f"({e.expected} more expected)") from None
    except (http.client.HTTPException, ConnectionError, TimeoutError) as e:
        raise RequestError(f"{url}: {type(e).__name__}: {e}") from None
    finally:
        conn.close()


def timed_get(url: str) -> Tuple[int, float]:
    r = timed_request(url)
    return r["bytes"], r["total_s"]


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


SMALL_BYTES = 4096
LARGE_MAX_BYTES = 64 << 20


def first_byte_summary(requests: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Median and 90th percentile of the connect and first-byte times of `requests`. The connect and
    server parts are null when the client does not expose the connect time (boto3: probe_s3)."""
    fb = sorted(r["first_byte_s"] for r in requests)
    known = [r for r in requests if r.get("connect_s") is not None]
    q = lambda v, p: v[min(len(v) - 1, int(p * len(v)))]  # noqa: E731  nearest rank
    out = {"requests": len(fb), "median_s": statistics.median(fb), "p90_s": q(fb, 0.9), "min_s": fb[0],
           "connect_median_s": statistics.median(r["connect_s"] for r in known) if known else None,
           "server_median_s": (statistics.median(r["first_byte_s"] - r["connect_s"] for r in known)
                               if known else None)}
    client = [r["client_s"] for r in requests if r.get("client_s") is not None]
    if client:  # boto3: the time before the request was sent (serialisation, signing)
        out["client_median_s"] = statistics.median(client)
    return out


def per_connection_rate(requests: List[Dict[str, Any]]) -> float:
    """Bytes after the first one over the time after the first byte, over the large requests."""
    return sum(r["bytes"] - 1 for r in requests) / sum(max(r["total_s"] - r["first_byte_s"], 1e-9) for r in requests)


# A timed GET of one object on a new connection: get(byte_range, max_bytes) -> timed_request's dict, or
# RequestError. probe_object measures any client through it (timed_request here, boto3 in probe_s3).
ObjectGet = Callable[[Optional[Tuple[int, int]], int], Dict[str, Any]]


def http_object_get(url: str) -> ObjectGet:
    return lambda byte_range, max_bytes: timed_request(url, byte_range, max_bytes=max_bytes)


def connection_sweep(get: ObjectGet, levels: List[int], per_connection: int, large_bytes: int) -> List[Dict[str, Any]]:
    """k connections at once (k threads, each `per_connection` GETs of the object one after another, a new
    connection each): their bytes over the level's wall time, the mean rate of one connection while it
    transfers, and how many GETs were refused (HTTP 503/429: a connection or request limit) or broke."""
    from concurrent.futures import ThreadPoolExecutor

    def one(_: int) -> List[Dict[str, Any]]:
        out = []
        for _ in range(per_connection):
            try:
                out.append(get(None, large_bytes))
            except RequestError as e:
                out.append({"error": str(e), "status": e.status})
        return out

    sweep = []
    for k in levels:
        t = time.perf_counter()
        with ThreadPoolExecutor(max_workers=k) as pool:
            results = [r for rs in pool.map(one, range(k)) for r in rs]
        wall = time.perf_counter() - t
        ok = [r for r in results if "error" not in r]
        rejected = sum(1 for r in results if r.get("status") in (429, 503))
        sweep.append({"connections": k, "requests": len(results), "ok": len(ok), "rejected": rejected,
                      "failed": len(results) - len(ok) - rejected, "bytes": sum(r["bytes"] for r in ok),
                      "wall_s": wall, "bytes_per_s": sum(r["bytes"] for r in ok) / wall,
                      "per_connection_bytes_per_s": per_connection_rate(ok) if ok else 0.0,
                      "first_byte_median_s": statistics.median(r["first_byte_s"] for r in ok) if ok else None,
                      "errors": sorted({r["error"] for r in results if "error" in r})[:3]})
    return sweep


def connection_fit(sweep: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The best aggregate rate of the sweep, the fewest connections within 5% of it (useful concurrency),
    and the connection limit: the most connections with no refused request below the first level that
    had one (null when no level was refused)."""
    best = max(p["bytes_per_s"] for p in sweep)
    useful = min(p["connections"] for p in sweep if p["bytes_per_s"] >= 0.95 * best)
    limited = [p["connections"] for p in sweep if p["rejected"] > 0]
    limit = max((p["connections"] for p in sweep if p["rejected"] == 0 and (not limited or p["connections"] < min(limited))),
                default=None) if limited else None
    return {"aggregate_bytes_per_s": best, "useful_concurrency": useful, "connection_limit": limit}


def tier_of(latency_s: float, per_connection: float, limit: Optional[int], useful: int) -> Dict[str, Any]:
    """The storage.tiers entry of an object store with these figures (docs/scenario-format.md)."""
    return {"kind": "object_store", "latency_s": latency_s, "bytes_per_s_per_stream": per_connection,
            "max_streams": limit if limit else 0}


def probe_object(url: str, seed: int, small: int, large_repeats: int, levels: List[int],
                 get: Optional[ObjectGet] = None, endpoint: Optional[Dict[str, Any]] = None,
                 source: str = "probe http") -> Dict[str, Any]:
    """The object mode (see the module doc), through `get` (default: plain HTTP GETs of `url`);
    `endpoint` is recorded as the document's `endpoint` (default {"kind": "http"})."""
    get = get or http_object_get(url)
    head = get((0, 1), 0)
    # A server that ignores Range answers a ranged GET with 200 and the whole object (Python's
    # http.server, some static servers): the small requests are then whole-object GETs read for their
    # first SMALL_BYTES and closed, which time the same first byte and a small transfer.
    ranged = head.get("status", 206) != 200
    size = head["object_bytes"] if head["object_bytes"] is not None else head["bytes"]
    if size < 2 * SMALL_BYTES:
        listing = head.get("content_type") == "text/html"
        raise ValueError(f"{url}: " + (f"the server answered with a {size}-byte HTML page (a directory listing?), "
                                       "not an object: give the URL of one large object, a shard" if listing else
                                       f"the object has {size} bytes; expected at least {2 * SMALL_BYTES} (probe a "
                                       "large object: a shard)"))
    rng = random.Random(seed)
    if ranged:
        smalls = [get((rng.randrange(0, size - SMALL_BYTES), SMALL_BYTES), 0) for _ in range(small)]
    else:
        smalls = [get(None, SMALL_BYTES) for _ in range(small)]
    large_bytes = min(size, LARGE_MAX_BYTES)
    larges = [get(None, large_bytes) for _ in range(large_repeats)]
    points = [(r["bytes"], r["total_s"]) for r in smalls + larges]
    result = fit(points, SMALL_BYTES + 1)
    fb = first_byte_summary(smalls)
    per_conn = per_connection_rate(larges)
    sweep = connection_sweep(get, levels, 2, large_bytes) if levels else []
    cf = connection_fit(sweep) if sweep else {"aggregate_bytes_per_s": per_conn, "useful_concurrency": 1,
                                               "connection_limit": None}
    result.update(cf)
    result["first_byte_s"] = fb["median_s"]
    result["per_connection_bytes_per_s"] = per_conn
    result["object_store_tier"] = tier_of(fb["median_s"], per_conn, cf["connection_limit"], cf["useful_concurrency"])
    return {"schema": SCHEMA, "url": url, "kind": "object", "endpoint": endpoint or {"kind": "http"},
            "object_bytes": size, "fit": result,
            "range_requests": {"honoured": ranged, "note": "" if ranged else (
                "the server ignores Range (a ranged GET came back 200 with the whole object): the small "
                f"requests are whole-object GETs read for their first {SMALL_BYTES} bytes and closed")},
            "first_byte": fb, "per_connection": {"requests": len(larges), "bytes_per_s": per_conn},
            "connections": sweep,
            "points": [{"bytes": b, "time_s": t} for b, t in points],
            "aggregate": [],
            "settings": {"seed": seed, "small_requests": small, "small_bytes": SMALL_BYTES,
                         "large_repeats": large_repeats, "large_bytes": large_bytes, "connections": levels},
            "manifest": {"source": source, "versions": versions(), "hardware": hardware(),
                         "command": list(sys.argv)}}


def is_dataset_root(url: str) -> bool:
    """Whether `url` serves a make-dataset tree (dataset.json under it)."""
    probe_url = url.rstrip("/") + "/dataset.json"
    try:
        timed_request(probe_url, max_bytes=1)
        return True
    except RequestError as e:
        if e.status in (403, 404):
            return False
        raise RequestError(str(e).replace(probe_url, url), e.status) from None


def probe(url: str, seed: int, large_repeats: int, streams: List[int]) -> Dict[str, Any]:
    base = url.rstrip("/")
    man = load_manifest(base)
    samples = list(man["samples"])
    random.Random(seed).shuffle(samples)
    small_requests = [timed_request(f"{base}/files/{s['key']}.{s['ext']}") for s in samples]
    points: List[Tuple[int, float]] = [(r["bytes"], r["total_s"]) for r in small_requests]
    shards = sorted({entry[0] for entry in man.get("formats", {}).get("tar", {}).get("index", [])})
    large_requests = [timed_request(f"{base}/tar/{shard}") for _ in range(large_repeats) for shard in shards]
    points += [(r["bytes"], r["total_s"]) for r in large_requests]
    largest_sample = max((b for b, _ in points[:len(samples)]), default=0)
    result = fit(points, largest_sample + 1)
    sweep = aggregate_sweep([f"{base}/tar/{shard}" for shard in shards], streams) if streams else []
    result.update(aggregate_fit(result["bytes_per_s"], sweep))
    fb = first_byte_summary(small_requests) if small_requests else None
    per_conn = per_connection_rate(large_requests) if large_requests else result["bytes_per_s"]
    result["first_byte_s"] = fb["median_s"] if fb else result["latency_s"]
    result["per_connection_bytes_per_s"] = per_conn
    result["object_store_tier"] = tier_of(result["first_byte_s"], per_conn, None, result["useful_concurrency"])
    return {"schema": SCHEMA, "url": url, "kind": "dataset", "endpoint": {"kind": "http"}, "fit": result,
            "first_byte": fb, "per_connection": {"requests": len(large_requests), "bytes_per_s": per_conn},
            "points": [{"bytes": b, "time_s": t} for b, t in points],
            "aggregate": sweep,
            "settings": {"seed": seed, "large_repeats": large_repeats, "concurrency": 1, "streams": streams},
            "manifest": {"source": "probe http", "versions": versions(), "hardware": hardware(),
                         "command": list(sys.argv)}}


def add_object_options(ap: argparse.ArgumentParser) -> None:
    """The options of the object mode, shared with probe_s3."""
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--large-repeats", type=int, default=2, help="GETs of each tar shard, or of the whole object")
    ap.add_argument("--connections", default="1,2,4,8,16",
                    help="an object URL: connections at once in the connection sweep ('' skips it)")
    ap.add_argument("--small-requests", type=int, default=30, help="an object URL: 4 KiB ranged GETs")


def parse_levels(ap: argparse.ArgumentParser, args: argparse.Namespace, names: List[str]) -> Dict[str, List[int]]:
    """--streams / --connections as lists of ints in 1..1024, and the counts' ranges (else a usage error)."""
    levels = {}
    for name in names:
        text = getattr(args, name)
        try:
            levels[name] = [int(k) for k in text.split(",") if k.strip()]
            if any(not 1 <= k <= 1024 for k in levels[name]):
                raise ValueError
        except ValueError:
            ap.error(f"--{name}: expected comma-separated integers in 1..1024, got {text!r}")
    if not 1 <= args.small_requests <= 100000 or not 1 <= args.large_repeats <= 1000:
        ap.error("expected --small-requests in 1..100000 and --large-repeats in 1..1000")
    return levels


def write_doc(doc: Dict[str, Any], out: str) -> None:
    """The document, atomically: OUT.tmp renamed into place (a failed probe leaves nothing)."""
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, out)


def summary_line(doc: Dict[str, Any]) -> str:
    f = doc["fit"]
    return (f"latency {f['latency_s'] * 1e3:.2f} ms, bandwidth {f['bytes_per_s'] / 1e6:.2f} MB/s per "
            f"stream (MAPE {f['mape']:.1%}, {f['small_objects']} small and {f['large_objects']} large objects), "
            f"aggregate {f['aggregate_bytes_per_s'] / 1e6:.2f} MB/s from {f['useful_concurrency']} stream(s); "
            f"first byte {f['first_byte_s'] * 1e3:.2f} ms, {f['per_connection_bytes_per_s'] / 1e6:.2f} MB/s per "
            f"connection" + (f", connection limit {f['connection_limit']}" if f.get("connection_limit") else ""))


def fail(prog: str, url: str, message: str, hint: str = "") -> int:
    """One line on stderr naming the URL (once), exit status 1; nothing was written."""
    msg = " ".join(message.split())  # one line, whatever the library put in its message
    print(f"{prog}: {msg if msg.startswith(url) else url + ': ' + msg}{hint}", file=sys.stderr)
    return 1


def finish(prog: str, doc: Dict[str, Any], out: str) -> int:
    """Writes the document and its summary line (stderr: stdout may carry the document, simreplay probe)."""
    write_doc(doc, out)
    print(f"{prog}: {summary_line(doc)}", file=sys.stderr)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="probe_http", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("url", help="the dataset root, http://host:port/path")
    add_object_options(ap)
    ap.add_argument("--streams", default="2,4,8",
                    help="concurrency levels of the aggregate sweep over the tar shards ('' skips it)")
    args = ap.parse_args(argv)
    levels = parse_levels(ap, args, ["streams", "connections"])
    if int(os.environ.get("RANK", "0")) != 0:  # under a launcher with several ranks: rank 0 probes
        return 0
    try:
        if is_dataset_root(args.url):
            doc = probe(args.url, args.seed, args.large_repeats, levels["streams"])
        else:
            doc = probe_object(args.url, args.seed, args.small_requests, args.large_repeats, levels["connections"])
    except (OSError, ValueError, KeyError) as e:
        return fail("probe_http", args.url, str(e))
    return finish("probe_http", doc, args.out)


if __name__ == "__main__":
    sys.exit(main())
