"""`probe s3`: an S3 object (or any S3-compatible endpoint's) as one boto3 reader sees it, measured exactly as
probe_http measures an HTTP object, and written in the same format (`simreplay.probe-http/1`) with
`endpoint.kind` "s3".

    python3 -m simreplay_capture.probe_s3 s3://BUCKET/KEY --out probe-s3.json [--endpoint-url URL]
        [--region R] [--no-sign-request] [--addressing-style auto|path|virtual] [--seed 0]
    simreplay probe storage s3://BUCKET/KEY [--endpoint-url URL] [--no-sign-request] [--out probe.json] [--quick]

Every request is a real boto3 `get_object` (a ranged one for the first-byte requests) on a new connection
(the request says `Connection: close`, so the next one opens its own, as probe_http's do), with boto3's
retries off: a 503 (SlowDown) is counted by the connection sweep, not hidden behind a retry. Times run
from the `get_object` call (serialisation, signing, connecting, the server's wait) to the first body byte
and to the last; boto3 does not expose the connect time, so `first_byte.connect_median_s` and
`server_median_s` are null here, and `client_median_s` is the part before the request was sent
(serialisation and signing). Credentials come from boto3's usual chain (environment, ~/.aws/config and
credentials, instance metadata); `--no-sign-request` sends unsigned requests (a public bucket).

What was checked against a real server, and what was not (docs/remote-storage.md, "S3"): the boto3 path
(addressing, ranged GETs, the error mapping, the 503 counting) against nginx serving path-style
`/BUCKET/KEY` to unsigned requests; S3's authentication, its SlowDown throttling and request-rate
scaling were not (no S3-compatible server is packaged in Debian).

An unreachable endpoint, a missing bucket or key, a body cut short, missing credentials: one line on
stderr naming the URL, exit 1, nothing written.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import threading
import time
import urllib.parse
from typing import Any, Dict, List, Optional, Tuple

from .probe_http import (ObjectGet, RequestError, add_object_options, fail, finish, parse_levels,
                         probe_object)


def parse_s3_url(url: str) -> Tuple[str, str]:
    """(bucket, key) of s3://BUCKET/KEY; ValueError for anything else (no key: a prefix is not an object)."""
    u = urllib.parse.urlsplit(url)
    bucket, key = u.netloc, u.path.lstrip("/")
    if u.scheme != "s3" or not bucket or not key or key.endswith("/") or u.query or u.fragment:
        raise ValueError(f"{url}: expected s3://BUCKET/KEY naming one object (a shard)")
    return bucket, key


def s3_client(endpoint_url: Optional[str], region: Optional[str], unsigned: bool, addressing_style: str,
              pool: int) -> Any:
    """A boto3 S3 client with retries off and enough pooled connections for the sweep."""
    import boto3
    import botocore
    from botocore.config import Config
    cfg = Config(retries={"total_max_attempts": 1}, max_pool_connections=max(10, pool), connect_timeout=10,
                 read_timeout=60, s3={"addressing_style": addressing_style},
                 signature_version=botocore.UNSIGNED if unsigned else None)
    return boto3.session.Session().client("s3", endpoint_url=endpoint_url, region_name=region, config=cfg)


class S3ObjectGet:
    """probe_http's ObjectGet through boto3: get(byte_range, max_bytes) -> timed_request's dict."""

    def __init__(self, client: Any, url: str) -> None:
        self.client, self.url = client, url
        self.bucket, self.key = parse_s3_url(url)
        self._sent = threading.local()  # per thread: when botocore handed the request to the wire
        client.meta.events.register("before-send.s3.GetObject", self._before_send)

    def _before_send(self, request: Any, **_: Any) -> None:
        request.headers["Connection"] = "close"  # after signing: not a signed header
        self._sent.t = time.perf_counter()

    def __call__(self, byte_range: Optional[Tuple[int, int]], max_bytes: int) -> Dict[str, Any]:
        from botocore.exceptions import BotoCoreError, ClientError
        kw = {"Bucket": self.bucket, "Key": self.key}
        if byte_range is not None:
            kw["Range"] = f"bytes={byte_range[0]}-{byte_range[0] + byte_range[1] - 1}"
        got, expected = 0, None
        self._sent.t = None
        t0 = time.perf_counter()
        try:
            r = self.client.get_object(**kw)
            body, expected = r["Body"], r.get("ContentLength")
            try:
                first = body.read(1)
                t_first = time.perf_counter()
                got = len(first)
                while not max_bytes or got < max_bytes:
                    chunk = body.read(1 << 16)
                    if not chunk:
                        break
                    got += len(chunk)
                t_end = time.perf_counter()
            finally:
                body.close()
        except ClientError as e:
            meta = e.response.get("ResponseMetadata", {})
            err = e.response.get("Error", {})
            status = int(meta.get("HTTPStatusCode") or 0)
            detail = " ".join(x for x in (err.get("Code"), err.get("Message")) if x and x != str(status))
            raise RequestError(f"{self.url}: HTTP {status} {detail}".rstrip(), status) from None
        except (BotoCoreError, OSError) as e:
            if got and expected is not None and got < expected:
                raise RequestError(f"{self.url}: the server closed the connection after {got} of {expected} bytes "
                                   f"({type(e).__name__})") from None
            raise RequestError(f"{self.url}: {type(e).__name__}: {e}") from None
        if not max_bytes and expected is not None and got < expected:  # defensive: botocore checks this too
            raise RequestError(f"{self.url}: the server closed the connection after {got} of {expected} bytes")
        total = None
        cr = r.get("ContentRange") or ""
        if "/" in cr and cr.rsplit("/", 1)[1].isdigit():
            total = int(cr.rsplit("/", 1)[1])
        sent = self._sent.t
        return {"status": int(r.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0), "bytes": got,
                "connect_s": None, "client_s": (sent - t0) if sent is not None else None,
                "first_byte_s": t_first - t0, "total_s": t_end - t0, "object_bytes": total}


def probe_s3(url: str, seed: int, small: int, large_repeats: int, levels: List[int], endpoint_url: Optional[str],
             region: Optional[str], unsigned: bool, addressing_style: str) -> Dict[str, Any]:
    client = s3_client(endpoint_url, region, unsigned, addressing_style, max(levels, default=1))
    get: ObjectGet = S3ObjectGet(client, url)
    endpoint = {"kind": "s3", "client": "boto3", "endpoint_url": client.meta.endpoint_url,
                "region": client.meta.region_name, "signed": not unsigned, "addressing_style": addressing_style,
                "retries": 0}
    return probe_object(url, seed, small, large_repeats, levels, get=get, endpoint=endpoint, source="probe s3")


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="probe_s3", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("url", help="s3://BUCKET/KEY: one object (a shard)")
    add_object_options(ap)
    ap.add_argument("--endpoint-url", default=None, help="an S3-compatible endpoint (default: AWS's, by region)")
    ap.add_argument("--region", default=None, help="default: boto3's configuration")
    ap.add_argument("--no-sign-request", action="store_true", help="unsigned requests (no credentials)")
    ap.add_argument("--addressing-style", default="auto", choices=["auto", "path", "virtual"])
    args = ap.parse_args(argv)
    levels = parse_levels(ap, args, ["connections"])
    try:
        parse_s3_url(args.url)
    except ValueError as e:
        ap.error(str(e))
    if int(os.environ.get("RANK", "0")) != 0:  # under a launcher with several ranks: rank 0 probes
        return 0
    if importlib.util.find_spec("boto3") is None:
        print(f"probe_s3: {args.url}: boto3 is not installed (Debian: apt-get install python3-boto3)", file=sys.stderr)
        return 1
    from botocore.exceptions import BotoCoreError
    try:
        doc = probe_s3(args.url, args.seed, args.small_requests, args.large_repeats, levels["connections"],
                       args.endpoint_url, args.region, args.no_sign_request, args.addressing_style)
    except (OSError, ValueError, KeyError, BotoCoreError) as e:
        hint = " (or --no-sign-request for a public bucket)" if "NoCredentialsError" in str(e) else ""
        return fail("probe_s3", args.url, str(e), hint)
    return finish("probe_s3", doc, args.out)


if __name__ == "__main__":
    sys.exit(main())
