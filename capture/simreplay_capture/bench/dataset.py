"""Real multimodal benchmark dataset: opencv-doc JPEGs + clips cut from its AVI videos.

Formats: files/ (one file per sample), tar/ (WebDataset shards KEY.jpg / KEY.mp4, read through a
byte-offset index), lmdb/ (key -> bytes), hdf5/data.h5 (one variable-length uint8 row per sample),
tfrecord/ (shards of TFRecord records whose payload is the sample's media bytes, read through a
byte-offset index with both CRCs checked; framing in tfrecord.py).
"""
from __future__ import annotations

import glob
import io
import json
import os
import random
import tarfile
from typing import Any, Dict, List, Optional, Tuple

MEDIA_ROOT = "/usr/share/doc/opencv-doc"
FORMATS = ("files", "tar", "lmdb", "hdf5", "tfrecord")
SHARD_SAMPLES = 64


def find_media(root: str = MEDIA_ROOT) -> Dict[str, List[str]]:
    jpgs = sorted(p for p in glob.glob(os.path.join(root, "**", "*.jpg"), recursive=True)
                  if os.path.getsize(p) > 4096)
    vids = sorted(glob.glob(os.path.join(root, "**", "*.avi"), recursive=True)
                  + glob.glob(os.path.join(root, "**", "*.mp4"), recursive=True))
    return {"images": jpgs, "videos": vids}


def _valid_jpeg(data: bytes) -> bool:
    from PIL import Image
    try:
        with Image.open(io.BytesIO(data)) as im:
            im.verify()
        return True
    except Exception:
        return False


def cut_clips(videos: List[str], count: int, frames: int, rng: random.Random,
              max_width: int = 320) -> List[Dict[str, Any]]:
    """Cut `count` clips of `frames` frames from the real videos; re-encode each as MPEG-4 Part 2 in an
    mp4 container (deterministic, decodable by PyAV). Each source is decoded once."""
    import av
    plan: Dict[str, List[int]] = {}
    meta = {}
    for v in videos:
        # count decodable frames: container headers can overstate them (tree.avi: 444 vs 68)
        n = 0
        try:
            with av.open(v) as c:
                s = c.streams.video[0]
                w, h = s.width, s.height
                for _ in c.decode(video=0):
                    n += 1
        except Exception:
            pass
        meta[v] = (n, w, h) if n else (0, 0, 0)
    usable = [v for v in videos if meta[v][0] > frames]
    if not usable:
        raise RuntimeError("no source video long enough for clips of %d frames" % frames)
    jobs = []
    for k in range(count):
        v = usable[k % len(usable)]
        start = rng.randrange(0, meta[v][0] - frames)
        jobs.append((k, v, start))
        plan.setdefault(v, []).append(start)
    clips: Dict[int, Dict[str, Any]] = {}
    for v in usable:
        mine = [(k, s) for (k, vv, s) in jobs if vv == v]
        if not mine:
            continue
        n, w, h = meta[v]
        scale = min(1.0, max_width / w)
        ow, oh = int(w * scale) // 2 * 2, int(h * scale) // 2 * 2
        want: Dict[int, List[int]] = {}
        for k, s in mine:
            for f in range(s, s + frames):
                want.setdefault(f, []).append(k)
        got: Dict[int, List[Any]] = {k: [] for k, _ in mine}
        last = max(want)
        with av.open(v) as c:
            for i, fr in enumerate(c.decode(video=0)):
                if i in want:
                    img = fr.reformat(width=ow, height=oh, format="yuv420p")
                    for k in want[i]:
                        got[k].append(img)
                if i >= last:
                    break
        if any(len(got[k]) < frames for k, _ in mine):
            raise RuntimeError(f"{v}: could not decode the planned frames")
        for k, s in mine:
            buf = io.BytesIO()
            with av.open(buf, "w", format="mp4") as out:
                st = out.add_stream("mpeg4", rate=25)
                st.width, st.height, st.pix_fmt = ow, oh, "yuv420p"
                st.bit_rate = 600_000
                st.thread_count = 1
                for j, img in enumerate(got[k]):
                    f2 = av.VideoFrame.from_ndarray(img.to_ndarray(format="rgb24"), format="rgb24")
                    f2 = f2.reformat(format="yuv420p")
                    f2.pts = j
                    for p in st.encode(f2):
                        out.mux(p)
                for p in st.encode():
                    out.mux(p)
            clips[k] = {"data": buf.getvalue(), "source": v, "start_frame": s, "frames": len(got[k]),
                        "width": ow, "height": oh}
    return [clips[k] for k in range(count)]


def rescale_jpeg(data: bytes, scale: float, quality: int = 90) -> bytes:
    """The JPEG resized by `scale` on both sides (bicubic) and re-encoded at `quality` (baseline,
    4:2:0), so that every image of a dataset made with --image-scale has the same encoder settings."""
    from PIL import Image
    with Image.open(io.BytesIO(data)) as im:
        im = im.convert("RGB")
        w, h = max(16, int(round(im.width * scale))), max(16, int(round(im.height * scale)))
        if (w, h) != (im.width, im.height):
            im = im.resize((w, h), Image.BICUBIC)
        buf = io.BytesIO()
        im.save(buf, format="JPEG", quality=quality, subsampling="4:2:0")
        return buf.getvalue()


def split_share(samples: int, video_share: float) -> "tuple[int, int]":
    """(images, videos) for `samples` in total with round(samples x video_share) clips."""
    if not 0 <= video_share <= 1:
        raise ValueError(f"video share must be in [0, 1], found {video_share}")
    videos = int(round(samples * video_share))
    return samples - videos, videos


def sources_of(dataset_dir: str) -> List[str]:
    """The source files a make-dataset tree was made from (its dataset.json's samples[].source)."""
    with open(os.path.join(dataset_dir, "dataset.json")) as f:
        return [s["source"] for s in json.load(f)["samples"]]


def make_dataset(out: str, images: int, videos: int, formats: List[str], frames: int = 8,
                 seed: int = 0, media_root: str = MEDIA_ROOT,
                 image_scale: Optional[float] = None, exclude_sources: Optional[List[str]] = None) -> Dict[str, Any]:
    """`exclude_sources`: image files never to use (another dataset's, so that the two share no
    photo: a held-out split of the media); clips are cut afresh from the same few videos."""
    rng = random.Random(seed)
    media = find_media(media_root)
    excluded = set(exclude_sources or [])
    jpgs = [p for p in media["images"] if p not in excluded]
    if not jpgs:
        raise ValueError("no image left after --exclude-sources")
    rng.shuffle(jpgs)
    samples: List[Dict[str, Any]] = []
    blobs: List[bytes] = []
    pool = iter(jpgs * (1 + images // max(1, len(jpgs))))
    while sum(1 for s in samples if s["kind"] == "image") < images:
        p = next(pool)
        with open(p, "rb") as f:
            data = f.read()
        if not _valid_jpeg(data):
            continue
        if image_scale is not None:
            data = rescale_jpeg(data, image_scale)
        samples.append({"kind": "image", "format": "jpeg", "ext": "jpg", "source": p, "bytes": len(data)})
        blobs.append(data)
    if videos:
        for c in cut_clips(media["videos"], videos, frames, rng):
            samples.append({"kind": "video", "format": "mp4", "ext": "mp4", "source": c["source"],
                            "start_frame": c["start_frame"], "frames": c["frames"], "width": c["width"],
                            "height": c["height"], "bytes": len(c["data"])})
            blobs.append(c["data"])
    order = list(range(len(samples)))
    rng.shuffle(order)
    samples = [samples[i] for i in order]
    blobs = [blobs[i] for i in order]
    for i, s in enumerate(samples):
        s["key"] = "%06d" % i
    os.makedirs(out, exist_ok=True)
    man: Dict[str, Any] = {
        "version": 1, "seed": seed, "images": images, "videos": videos, "frames": frames,
        "image_scale": image_scale,
        "files": len(samples), "bytes": sum(len(b) for b in blobs),
        "mix": {"jpeg": images, "mp4": videos}, "formats": {}, "samples": samples,
    }
    for fmt in formats:
        if fmt not in FORMATS:
            raise ValueError(f"unknown format {fmt!r}; choose from {FORMATS}")
        man["formats"][fmt] = globals()["_write_" + fmt](out, samples, blobs)
    with open(os.path.join(out, "dataset.json"), "w") as f:
        json.dump(man, f, indent=1, sort_keys=True)
    return man


def _write_files(out: str, samples: List[Dict[str, Any]], blobs: List[bytes]) -> Dict[str, Any]:
    d = os.path.join(out, "files")
    os.makedirs(d, exist_ok=True)
    for s, b in zip(samples, blobs):
        with open(os.path.join(d, f"{s['key']}.{s['ext']}"), "wb") as f:
            f.write(b)
    return {"path": "files"}


def _write_tar(out: str, samples: List[Dict[str, Any]], blobs: List[bytes]) -> Dict[str, Any]:
    d = os.path.join(out, "tar")
    os.makedirs(d, exist_ok=True)
    shards = []
    index = []
    for si in range(0, len(samples), SHARD_SAMPLES):
        name = "shard-%06d.tar" % (si // SHARD_SAMPLES)
        shards.append(name)
        with tarfile.open(os.path.join(d, name), "w", format=tarfile.USTAR_FORMAT) as tf:
            for s, b in zip(samples[si:si + SHARD_SAMPLES], blobs[si:si + SHARD_SAMPLES]):
                ti = tarfile.TarInfo(f"{s['key']}.{s['ext']}")
                ti.size, ti.mtime, ti.mode, ti.uname, ti.gname = len(b), 0, 0o644, "", ""
                tf.addfile(ti, io.BytesIO(b))
        with tarfile.open(os.path.join(d, name), "r") as tf:
            for m in tf.getmembers():
                index.append([name, m.offset_data, m.size])
    return {"path": "tar", "shards": shards, "index": index}


def _write_tfrecord(out: str, samples: List[Dict[str, Any]], blobs: List[bytes]) -> Dict[str, Any]:
    from . import tfrecord
    d = os.path.join(out, "tfrecord")
    os.makedirs(d, exist_ok=True)
    shards, index = [], []
    for si in range(0, len(samples), SHARD_SAMPLES):
        name = "shard-%06d.tfrecord" % (si // SHARD_SAMPLES)
        shards.append(name)
        with open(os.path.join(d, name), "wb") as f:
            for b in blobs[si:si + SHARD_SAMPLES]:
                index.append([name, f.tell(), len(b)])
                tfrecord.write_record(f, b)
    return {"path": "tfrecord", "shards": shards, "index": index}


def _write_lmdb(out: str, samples: List[Dict[str, Any]], blobs: List[bytes]) -> Dict[str, Any]:
    import lmdb
    d = os.path.join(out, "lmdb")
    os.makedirs(d, exist_ok=True)
    size = sum(len(b) for b in blobs) * 2 + (64 << 20)
    env = lmdb.open(d, map_size=size, subdir=True, lock=True)
    with env.begin(write=True) as txn:
        for s, b in zip(samples, blobs):
            txn.put(s["key"].encode(), b)
    env.sync()
    env.close()
    return {"path": "lmdb"}


def _write_hdf5(out: str, samples: List[Dict[str, Any]], blobs: List[bytes]) -> Dict[str, Any]:
    import h5py
    import numpy as np
    d = os.path.join(out, "hdf5")
    os.makedirs(d, exist_ok=True)
    with h5py.File(os.path.join(d, "data.h5"), "w", track_order=True) as f:
        ds = f.create_dataset("samples", (len(blobs),), dtype=h5py.vlen_dtype(np.uint8))
        for i, b in enumerate(blobs):
            ds[i] = np.frombuffer(b, dtype=np.uint8)
        f.create_dataset("keys", data=np.array([s["key"].encode() for s in samples]))
    return {"path": "hdf5/data.h5"}


# ---------------------------------------------------------------------------- readers
def is_url(root: str) -> bool:
    """A dataset root served over HTTP (`http://host:port/path`): samples are fetched with one GET
    each (tar members with a Range request), as a loader reading an object store does."""
    return root.startswith(("http://", "https://"))


def http_get(url: str, byte_range: Optional[Tuple[int, int]] = None, timeout_s: float = 60) -> bytes:
    """One GET (HTTP/1.0 semantics: a connection per request, as urllib makes them); `byte_range`
    (offset, size) asks for part of the object and checks that exactly that part came back."""
    import urllib.request
    req = urllib.request.Request(url)
    if byte_range is not None:
        req.add_header("Range", f"bytes={byte_range[0]}-{byte_range[0] + byte_range[1] - 1}")
    with urllib.request.urlopen(req, timeout=timeout_s) as r:
        data = r.read()
        if byte_range is not None and r.status != 206:
            # a server without ranges sends the whole object: take the part asked for
            data = data[byte_range[0]:byte_range[0] + byte_range[1]]
    if byte_range is not None and len(data) != byte_range[1]:
        raise IOError(f"{url}: expected {byte_range[1]} bytes at {byte_range[0]}, got {len(data)}")
    return data


class Reader:
    """Per-process byte reader for one format; opened lazily in each worker (fork/spawn safe)."""

    def __init__(self, root: str, fmt: str, man: Dict[str, Any]) -> None:
        self.root, self.fmt = root, fmt
        self.samples = man["samples"]
        self.info = man["formats"][fmt]
        self._pid = -1
        self._h: Any = None

    def _open(self) -> None:
        if self._pid == os.getpid():
            return
        self._pid = os.getpid()
        if self.fmt in ("tar", "tfrecord"):
            self._h = {}
        elif self.fmt == "lmdb":
            import lmdb
            self._h = lmdb.open(os.path.join(self.root, "lmdb"), readonly=True, lock=False,
                                readahead=False, max_readers=512)
        elif self.fmt == "hdf5":
            import h5py
            self._h = h5py.File(os.path.join(self.root, self.info["path"]), "r")["samples"]

    def read(self, i: int) -> bytes:
        if is_url(self.root):
            return self._read_http(i)
        self._open()
        s = self.samples[i]
        if self.fmt == "files":
            with open(os.path.join(self.root, "files", f"{s['key']}.{s['ext']}"), "rb") as f:
                return f.read()
        if self.fmt == "tar":
            shard, off, size = self.info["index"][i]
            fh = self._h.get(shard)
            if fh is None:
                fh = self._h[shard] = open(os.path.join(self.root, "tar", shard), "rb")
            fh.seek(off)
            return fh.read(size)
        if self.fmt == "tfrecord":
            from . import tfrecord
            shard, off, size = self.info["index"][i]
            fh = self._h.get(shard)
            if fh is None:
                fh = self._h[shard] = open(os.path.join(self.root, "tfrecord", shard), "rb")
            fh.seek(off)
            data = tfrecord.read_record(fh, where=f"{shard}@{off}")
            if data is None or len(data) != size:
                raise ValueError(f"{shard}@{off}: expected a record of {size} bytes")
            return data
        if self.fmt == "lmdb":
            with self._h.begin(buffers=False) as txn:
                return txn.get(s["key"].encode())
        if self.fmt == "hdf5":
            return self._h[i].tobytes()
        raise ValueError(self.fmt)

    def _read_http(self, i: int) -> bytes:
        # remote.fetch: one GET on a new connection, as http_get, with the request noted in the capture
        from ..remote import fetch
        base = self.root.rstrip("/")
        if self.fmt == "files":
            s = self.samples[i]
            return fetch(f"{base}/files/{s['key']}.{s['ext']}")
        if self.fmt == "tar":
            shard, off, size = self.info["index"][i]
            return fetch(f"{base}/tar/{shard}", (off, size))
        raise ValueError(f"format {self.fmt!r} is not read over HTTP (files and tar are)")

    def __getstate__(self) -> Dict[str, Any]:
        st = dict(self.__dict__)
        st["_h"], st["_pid"] = None, -1
        return st


def load_manifest(root: str) -> Dict[str, Any]:
    if is_url(root):
        return json.loads(http_get(root.rstrip("/") + "/dataset.json"))
    with open(os.path.join(root, "dataset.json")) as f:
        return json.load(f)


def main_make(args: Any) -> int:
    fmts = [f.strip() for f in args.formats.split(",") if f.strip()]
    images, videos = args.images, args.videos
    if args.video_share is not None:
        images, videos = split_share(args.samples or (args.images + args.videos), args.video_share)
    excluded = sources_of(args.exclude_sources) if args.exclude_sources else None
    man = make_dataset(args.out, images, videos, fmts, args.frames, args.seed, image_scale=args.image_scale,
                       exclude_sources=excluded)
    print(f"wrote {man['files']} samples ({man['bytes']} bytes, mix {man['mix']}) "
          f"in formats {list(man['formats'])} to {args.out}")
    return 0
