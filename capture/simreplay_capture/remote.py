"""Reading samples from an HTTP object store, as the two usual loaders do, with what each request cost
recorded into the capture (docs/remote-storage.md, "Loaders").

- Map-style, per-sample GETs: ``fetch(url, (offset, size))`` -- one GET per sample (a byte range of a
  shard, or a whole file), on a new connection or on this process's kept-alive one (``keep_alive``);
  with ``$SIMREPLAY_HTTP_CACHE`` (or ``cache_dir``) set, through a local cache directory (an NVMe cache
  tier: cold, every read a GET that fills it; warm, every read local).
- WebDataset-style streaming: ``TarShardStream(urls, decode)`` -- an IterableDataset that streams whole
  tar shards (one GET each) and yields one sample per key (the members ``KEY.ext`` next to each other,
  as WebDataset writes them). Shards are assigned round-robin to (rank, worker): shard i goes to
  reader i mod (world_size x num_workers), so with fewer shards than readers some workers get no data:
  ``shard_assignment()`` says which, ``TarShardStream`` warns once per worker left without a shard.

Inside a captured ``__getitem__`` / ``__next__`` every request adds to the sample's notes (the trace's
``notes``, docs/trace-format.md): ``http_requests``, ``http_bytes`` (the sample's own bytes),
``http_request_bytes`` (the body length of the requests it started: a stream's whole shard on its first
sample), ``http_first_byte_s`` (sum over the sample's requests: from sending the request, or opening the
connection when a new one was opened, to the first body byte), ``http_connections`` (connections opened)
and, for streams, ``shard``. Errors (refused, reset, a body cut short, 4xx/5xx, a missing shard) raise
``RemoteReadError`` naming the URL (``error_line`` gives its one line, also from a DataLoader worker); the
capture keeps every sample recorded before it (its error record names the URL too).
"""
from __future__ import annotations

import http.client
import io
import os
import tarfile
import time
import urllib.parse
import warnings
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import torch.utils.data as tud

from . import context as sc_ctx


class RemoteReadError(IOError):
    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


_CONNS: Dict[Tuple[int, str, str, Optional[int]], http.client.HTTPConnection] = {}


def _add_notes(requests: int, nbytes: int, first_byte_s: float, connections: int, request_bytes: int = 0,
               **extra: Any) -> None:
    ctx = sc_ctx._CURRENT
    if ctx is None:
        return
    n = ctx.notes
    n["http_requests"] = n.get("http_requests", 0) + requests
    n["http_bytes"] = n.get("http_bytes", 0) + nbytes
    n["http_request_bytes"] = n.get("http_request_bytes", 0) + request_bytes
    n["http_first_byte_s"] = n.get("http_first_byte_s", 0.0) + first_byte_s
    n["http_connections"] = n.get("http_connections", 0) + connections
    n.update(extra)


def error_line(exc: BaseException) -> str:
    """A RemoteReadError's one-line message, also when a DataLoader worker raised it: the loader re-raises
    it in the main process with the worker's whole traceback as its message, whose last line is
    `simreplay_capture.remote.RemoteReadError: MESSAGE`."""
    lines = [line for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    last = lines[-1]
    for prefix in (f"{RemoteReadError.__module__}.{RemoteReadError.__qualname__}: ", "RemoteReadError: "):
        if last.startswith(prefix):
            return last[len(prefix):]
    return last


def _connection(u: urllib.parse.SplitResult, keep_alive: bool, timeout_s: float) -> Tuple[http.client.HTTPConnection, bool]:
    cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
    if not keep_alive:
        return cls(u.hostname, u.port, timeout=timeout_s), True
    key = (os.getpid(), u.scheme, u.hostname or "", u.port)  # per process: never shared across a fork
    conn = _CONNS.get(key)
    if conn is None:
        conn = _CONNS[key] = cls(u.hostname, u.port, timeout=timeout_s)
        return conn, True
    return conn, conn.sock is None


def open_stream(url: str, byte_range: Optional[Tuple[int, int]] = None, keep_alive: bool = False,
                timeout_s: float = 60) -> Tuple[http.client.HTTPResponse, float, bool, http.client.HTTPConnection]:
    """Sends one GET; returns (response with the status checked, seconds to the response headers,
    whether a connection was opened, the connection)."""
    u = urllib.parse.urlsplit(url)
    if u.scheme not in ("http", "https"):
        raise RemoteReadError(f"{url}: expected an http:// or https:// URL")
    conn, opened = _connection(u, keep_alive, timeout_s)
    headers = {} if keep_alive else {"Connection": "close"}
    if byte_range is not None:
        headers["Range"] = f"bytes={byte_range[0]}-{byte_range[0] + byte_range[1] - 1}"
    t0 = time.perf_counter()
    target = (u.path or "/") + (f"?{u.query}" if u.query else "")
    try:
        try:
            conn.request("GET", target, headers=headers)
            r = conn.getresponse()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            if opened:
                raise
            # a kept-alive connection the server closed while idle: once more on a new one
            conn.close()
            opened = True
            t0 = time.perf_counter()
            conn.request("GET", target, headers=headers)
            r = conn.getresponse()
    except (http.client.HTTPException, OSError) as e:
        conn.close()
        raise RemoteReadError(f"{url}: {type(e).__name__}: {e}") from None
    if r.status >= 400:
        r.read()
        conn.close()
        raise RemoteReadError(f"{url}: HTTP {r.status} {r.reason}" + (" (missing shard?)" if r.status == 404 else ""),
                              r.status)
    return r, time.perf_counter() - t0, opened, conn


CACHE_ENV = "SIMREPLAY_HTTP_CACHE"


def _cache_path(cache_dir: str, url: str, byte_range: Optional[Tuple[int, int]]) -> str:
    import hashlib
    key = url + ("" if byte_range is None else f"@{byte_range[0]}+{byte_range[1]}")
    return os.path.join(cache_dir, hashlib.sha1(key.encode()).hexdigest())


def fetch(url: str, byte_range: Optional[Tuple[int, int]] = None, keep_alive: bool = False,
          timeout_s: float = 60, cache_dir: Optional[str] = None) -> bytes:
    """One GET of a whole object or a byte range (offset, size), the request recorded in the sample's notes.
    A server without range support (200) sends the whole object: the part asked for is taken from it.
    `cache_dir` (default: $SIMREPLAY_HTTP_CACHE): a local cache tier (an NVMe cache): a hit reads the
    local copy (noted `http_cache_hits`); a miss GETs and stores the bytes (temporary + rename, so a
    killed run never leaves a partial entry)."""
    cache_dir = cache_dir if cache_dir is not None else os.environ.get(CACHE_ENV) or None
    if cache_dir:
        path = _cache_path(cache_dir, url, byte_range)
        try:
            with open(path, "rb") as f:
                data = f.read()
            _add_notes(0, 0, 0.0, 0, http_cache_hits=1)
            return data
        except FileNotFoundError:
            pass
        data = fetch(url, byte_range, keep_alive, timeout_s, cache_dir="")
        os.makedirs(cache_dir, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        return data
    r, head_s, opened, conn = open_stream(url, byte_range, keep_alive, timeout_s)
    t_head = time.perf_counter()
    got = b""
    try:
        got = r.read(1)  # the first body byte: the request's first-byte latency ends here
        first_s = head_s + time.perf_counter() - t_head
        data = got + r.read()
    except (http.client.HTTPException, OSError) as e:
        conn.close()
        partial = len(got) + len(getattr(e, "partial", b"") or b"")
        more = f" ({e.expected} more expected)" if isinstance(e, http.client.IncompleteRead) and e.expected else ""
        raise RemoteReadError(f"{url}: the server closed the connection after {partial} bytes of the body{more}") from None
    if not keep_alive:
        conn.close()
    transferred = len(data)  # the request's bytes: a server without ranges sent the whole object
    if byte_range is not None:
        if r.status != 206:
            data = data[byte_range[0]:byte_range[0] + byte_range[1]]
        if len(data) != byte_range[1]:
            raise RemoteReadError(f"{url}: expected {byte_range[1]} bytes at {byte_range[0]}, got {len(data)}")
    _add_notes(1, len(data), first_s, int(opened), transferred)
    return data


def reader_slot() -> Tuple[int, int]:
    """(this reader's index, readers in all) over ranks x DataLoader workers."""
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            rank, world = dist.get_rank(), dist.get_world_size()
    except ImportError:
        pass
    wid, nw = 0, 1
    try:
        from torch.utils.data import get_worker_info
        info = get_worker_info()
        if info is not None:
            wid, nw = info.id, info.num_workers
    except ImportError:
        pass
    return rank * nw + wid, world * nw


def shard_assignment(shards: int, readers: int) -> List[List[int]]:
    """Shard indices per reader: shard i to reader i mod readers (readers = world size x workers)."""
    return [list(range(r, shards, readers)) for r in range(readers)]


class _CountingReader(io.RawIOBase):
    """The response body as a file for tarfile's stream mode, counting bytes and read time."""

    def __init__(self, resp: http.client.HTTPResponse, url: str) -> None:
        self.resp, self.url = resp, url
        self.bytes = 0
        self.read_s = 0.0
        self.first_byte_at: Optional[float] = None  # perf_counter() when the first body byte was in

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        t = time.perf_counter()
        try:
            n = self.resp.readinto(b)
        except (http.client.HTTPException, OSError) as e:
            raise RemoteReadError(f"{self.url}: the server closed the connection after {self.bytes} bytes: "
                                  f"{type(e).__name__}") from None
        if n == 0 and self.resp.length:
            raise RemoteReadError(f"{self.url}: the server closed the connection after {self.bytes} bytes "
                                  f"({self.resp.length} more expected)")
        t_end = time.perf_counter()
        self.read_s += t_end - t
        if n and self.first_byte_at is None:
            self.first_byte_at = t_end
        self.bytes += n
        return n


class TarShardStream(tud.IterableDataset):
    """WebDataset-style IterableDataset over tar shards at `urls` (see the module doc).

    ``decode(key, members) -> sample`` turns one key's members ({"jpg": bytes, ...}) into the sample;
    it runs inside the captured ``__next__`` (its own sc.stage("decode") / ("augment") are recorded).
    The time spent pulling a sample's members off the stream is its "read" stage. ``length``: the total
    sample count, when known (``__len__``; the DataLoader's batch count).
    """

    def __init__(self, urls: List[str], decode: Callable[[str, Dict[str, bytes]], Any], length: int = 0,
                 timeout_s: float = 60) -> None:
        if not urls:
            raise ValueError("TarShardStream: no shard URLs")
        self.urls, self.decode, self.length, self.timeout_s = list(urls), decode, length, timeout_s

    def __len__(self) -> int:
        return self.length

    def __iter__(self) -> Iterator[Any]:
        me, readers = reader_slot()
        mine = shard_assignment(len(self.urls), readers)[me]
        if not mine:
            warnings.warn(f"TarShardStream: {len(self.urls)} shards for {readers} readers (ranks x workers): "
                          f"reader {me} gets no data; use at least {readers} shards", RuntimeWarning)
            return
        for i in mine:
            yield from self._shard(self.urls[i])

    def _shard(self, url: str) -> Iterator[Any]:
        t0 = time.perf_counter()
        resp, head_s, opened, conn = open_stream(url, timeout_s=self.timeout_s)
        t_head = time.perf_counter()
        body = _CountingReader(resp, url)
        # the GET's figures go to the shard's first sample: first byte, connection, the shard's length
        request: Optional[Dict[str, Any]] = {"opened": int(opened), "bytes": resp.length or 0}
        try:
            with tarfile.open(fileobj=io.BufferedReader(body, 1 << 16), mode="r|") as tf:
                key, members = None, {}
                for m in tf:
                    if not m.isfile():
                        continue
                    base = os.path.basename(m.name)
                    k, _, ext = base.partition(".")
                    if key is not None and k != key:
                        yield self._emit(url, key, members, request, head_s, t_head, body, t0)
                        request, t0 = None, time.perf_counter()
                        members = {}
                    key = k
                    f = tf.extractfile(m)
                    members[ext] = f.read() if f is not None else b""
                if key is not None:
                    yield self._emit(url, key, members, request, head_s, t_head, body, t0)
        except tarfile.ReadError as e:
            raise RemoteReadError(f"{url}: not a readable tar stream after {body.bytes} bytes: {e}") from None
        finally:
            conn.close()

    def _emit(self, url: str, key: str, members: Dict[str, bytes], request: Optional[Dict[str, Any]],
              head_s: float, t_head: float, body: _CountingReader, t0: float) -> Any:
        nbytes = sum(len(v) for v in members.values())
        ctx = sc_ctx._CURRENT
        if ctx is not None:  # the stream time since the previous sample is this sample's read
            ctx.stages["read"] = ctx.stages.get("read", 0) + int((time.perf_counter() - t0) * 1e9)
        if request is None:  # a later sample of the shard: its bytes came on the GET already noted
            _add_notes(0, nbytes, 0.0, 0, shard=os.path.basename(url))
        else:
            first_s = head_s + ((body.first_byte_at or t_head) - t_head)
            _add_notes(1, nbytes, first_s, request["opened"], request["bytes"], shard=os.path.basename(url))
        return self.decode(key, members)
