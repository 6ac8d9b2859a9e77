"""What a preflight checkpoint holds besides model and optimizer: RNG states and the loader position.

The loader position is (epoch, batches consumed in the epoch, the RNG state the epoch's iterator
started from). Restoring it rebuilds the epoch's iterator from that RNG state and fetches the consumed
batches again (replay). Replay is exact with workers because each worker's seed comes from the
loader's generator at iterator start (torch 1.13 `_BaseDataLoaderIter.__init__`: `_base_seed`) and a
worker draws its augmentations in the same order again; skipping indices in the sampler instead would
hand batches to other workers and change their random draws.
"""
from __future__ import annotations

import hashlib
import random
from typing import Any, Dict, Optional

import torch


def rng_state(loader: Any) -> Dict[str, Any]:
    import numpy as np
    st: Dict[str, Any] = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        "loader_generator": loader.generator.get_state() if loader.generator is not None else None,
    }
    return st


def set_rng_state(loader: Any, st: Dict[str, Any]) -> None:
    import numpy as np
    random.setstate(st["python"])
    np.random.set_state(st["numpy"])
    torch.set_rng_state(st["torch"])
    if st.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(st["cuda"])
    if st.get("loader_generator") is not None:
        if loader.generator is None:
            raise ValueError("checkpoint has a loader generator state but the rebuilt loader has no generator")
        loader.generator.set_state(st["loader_generator"])


class LoaderCursor:
    """Iterates a DataLoader across epochs and knows its position (epoch, batch in epoch)."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.epoch = 0
        self.batch_in_epoch = 0
        self.epoch_start_rng: Optional[Dict[str, Any]] = None
        self._it: Any = None

    def _start_epoch(self) -> None:
        sampler = getattr(self.loader, "sampler", None)
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(self.epoch)  # DistributedSampler: the shuffle depends on the epoch
        self.epoch_start_rng = rng_state(self.loader)
        self._it = iter(self.loader)
        self.batch_in_epoch = 0

    def next(self) -> Any:
        if self._it is None:
            self._start_epoch()
        try:
            b = next(self._it)
        except StopIteration:
            self.epoch += 1
            self._start_epoch()
            b = next(self._it)
        self.batch_in_epoch += 1
        return b

    def state(self) -> Dict[str, Any]:
        if self._it is None:  # no batch taken yet: the next epoch starts from the current RNG
            return {"epoch": self.epoch, "batch_in_epoch": 0, "epoch_start_rng": None}
        return {"epoch": self.epoch, "batch_in_epoch": self.batch_in_epoch,
                "epoch_start_rng": self.epoch_start_rng}

    def restore(self, st: Dict[str, Any], replay: bool = True) -> int:
        """Move to a saved position. Returns the batches replayed. The caller restores the save-time
        RNG afterwards (replay draws from the epoch-start state)."""
        self.close()
        self.epoch = int(st["epoch"])
        if st["epoch_start_rng"] is None:
            return 0
        set_rng_state(self.loader, st["epoch_start_rng"])
        sampler = getattr(self.loader, "sampler", None)
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(self.epoch)
        self.epoch_start_rng = st["epoch_start_rng"]
        self._it = iter(self.loader)
        self.batch_in_epoch = 0
        n = int(st["batch_in_epoch"]) if replay else 0
        for _ in range(n):
            next(self._it)
            self.batch_in_epoch += 1
        return n

    def close(self) -> None:
        it, self._it = self._it, None
        if it is not None and hasattr(it, "_shutdown_workers"):
            it._shutdown_workers()  # join the workers now rather than at garbage collection
        del it


def tensor_digest(obj: Any, h: Optional[Any] = None) -> str:
    """sha256 over every tensor of a batch (dtype, shape, bytes), walking dicts (sorted), lists, tuples."""
    top = h is None
    h = h or hashlib.sha256()
    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        h.update(f"{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    elif isinstance(obj, dict):
        for k in sorted(obj, key=str):
            h.update(str(k).encode())
            tensor_digest(obj[k], h)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            tensor_digest(v, h)
    else:
        h.update(repr(obj).encode())
    return h.hexdigest() if top else ""


def params_state(model: Any) -> Dict[str, torch.Tensor]:
    return {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
