"""Media probe: how the user's own decode and augmentation cost grows with image size and clip length.

A trace sees the media at the one size they are stored at, so a per-pixel slope fitted on it is
extrapolated when a scenario asks for images twice as wide (`data.media.jpeg.scale: 2`) or clips
twice as long (`data.media.mp4.frames`). This probe measures the curve instead: it takes a seeded
sample of the dataset's own files, writes each at several linear scales (images: 0.5x, 1x, 2x by
default) and clip lengths (clips: 1x and 2x the frames), builds the user's own Dataset on each variant
tree and times its real ``__getitem__`` (read, decode and augment stages as the capture records them,
``sc.stage()`` / ``sc.note()``), one sample at a time in this process, in rounds so that slow drift of
the host hits every variant alike, stopping at ``--max-seconds``.

``simreplay calibrate TRACE --media-probe probe-media.json`` then fits each media's decode and augment
cost as a fixed part plus a per-pixel (and per-frame) part from the probe's points, at the cost level
the trace measured (docs/probe-format.md, "Media probe"; docs/modelling.md, "Media what-ifs").

Usage::

    python3 -m simreplay_capture.probe_media --bench-data DIR --out probe-media.json \\
        [--image-size 96 --frames 4] [--scales 0.5,1,2] [--frame-scales 1,2] [--samples 12]
    python3 -m simreplay_capture.probe_media --data DIR --dataset mypkg.data:make_dataset --out ...

``--dataset MOD:FN``: FN(root) builds the user's Dataset over a directory holding media files (the
probe passes a directory laid out like DIR, holding only the sampled files at their relative paths,
with a filtered ``dataset.json`` when DIR has a make-dataset one); FN(root, frames_scale=f) when it
takes that keyword (clips f times as long: without it, clip-length variants are skipped and the
document says so). Images are rescaled with PIL (bicubic) and re-encoded as JPEG at ``--jpeg-quality``;
clips are re-encoded with PyAV in their own codec and size, their frames repeated in order to reach
f times the length. At 1x (and frames 1x) the original bytes are used unchanged.
"""
from __future__ import annotations

import argparse
import glob
import importlib
import inspect
import io
import json
import os
import random
import shutil
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import context as sc_ctx
from .manifest import hardware, versions
from .probe_network import _write_atomically

SCHEMA = "simreplay.probe-media/1"
IMAGE_EXT = (".jpg", ".jpeg", ".png")
CLIP_EXT = (".mp4", ".avi", ".mkv", ".webm", ".mov")
STAGES = ("read", "decode", "augment")


def media_files(root: str) -> Dict[str, List[str]]:
    """Relative paths of the image and clip files under root, sorted."""
    found: Dict[str, List[str]] = {"image": [], "clip": []}
    for p in sorted(glob.glob(os.path.join(root, "**", "*"), recursive=True)):
        low = p.lower()
        if not os.path.isfile(p):
            continue
        if low.endswith(IMAGE_EXT):
            found["image"].append(os.path.relpath(p, root))
        elif low.endswith(CLIP_EXT):
            found["clip"].append(os.path.relpath(p, root))
    return found


def rescale_image(data: bytes, scale: float, quality: int) -> bytes:
    """The image resized by `scale` on both sides (bicubic), re-encoded as JPEG at `quality` (4:2:0)."""
    from PIL import Image
    with Image.open(io.BytesIO(data)) as im:
        im = im.convert("RGB")
        w, h = max(8, int(round(im.width * scale))), max(8, int(round(im.height * scale)))
        im = im.resize((w, h), Image.BICUBIC)
        buf = io.BytesIO()
        im.save(buf, format="JPEG", quality=quality, subsampling="4:2:0")
        return buf.getvalue()


def lengthen_clip(data: bytes, frames_scale: float, container: str) -> bytes:
    """The clip re-encoded in its own codec, size and bit rate with round(frames x frames_scale) frames:
    its decoded frames repeated in order (a clip f times as long, as a loader decoding it sees it)."""
    import av
    frames = []
    with av.open(io.BytesIO(data)) as c:
        st = c.streams.video[0]
        codec, bit_rate = st.codec_context.name, st.codec_context.bit_rate or 600_000
        rate = st.average_rate or 25
        for fr in c.decode(st):
            frames.append(fr.to_ndarray(format="rgb24"))
    if not frames:
        raise ValueError("no decodable frame")
    want = max(1, int(round(len(frames) * frames_scale)))
    h, w = frames[0].shape[:2]
    buf = io.BytesIO()
    with av.open(buf, "w", format=container) as out:
        st = out.add_stream(codec, rate=rate)
        st.width, st.height, st.pix_fmt = w, h, "yuv420p"
        st.bit_rate = bit_rate
        st.thread_count = 1
        for j in range(want):
            f2 = av.VideoFrame.from_ndarray(frames[j % len(frames)], format="rgb24").reformat(format="yuv420p")
            f2.pts = j
            for p in st.encode(f2):
                out.mux(p)
        for p in st.encode():
            out.mux(p)
    return buf.getvalue()


def _container_of(path: str) -> str:
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    return {"mkv": "matroska", "mov": "mov"}.get(ext, ext)


def _size_of(path: str) -> int:
    """An image's pixels (from its header), else the file's bytes."""
    if path.lower().endswith(IMAGE_EXT):
        try:
            from PIL import Image
            with Image.open(path) as im:
                return im.width * im.height
        except Exception:
            pass
    return os.path.getsize(path)


def pick_files(root: str, rels: List[str], count: int, rng: random.Random) -> List[str]:
    """`count` of `rels`: the smallest and the largest file (images by pixels, clips by bytes: the ends
    of the range a what-if scales) and a seeded sample of the rest; sorted."""
    if len(rels) <= count:
        return sorted(rels)
    by_size = sorted(rels, key=lambda r: (_size_of(os.path.join(root, r)), r))
    ends = [by_size[0], by_size[-1]][:count]
    rest = [r for r in rels if r not in ends]
    return sorted(ends + rng.sample(rest, count - len(ends)))


class Variant:
    """One scaled copy of the sampled files: a directory the user's Dataset is built on."""

    def __init__(self, kind: str, scale: float, frames_scale: float, root: str) -> None:
        self.kind, self.scale, self.frames_scale, self.root = kind, scale, frames_scale, root
        self.dataset: Any = None
        self.index_of: Dict[str, int] = {}  # relative path -> dataset index

    @property
    def name(self) -> str:
        return f"{self.kind}-s{self.scale:g}-f{self.frames_scale:g}"


def _write_variant(src_root: str, rels: List[str], variant: Variant, quality: int,
                   manifest: Optional[Dict[str, Any]]) -> None:
    os.makedirs(variant.root, exist_ok=True)
    sizes: Dict[str, int] = {}
    for rel in rels:
        with open(os.path.join(src_root, rel), "rb") as f:
            data = f.read()
        if variant.kind == "image" and variant.scale != 1:
            data = rescale_image(data, variant.scale, quality)
        elif variant.kind == "clip" and variant.frames_scale != 1:
            data = lengthen_clip(data, variant.frames_scale, _container_of(rel))
        dst = os.path.join(variant.root, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "wb") as f:
            f.write(data)
        sizes[rel] = len(data)
    if manifest is not None:
        # a make-dataset tree: keep only the sampled samples (their files under files/), sizes updated
        man = dict(manifest)
        keep = []
        for s in manifest["samples"]:
            rel = os.path.join("files", f"{s['key']}.{s['ext']}")
            if rel in sizes:
                s = dict(s, bytes=sizes[rel])
                if s.get("kind") == "video":
                    s["frames"] = int(round(s.get("frames", 0) * variant.frames_scale))
                keep.append(s)
        man.update(samples=keep, files=len(keep), bytes=sum(s["bytes"] for s in keep),
                   formats={"files": {"path": "files"}})
        with open(os.path.join(variant.root, "dataset.json"), "w") as f:
            json.dump(man, f)
        variant.index_of = {os.path.join("files", f"{s['key']}.{s['ext']}"): i for i, s in enumerate(keep)}


def _build_dataset(factory: Callable[..., Any], variant: Variant, takes_frames: bool) -> Any:
    if takes_frames:
        return factory(variant.root, frames_scale=variant.frames_scale)
    return factory(variant.root)


def _index_map(ds: Any, variant: Variant, rels: List[str]) -> Dict[str, int]:
    """Dataset index of each sampled file: the make-dataset order, else the dataset's own `files` /
    `samples` / `imgs` list of paths, else the sorted relative paths (a glob-over-root dataset)."""
    if variant.index_of:
        return variant.index_of
    for attr in ("files", "samples", "imgs", "paths"):
        lst = getattr(ds, attr, None)
        if isinstance(lst, (list, tuple)) and lst:
            paths = [p[0] if isinstance(p, (list, tuple)) else p for p in lst]
            if all(isinstance(p, str) for p in paths):
                rel = [os.path.relpath(os.path.abspath(p), variant.root) if os.path.isabs(p) else p for p in paths]
                got = {r: i for i, r in enumerate(rel)}
                if all(r in got for r in rels):
                    return got
    return {r: i for i, r in enumerate(sorted(rels))}


def _timed_item(ds: Any, index: int) -> Dict[str, Any]:
    ctx = sc_ctx.SampleContext()
    prev = sc_ctx.set_current(ctx)
    try:
        c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
        ds[index]
        t1, c1 = time.perf_counter_ns(), time.thread_time_ns()
    finally:
        sc_ctx.set_current(prev)
    return {"stages": dict(ctx.stages), "notes": dict(ctx.notes), "wall_ns": t1 - t0, "cpu_ns": c1 - c0}


def run_probe(src_root: str, factory: Callable[..., Any], out_path: str, scales: List[float],
              frame_scales: List[float], samples: int = 12, reps: int = 3, seed: int = 0, quality: int = 90,
              max_seconds: float = 120.0, work_dir: Optional[str] = None) -> Dict[str, Any]:
    t_start = time.monotonic()
    # a make-dataset tree (dataset.json + files/): its files/, and a filtered dataset.json per variant
    manifest = None
    if os.path.exists(os.path.join(src_root, "dataset.json")) and os.path.isdir(os.path.join(src_root, "files")):
        with open(os.path.join(src_root, "dataset.json")) as f:
            manifest = json.load(f)
        files = {k: [os.path.join("files", r) for r in v]
                 for k, v in media_files(os.path.join(src_root, "files")).items()}
    else:
        files = media_files(src_root)
    tree_root = src_root
    if not files["image"] and not files["clip"]:
        raise ValueError(f"{src_root}: no image ({', '.join(IMAGE_EXT)}) or clip ({', '.join(CLIP_EXT)}) files")
    rng = random.Random(seed)
    sampled = {k: pick_files(tree_root, v, samples, rng) for k, v in files.items()}
    takes_frames = "frames_scale" in inspect.signature(factory).parameters
    notes: List[str] = []
    if sampled["clip"] and not takes_frames and any(f != 1 for f in frame_scales):
        notes.append("the dataset factory takes no frames_scale keyword: clip-length variants skipped")
        frame_scales = [1.0]
    tmp = tempfile.mkdtemp(prefix="simreplay-probe-media.", dir=work_dir)
    try:
        variants: List[Variant] = []
        for kind in ("image", "clip"):
            if not sampled[kind]:
                continue
            combos = [(s, 1.0) for s in scales] if kind == "image" else [(1.0, f) for f in frame_scales]
            for s, f in combos:
                v = Variant(kind, s, f, os.path.join(tmp, f"{kind}-{len(variants)}"))
                _write_variant(tree_root, sampled[kind], v, quality, manifest)
                v.dataset = _build_dataset(factory, v, takes_frames)
                v.index_of = _index_map(v.dataset, v, sampled[kind])
                variants.append(v)
        # one unrecorded pass (imports, codec set-up, page cache), then rounds over every (sample, variant)
        best: Dict[Tuple[str, str], Dict[str, Any]] = {}
        rounds_done = 0
        stopped = ""
        for rnd in range(reps + 1):
            for v in variants:
                for rel in sampled[v.kind]:
                    if time.monotonic() - t_start > max_seconds:
                        stopped = f"--max-seconds {max_seconds:g} reached in round {rnd}"
                        break
                    m = _timed_item(v.dataset, v.index_of[rel])
                    if rnd == 0:
                        continue
                    key = (v.name, rel)
                    old = best.get(key)
                    m["reps"] = (old or {}).get("reps", 0) + 1
                    if old is None:
                        best[key] = m
                    else:  # per stage, the least of the repetitions: preemption only ever adds time
                        for st, ns in m["stages"].items():
                            old["stages"][st] = min(old["stages"].get(st, ns), ns)
                        old["wall_ns"], old["cpu_ns"] = min(old["wall_ns"], m["wall_ns"]), min(old["cpu_ns"], m["cpu_ns"])
                        old["reps"] = m["reps"]
                if stopped:
                    break
            if stopped:
                break
            rounds_done = rnd
        points = []
        for v in variants:
            for rel in sampled[v.kind]:
                m = best.get((v.name, rel))
                if m is None:
                    continue
                n = m["notes"]
                st = m["stages"]
                split = all(s in st for s in ("decode", "augment"))
                points.append({
                    "media": str(n.get("format", "jpeg" if v.kind == "image" else "mp4")),
                    "kind": v.kind, "file": rel, "scale": v.scale, "frames_scale": v.frames_scale,
                    "width": int(n.get("width", 0)), "height": int(n.get("height", 0)),
                    "frames": int(n.get("frames", 1)), "read_bytes": int(n.get("read_bytes", 0)),
                    "read_s": st.get("read", 0) / 1e9 if split else 0.0,
                    "decode_s": st["decode"] / 1e9 if split else m["wall_ns"] / 1e9,
                    "augment_s": st["augment"] / 1e9 if split else 0.0,
                    "split": split, "getitem_s": m["wall_ns"] / 1e9, "getitem_cpu_s": m["cpu_ns"] / 1e9,
                    "reps": m["reps"]})
        if not points:
            raise ValueError("no point measured within --max-seconds")
        doc = {"schema": SCHEMA, "data": os.path.abspath(src_root),
               "settings": {"scales": scales, "frame_scales": frame_scales, "samples": samples, "reps": reps,
                            "seed": seed, "jpeg_quality": quality, "max_seconds": max_seconds,
                            "rounds_completed": rounds_done},
               "sampled_files": sampled, "stopped": stopped or None, "notes": notes,
               "points": points, "wall_s": time.monotonic() - t_start,
               "manifest": {"source": "probe media", "versions": versions(), "hardware": hardware(),
                            "command": list(sys.argv)}}
        _write_atomically(out_path, json.dumps(doc, indent=1, sort_keys=True) + "\n")
        return doc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class BenchFactory:
    """The bench pipeline (simreplay_capture.bench) as a probe factory: its real BenchDataset over the
    variant tree's files/, decoding `frames x frames_scale` frames per clip."""

    def __init__(self, image_size: int, frames: int) -> None:
        self.image_size, self.frames = image_size, frames

    def __call__(self, root: str, frames_scale: float = 1.0) -> Any:
        from .bench.pipeline import BenchDataset
        return BenchDataset(root, "files", self.image_size, max(1, int(round(self.frames * frames_scale))))


def _floats(text: str, what: str, ap: argparse.ArgumentParser) -> List[float]:
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        vals = []
    if not vals or any(not (0.05 <= v <= 16) for v in vals):
        ap.error(f"{what}: expected comma-separated numbers in 0.05..16, got {text!r}")
    return vals


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="probe_media", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--bench-data", help="a bench dataset directory (simreplay_capture.bench make-dataset, "
                                          "with its files/ format)")
    src.add_argument("--data", help="the directory of your media files (with --dataset)")
    ap.add_argument("--dataset", help="MOD:FN building your Dataset over a directory: FN(root[, frames_scale=f])")
    ap.add_argument("--image-size", type=int, default=96, help="--bench-data: the crop size")
    ap.add_argument("--frames", type=int, default=4, help="--bench-data: frames decoded per clip")
    ap.add_argument("--scales", default="0.5,1,2", help="linear scales of the images")
    ap.add_argument("--frame-scales", default="1,2", help="clip lengths, as multiples of the stored one")
    ap.add_argument("--samples", type=int, default=12, help="files per media (seeded sample)")
    ap.add_argument("--reps", type=int, default=3, help="measured rounds (the least time per stage is kept)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jpeg-quality", type=int, default=90)
    ap.add_argument("--max-seconds", type=float, default=120.0, help="stop measuring after this long")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    scales, frame_scales = _floats(args.scales, "--scales", ap), _floats(args.frame_scales, "--frame-scales", ap)
    if args.samples < 1 or args.reps < 1 or args.max_seconds <= 0 or not 1 <= args.jpeg_quality <= 100:
        ap.error("expected --samples >= 1, --reps >= 1, --max-seconds > 0, --jpeg-quality in 1..100")
    if args.bench_data:
        root, factory = args.bench_data, BenchFactory(args.image_size, args.frames)
    else:
        if not args.dataset or ":" not in args.dataset:
            ap.error("--data needs --dataset MOD:FN")
        mod, fn = args.dataset.split(":", 1)
        factory = getattr(importlib.import_module(mod), fn)
        root = args.data
    if not os.path.isdir(root):
        print(f"probe_media: {root}: not a directory", file=sys.stderr)
        return 3
    try:
        doc = run_probe(root, factory, args.out, scales, frame_scales, args.samples, args.reps, args.seed,
                        args.jpeg_quality, args.max_seconds)
    except (OSError, ValueError, KeyError) as e:
        print(f"probe_media: {root}: {e}", file=sys.stderr)
        return 3 if isinstance(e, (ValueError, KeyError)) else 1
    by: Dict[str, int] = {}
    for p in doc["points"]:
        by[p["media"]] = by.get(p["media"], 0) + 1
    print(f"probe_media: {len(doc['points'])} points ({', '.join(f'{k} {v}' for k, v in sorted(by.items()))}) "
          f"in {doc['wall_s']:.1f} s -> {args.out}" + (f" ({doc['stopped']})" if doc["stopped"] else ""))
    for n in doc["notes"]:
        print(f"probe_media: note: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
