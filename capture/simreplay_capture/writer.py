"""Main-process trace writer: JSONL, gzip written one complete member per flush.

A SIGKILL can only cut the member being written; every earlier member is a complete gzip stream, so
the prefix reads cleanly (the spec accepts concatenated members and drops a truncated tail).
"""
from __future__ import annotations

import json
import os
import threading
import zlib
from typing import Any, Dict, List


class TraceWriter:
    def __init__(self, path: str) -> None:
        self.path = path
        self.gz = path.endswith(".gz")
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._buf: List[bytes] = []
        self._lock = threading.Lock()
        self._have_header = False  # nothing reaches the file before the header: it must be line 1
        self.records = 0  # records written after the header

    def add_line(self, line: bytes) -> None:
        """Append one already-serialised record (must end with b"\\n")."""
        with self._lock:
            self._buf.append(line)
            self.records += 1

    def add(self, rec: Dict[str, Any]) -> None:
        self.add_line((json.dumps(rec, separators=(",", ":")) + "\n").encode())

    def write_header(self, header: Dict[str, Any]) -> None:
        line = (json.dumps(header, separators=(",", ":"), default=str) + "\n").encode()
        with self._lock:
            self._buf.insert(0, line)
            self._have_header = True

    def flush(self) -> None:
        with self._lock:
            if not self._buf or self._fd < 0 or not self._have_header:
                return
            data = b"".join(self._buf)
            self._buf = []
            if self.gz:
                c = zlib.compressobj(6, zlib.DEFLATED, 31)
                data = c.compress(data) + c.flush()
            while data:
                n = os.write(self._fd, data)
                data = data[n:]

    def close(self) -> None:
        self.flush()
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
