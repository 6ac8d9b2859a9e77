"""The preflight step protocol: what a user's `--step module:function` receives and must return.

The entry is called once per process (train, reference and restore runs, and once per rank):

    def build(ctx: PreflightContext) -> PreflightJob

It must build the model, optimizer and real DataLoader from `ctx.seed` alone (the preflight seeds
python, numpy and torch before calling it), so that every process builds the same job. The module may
also define `prepare(opts: Dict[str, str], work_dir: str) -> Dict[str, str]`, called once in the
launching process before any run (e.g. to build a dataset); its result replaces the options.
"""
from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Callable, Dict, Optional, Tuple

DEFAULT_STEP = "simreplay_capture.bench.preflight_step:build"


class ProtocolError(Exception):
    """The entry cannot be loaded or does not follow the protocol (bad input: exit code 3)."""


@dataclasses.dataclass
class PreflightContext:
    seed: int
    device: Any  # torch.device the step runs on
    rank: int
    world_size: int
    local_rank: int
    opts: Dict[str, str]  # --opt KEY=VALUE pairs, after prepare()
    work_dir: str  # persistent directory the entry may use (DIR/entry)

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


@dataclasses.dataclass
class PreflightJob:
    model: Any  # torch.nn.Module
    optimizer: Any  # torch.optim.Optimizer
    loader: Any  # torch.utils.data.DataLoader (map-style; the loader the long run uses)
    # step(batch) runs forward, backward and the optimizer step. Returns the loss (tensor or float)
    # or {"loss": ..., "comm_s": seconds spent in communication inside the call}.
    step: Callable[[Any], Any]
    scaler: Optional[Any] = None  # torch.cuda.amp.GradScaler when mixed precision is used
    extra_state: Dict[str, Any] = dataclasses.field(default_factory=dict)  # name -> obj with state_dict()
    description: Dict[str, Any] = dataclasses.field(default_factory=dict)  # model, resolution, ...
    # Optional hooks (docs/capture.md#preflight); each measurement is reported as not measured without it.
    # evaluate() runs the user's evaluation on the current state and returns its output (a tensor, a
    # number, or a dict/list of them); timed, and compared before the kill and after the restore.
    evaluate: Optional[Callable[[], Any]] = None
    # set_precision("fp32" | "bf16" | "fp16") switches the step's precision (autocast, scaler); without
    # it the preflight wraps the step in torch.autocast itself.
    set_precision: Optional[Callable[[str], None]] = None
    # set_activation_checkpointing(on) makes the model's forward use torch.utils.checkpoint, or not.
    set_activation_checkpointing: Optional[Callable[[bool], None]] = None
    # batch_at_sequence_length(L) returns a micro-batch (of the long run's micro-batch size) whose
    # samples are L tokens long, for job.step.
    batch_at_sequence_length: Optional[Callable[[int], Any]] = None
    # the training configuration saved in every checkpoint (hyper-parameters, schedule, ...: JSON-able)
    config: Dict[str, Any] = dataclasses.field(default_factory=dict)


def split_entry(spec: str) -> Tuple[str, str]:
    mod, sep, fn = spec.partition(":")
    if not sep or not mod or not fn:
        raise ProtocolError(f"--step {spec!r}: expected module:function, found no ':' separator"
                            if not sep else f"--step {spec!r}: expected module:function, found an empty part")
    return mod, fn


def load_module(spec: str) -> Tuple[Any, Callable[..., Any]]:
    mod_name, fn_name = split_entry(spec)
    try:
        mod = importlib.import_module(mod_name)
    except Exception as e:  # the user's module may raise anything at import
        raise ProtocolError(f"--step {spec}: expected an importable module {mod_name!r}, found "
                            f"{type(e).__name__}: {e}") from None
    fn = getattr(mod, fn_name, None)
    if not callable(fn):
        raise ProtocolError(f"--step {spec}: expected a function {fn_name!r} in {mod_name}, found "
                            f"{'nothing' if fn is None else type(fn).__name__}")
    return mod, fn


def prepare_opts(spec: str, opts: Dict[str, str], work_dir: str) -> Dict[str, str]:
    mod, _ = load_module(spec)
    prep = getattr(mod, "prepare", None)
    if prep is None:
        return dict(opts)
    out = prep(dict(opts), work_dir)
    if not isinstance(out, dict):
        raise ProtocolError(f"--step {spec}: expected prepare() to return a dict of options, found "
                            f"{type(out).__name__}")
    return {str(k): str(v) for k, v in out.items()}


def build_job(spec: str, ctx: PreflightContext) -> PreflightJob:
    _, fn = load_module(spec)
    job = fn(ctx)
    if not isinstance(job, PreflightJob):
        raise ProtocolError(f"--step {spec}: expected build() to return a PreflightJob, found "
                            f"{type(job).__name__}")
    import torch
    checks = [("model", torch.nn.Module), ("optimizer", torch.optim.Optimizer),
              ("loader", torch.utils.data.DataLoader)]
    for name, kind in checks:
        v = getattr(job, name)
        if not isinstance(v, kind):
            raise ProtocolError(f"--step {spec}: expected job.{name} to be a {kind.__module__}."
                                f"{kind.__name__}, found {type(v).__name__}")
    for name in ("evaluate", "set_precision", "set_activation_checkpointing", "batch_at_sequence_length"):
        v = getattr(job, name)
        if v is not None and not callable(v):
            raise ProtocolError(f"--step {spec}: expected job.{name} to be callable or None, found {type(v).__name__}")
    if not callable(job.step):
        raise ProtocolError(f"--step {spec}: expected job.step to be callable, found {type(job.step).__name__}")
    if isinstance(job.loader.dataset, torch.utils.data.IterableDataset):
        raise ProtocolError(f"--step {spec}: expected a map-style dataset (its position can be restored), "
                            "found an IterableDataset")
    for name, obj in job.extra_state.items():
        if not (hasattr(obj, "state_dict") and hasattr(obj, "load_state_dict")):
            raise ProtocolError(f"--step {spec}: expected extra_state[{name!r}] to have state_dict() and "
                                f"load_state_dict(), found {type(obj).__name__}")
    return job


def parse_opts(pairs: Any) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for p in pairs or []:
        k, sep, v = p.partition("=")
        if not sep or not k:
            raise ProtocolError(f"--opt {p!r}: expected KEY=VALUE, found no '='" if not sep
                                else f"--opt {p!r}: expected KEY=VALUE, found an empty key")
        out[k] = v
    return out
