"""Bench Dataset (PIL images + PyAV clips, torchvision augmentation) and its collate function."""
from __future__ import annotations

import io
import os
from typing import Any, Dict, List

import torch

from .. import context as sc_ctx
from .dataset import Reader, is_url, load_manifest

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)


class BenchDataset(torch.utils.data.Dataset):
    """Map-style multimodal dataset. Image -> float [3,S,S]; clip -> float [K,3,S,S].

    read: bytes from storage; decode: PIL / PyAV to uint8 tensors (video frames resized to 2*S on
    the short side while decoding, as video loaders do); augment: RandomResizedCrop(S) + horizontal
    flip (one draw per clip) + normalise.
    """

    def __init__(self, root: str, fmt: str, image_size: int = 128, frames: int = 8) -> None:
        self.root = root
        self.fmt = fmt
        self.man = load_manifest(root)
        self.reader = Reader(root, fmt, self.man)
        self.image_size = image_size
        self.frames = frames
        import torchvision.transforms as T
        self.crop = T.RandomResizedCrop(image_size, antialias=True) if _has_antialias() \
            else T.RandomResizedCrop(image_size)
        self.flip = T.RandomHorizontalFlip()

    def __len__(self) -> int:
        return len(self.man["samples"])

    def data_stats(self) -> Dict[str, Any]:
        return {"files": self.man["files"], "bytes": self.man["bytes"], "mix": self.man["mix"],
                "format": self.fmt, "path": self.root if is_url(self.root) else os.path.abspath(self.root)}

    def __getitem__(self, i: int) -> Dict[str, Any]:
        with sc_ctx.stage("read"):
            data = self.reader.read(i)
        return self.sample_from_bytes(i, data)

    def sample_from_bytes(self, i: int, data: bytes) -> Dict[str, Any]:
        """Decode and augment sample i's bytes (the map-style __getitem__ and the tar stream share it)."""
        s = self.man["samples"][i]
        if s["kind"] == "image":
            with sc_ctx.stage("decode"):
                x = _decode_jpeg(data)
            with sc_ctx.stage("augment"):
                y = self._augment(x)
            sc_ctx.note(read_bytes=len(data), format="jpeg", width=x.shape[-1], height=x.shape[-2], frames=1)
        else:
            with sc_ctx.stage("decode"):
                x = _decode_clip(data, self.frames, 2 * self.image_size)
            with sc_ctx.stage("augment"):
                y = self._augment(x)
            sc_ctx.note(read_bytes=len(data), format="mp4", width=x.shape[-1], height=x.shape[-2],
                        frames=x.shape[0])
        return {"x": y, "video": s["kind"] == "video", "index": i}

    def _augment(self, x: torch.Tensor) -> torch.Tensor:
        # the same crop/flip for every frame of a clip: transforms act on the last two dims
        y = self.flip(self.crop(x)).float().div_(255.0)
        return (y - MEAN) / STD


def _has_antialias() -> bool:
    import inspect
    import torchvision.transforms as T
    return "antialias" in inspect.signature(T.RandomResizedCrop.__init__).parameters


def _decode_jpeg(data: bytes) -> torch.Tensor:
    import numpy as np
    from PIL import Image
    with Image.open(io.BytesIO(data)) as im:
        im.draft("RGB", (im.width, im.height))
        arr = np.asarray(im.convert("RGB"))
    return torch.from_numpy(arr.copy()).permute(2, 0, 1).contiguous()


def _decode_clip(data: bytes, frames: int, short_side: int) -> torch.Tensor:
    import av
    import numpy as np
    out: List[np.ndarray] = []
    with av.open(io.BytesIO(data)) as c:
        st = c.streams.video[0]
        st.thread_type = "SLICE"
        st.codec_context.thread_count = 1
        for fr in c.decode(st):
            w, h = fr.width, fr.height
            sc = short_side / min(w, h)
            out.append(fr.to_ndarray(width=int(w * sc) // 2 * 2, height=int(h * sc) // 2 * 2,
                                     format="rgb24"))
            if len(out) == frames:
                break
    while len(out) < frames:  # short clip: repeat the last frame
        out.append(out[-1])
    return torch.from_numpy(np.stack(out)).permute(0, 3, 1, 2).contiguous()


def multimodal_collate(samples: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Images and clips do not share a shape: stack each modality separately.

    Returns {"images": [Bi,3,S,S], "videos": [Bv,K,3,S,S], "index": [B], "is_video": [B]} with empty
    leading dims when a modality is absent.
    """
    imgs = [s["x"] for s in samples if not s["video"]]
    vids = [s["x"] for s in samples if s["video"]]
    ref = samples[0]["x"]
    S = ref.shape[-1]
    K = vids[0].shape[0] if vids else 0
    return {
        "images": torch.stack(imgs) if imgs else torch.empty((0, 3, S, S)),
        "videos": torch.stack(vids) if vids else torch.empty((0, K, 3, S, S)),
        "index": torch.tensor([s["index"] for s in samples], dtype=torch.long),
        "is_video": torch.tensor([bool(s["video"]) for s in samples]),
    }


def bench_stream(root: str, image_size: int = 128, frames: int = 8) -> Any:
    """The bench pipeline streaming its tar shards over HTTP (simreplay_capture.remote.TarShardStream):
    WebDataset-style, one GET per shard, shards assigned round-robin to ranks x workers."""
    from ..remote import TarShardStream
    if not is_url(root):
        raise ValueError(f"{root}: streaming reads tar shards over HTTP; give the dataset's http:// URL")
    ds = BenchDataset(root, "tar", image_size, frames)
    index = {s["key"]: i for i, s in enumerate(ds.man["samples"])}
    shards = ds.man["formats"]["tar"]["shards"]
    base = root.rstrip("/")

    def decode(key: str, members: Dict[str, bytes]) -> Dict[str, Any]:
        if key not in index or len(members) != 1:
            raise ValueError(f"tar stream: unexpected member(s) {sorted(members)} for key {key!r}")
        return ds.sample_from_bytes(index[key], next(iter(members.values())))

    return TarShardStream([f"{base}/tar/{name}" for name in shards], decode, length=len(ds))
