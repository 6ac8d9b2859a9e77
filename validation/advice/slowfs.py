#!/usr/bin/python3
"""A read-only FUSE file system that serves a directory with object-store-like costs: every open() waits
a first-byte latency and every read is paced at a per-stream rate. The kernel page cache is bypassed
(direct_io), so every read of every run pays them. It is the storage-bound pipeline of the advice
validation (docs/advice.md): real reads, slowed in a real file system the DataLoader cannot tell from
a remote store.

usage: slowfs.py SOURCE_DIR MOUNTPOINT --latency-s 0.02 --bytes-per-s 4e6   (runs until unmounted)
"""
import argparse
import errno
import os
import time

import fusepy


class SlowFs(fusepy.Operations):
    def __init__(self, root: str, latency_s: float, bytes_per_s: float):
        self.root = os.path.realpath(root)
        self.latency_s = latency_s
        self.bytes_per_s = bytes_per_s

    def _path(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    def getattr(self, path, fh=None):
        try:
            st = os.lstat(self._path(path))
        except OSError as e:
            raise fusepy.FuseOSError(e.errno)
        return {k: getattr(st, k) for k in ("st_atime", "st_ctime", "st_gid", "st_mode", "st_mtime", "st_nlink",
                                             "st_size", "st_uid")}

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self._path(path))

    def open(self, path, flags):
        if flags & (os.O_WRONLY | os.O_RDWR):
            raise fusepy.FuseOSError(errno.EROFS)
        time.sleep(self.latency_s)  # the request's first-byte latency
        return os.open(self._path(path), os.O_RDONLY)

    def read(self, path, size, offset, fh):
        data = os.pread(fh, size, offset)
        if self.bytes_per_s > 0:
            time.sleep(len(data) / self.bytes_per_s)
        return data

    def lock(self, path, fh, cmd, lock):
        return 0  # a read-only tree: POSIX locks (taken by some readers, e.g. PIL) always succeed

    def release(self, path, fh):
        os.close(fh)
        return 0


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("source")
    p.add_argument("mountpoint")
    p.add_argument("--latency-s", type=float, default=0.02)
    p.add_argument("--bytes-per-s", type=float, default=0)
    a = p.parse_args()
    fusepy.FUSE(SlowFs(a.source, a.latency_s, a.bytes_per_s), a.mountpoint, foreground=True, nothreads=False,
                ro=True, direct_io=True, allow_other=False)


if __name__ == "__main__":
    main()
