"""The preflight's measurements beside the kill/restore cycle (docs/preflight-format.md, `precision`,
`activation_checkpointing`, `sequence_length`): they run in the reference process after its
comparison step is saved, so nothing they change can touch the cycle's figures.

Every variant starts from the same snapshot (model, optimizer, extra state, every RNG) and runs the
user's own `job.step` on the same fixed batches, so two variants differ only in what is varied.
"""
from __future__ import annotations

import copy
import math
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from .preflight_mem import reset_host_peak, vm_hwm_bytes
from .preflight_state import rng_state, set_rng_state

LOW_PRECISIONS = {"bf16": torch.bfloat16, "fp16": torch.float16}


class Snapshot:
    """Model, optimizer, extra state and RNG as they are now; restore() puts them back."""

    def __init__(self, job: Any) -> None:
        self.job = job
        self.model = copy.deepcopy(job.model.state_dict())
        self.optimizer = copy.deepcopy(job.optimizer.state_dict())
        self.extra = {k: copy.deepcopy(v.state_dict()) for k, v in job.extra_state.items()}
        self.scaler = copy.deepcopy(job.scaler.state_dict()) if job.scaler is not None else None
        self.rng = rng_state(job.loader)

    def restore(self) -> None:
        j = self.job
        j.model.load_state_dict(self.model)
        j.optimizer.load_state_dict(copy.deepcopy(self.optimizer))
        for k, v in j.extra_state.items():
            v.load_state_dict(copy.deepcopy(self.extra[k]))
        if self.scaler is not None:
            j.scaler.load_state_dict(copy.deepcopy(self.scaler))
        set_rng_state(j.loader, self.rng)


def _loss_of(out: Any) -> float:
    loss = out.get("loss") if isinstance(out, dict) else out
    return float(loss.detach().float().cpu().item()) if hasattr(loss, "detach") else float(loss)


def _param_ptrs(model: Any) -> set:
    return {p.data_ptr() for p in model.parameters()} | {b.data_ptr() for b in model.buffers()}


class StepRunner:
    """Runs `job.step` on given batches and measures each call: wall time (CUDA synchronized), peak
    memory of the step, and the activation bytes autograd saved for backward."""

    def __init__(self, job: Any, device: Any) -> None:
        self.job, self.device = job, device
        self.cuda = device.type == "cuda"
        self.autocast: Optional[torch.dtype] = None  # set when the preflight wraps the step itself

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)

    def one(self, batch: Any) -> Dict[str, Any]:
        params = _param_ptrs(self.job.model)
        seen: Dict[int, int] = {}

        def pack(t: torch.Tensor) -> torch.Tensor:
            try:
                st = t.storage()
                ptr = st.data_ptr()
                if ptr not in params and ptr not in seen:
                    seen[ptr] = st.nbytes()
            except Exception:  # a tensor without storage (sparse, functional wrappers): not counted
                pass
            return t
        self.sync()
        if self.cuda:
            torch.cuda.reset_peak_memory_stats(self.device)
            base = torch.cuda.memory_allocated(self.device)
        else:
            reset_host_peak()
            base = vm_hwm_bytes()
        t0 = time.perf_counter()
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            if self.autocast is not None:
                with torch.autocast(self.device.type, dtype=self.autocast):
                    out = self.job.step(batch)
            else:
                out = self.job.step(batch)
        self.sync()
        dt = time.perf_counter() - t0
        if self.cuda:
            peak = int(torch.cuda.max_memory_allocated(self.device))
        else:
            hw = vm_hwm_bytes()
            peak = hw if hw is not None else None
        return {"step_s": dt, "loss": _loss_of(out), "activation_bytes": sum(seen.values()),
                "peak_bytes": peak, "peak_above_start_bytes": (peak - base) if peak is not None and base is not None
                else None}

    def run(self, batches: List[Any], warmup: int = 0) -> Dict[str, Any]:
        recs = [self.one(b) for b in batches]
        meas = recs[warmup:] or recs
        return {"losses": [r["loss"] for r in recs],
                "step_time_s": sum(r["step_s"] for r in meas) / len(meas),
                "step_times_s": [r["step_s"] for r in recs],
                "activation_bytes": max(r["activation_bytes"] for r in meas),
                "peak_bytes": _max_or_none([r["peak_bytes"] for r in meas]),
                "peak_above_start_bytes": _max_or_none([r["peak_above_start_bytes"] for r in meas])}


def _max_or_none(xs: List[Optional[int]]) -> Optional[int]:
    v = [x for x in xs if x is not None]
    return max(v) if v else None


def flat_params(model: Any) -> torch.Tensor:
    return torch.cat([p.detach().double().reshape(-1).cpu() for p in model.parameters()])


def precision(job: Any, runner: StepRunner, snap: Snapshot, batches: List[Any], low: str,
              loss_rtol: float, param_rtol: float) -> Dict[str, Any]:
    """N steps in fp32 and N in `low` from the same state on the same batches; loss and parameter drift."""
    hook: Optional[Callable[[str], None]] = job.set_precision
    if low not in LOW_PRECISIONS:
        return {"measured": False, "note": f"--precision {low}: nothing to compare"}
    if low == "fp16" and not runner.cuda:
        return {"measured": False, "low": low, "note": "fp16 autocast needs CUDA in torch 1.13; use --precision bf16 on CPU"}
    how = ("the step entry's set_precision hook" if hook is not None else
           f"the preflight's torch.autocast({runner.device.type!r}, {LOW_PRECISIONS[low]}) around the step "
           "(the entry has no set_precision hook)")
    snap.restore()
    p0 = flat_params(job.model)
    if hook is not None:
        hook("fp32")
    runner.autocast = None
    a = runner.run(batches, warmup=1 if len(batches) > 1 else 0)
    pa = flat_params(job.model)
    snap.restore()
    if hook is not None:
        hook(low)
    else:
        runner.autocast = LOW_PRECISIONS[low]
    b = runner.run(batches, warmup=1 if len(batches) > 1 else 0)
    pb = flat_params(job.model)
    if hook is not None:
        hook("fp32")
    runner.autocast = None
    snap.restore()
    loss_rel = [abs(x - y) / max(abs(x), 1e-12) for x, y in zip(a["losses"], b["losses"])]
    finite = all(math.isfinite(x) for x in b["losses"])
    upd = float((pa - p0).norm())
    drift = float((pb - pa).norm())
    norm = float(pa.norm())
    rel_norm = drift / norm if norm > 0 else None
    rel_update = drift / upd if upd > 0 else None
    ok = finite and max(loss_rel) <= loss_rtol and rel_norm is not None and rel_norm <= param_rtol
    return {"measured": True, "low": low, "how": how, "steps": len(batches),
            "losses_fp32": a["losses"], "losses_low": b["losses"],
            "loss_max_rel_diff": max(loss_rel), "param_drift_rel_to_norm": rel_norm,
            "param_drift_rel_to_update": rel_update, "param_drift_l2": drift,
            "loss_rtol": loss_rtol, "param_rtol": param_rtol, "pass": bool(ok),
            "step_time_s_fp32": a["step_time_s"], "step_time_s_low": b["step_time_s"],
            "peak_bytes_fp32": a["peak_bytes"], "peak_bytes_low": b["peak_bytes"],
            "activation_bytes_fp32": a["activation_bytes"], "activation_bytes_low": b["activation_bytes"]}


def activation_checkpointing(job: Any, runner: StepRunner, snap: Snapshot, batches: List[Any]) -> Dict[str, Any]:
    hook: Optional[Callable[[bool], None]] = job.set_activation_checkpointing
    if hook is None:
        return {"measured": False, "note": "not measured: the step entry has no set_activation_checkpointing hook "
                                           "(docs/capture.md#preflight); the planner keeps its labelled default"}
    res = {}
    for on in (False, True):
        snap.restore()
        hook(on)
        res[on] = runner.run(batches, warmup=1 if len(batches) > 1 else 0)
    hook(False)
    snap.restore()
    off, on_ = res[False], res[True]
    saved = off["activation_bytes"] - on_["activation_bytes"]
    peak_saved = (off["peak_above_start_bytes"] - on_["peak_above_start_bytes"]
                  if off["peak_above_start_bytes"] is not None and on_["peak_above_start_bytes"] is not None else None)
    same_loss = off["losses"] == on_["losses"]
    return {"measured": True, "steps": len(batches),
            "step_time_s_off": off["step_time_s"], "step_time_s_on": on_["step_time_s"],
            "recompute_s": on_["step_time_s"] - off["step_time_s"],
            "activation_bytes_off": off["activation_bytes"], "activation_bytes_on": on_["activation_bytes"],
            "activation_bytes_saved": saved,
            "peak_bytes_off": off["peak_bytes"], "peak_bytes_on": on_["peak_bytes"],
            "peak_above_start_bytes_off": off["peak_above_start_bytes"],
            "peak_above_start_bytes_on": on_["peak_above_start_bytes"], "peak_bytes_saved": peak_saved,
            "losses_equal": same_loss,
            "note": ("activation_bytes: distinct storages autograd saved for backward during the step "
                     "(torch.autograd.graph.saved_tensors_hooks; parameters excluded): exact on every device. "
                     + ("peak_*: torch.cuda.max_memory_allocated over the step" if runner.cuda else
                        "peak_*: the process's VmHWM after resetting it (/proc/self/clear_refs 5) before the step: "
                        "host RSS, coarse (the allocator may reuse pages freed by an earlier step)"))}


def attention_share(l1: int, t1: float, l2: int, t2: float) -> Tuple[Optional[float], Optional[float], str]:
    """The two-part rule f(L) = a*L + b*L^2 (a: the linear part, b: attention) through two points.
    Returns (share of the quadratic part at l1, at l2, note). With k = l2/l1 and r = f(l2)/f(l1):
    share(l1) = (r - k) / (k^2 - k), share(l2) = k^2 * share(l1) / r. Outside [0, 1] it is clamped and
    the note says why (r < k: a constant part such as the optimizer step is not negligible at these
    lengths; r > k^2: grows faster than quadratic)."""
    if not (l2 > l1 > 0 and t1 > 0 and t2 > 0):
        return None, None, "needs two lengths l2 > l1 > 0 and positive figures"
    k, r = l2 / l1, t2 / t1
    s1 = (r - k) / (k * k - k)
    note = "fitted"
    if s1 < 0:
        note = (f"clamped to 0: grew x{r:.3f} for x{k:g} length, less than linear (a constant part such as the "
                "optimizer step or launch overhead is not negligible at these lengths)")
        s1 = 0.0
    elif s1 > 1:
        note = f"clamped to 1: grew x{r:.3f} for x{k:g} length, more than quadratic"
        s1 = 1.0
    s2 = min(1.0, k * k * s1 / r) if s1 > 0 else 0.0
    return s1, s2, note


def sequence_lengths(job: Any, runner: StepRunner, snap: Snapshot, lens: List[int], steps: int) -> Dict[str, Any]:
    hook = job.batch_at_sequence_length
    if hook is None:
        return {"measured": False, "note": "not measured: the step entry has no batch_at_sequence_length hook"}
    if len(lens) != 2:
        return {"measured": False, "note": "not measured: no two sequence lengths (--seq-lens L1,L2, or the entry's "
                                           "description.sequence_length)"}
    pts = []
    for L in lens:
        snap.restore()
        b = hook(int(L))
        r = runner.run([b] * (steps + 1), warmup=1)
        pts.append({"sequence_length": int(L), "step_time_s": r["step_time_s"],
                    "activation_bytes": r["activation_bytes"], "peak_bytes": r["peak_bytes"],
                    "peak_above_start_bytes": r["peak_above_start_bytes"]})
    snap.restore()
    (a, b) = pts
    t1, t2, tnote = attention_share(a["sequence_length"], a["step_time_s"], b["sequence_length"], b["step_time_s"])
    m1, m2, mnote = attention_share(a["sequence_length"], float(a["activation_bytes"]), b["sequence_length"],
                                    float(b["activation_bytes"]))
    return {"measured": True, "points": pts, "steps_per_point": steps,
            "rule": "f(L) = a*L + b*L^2 per micro-batch at fixed micro-batch size; attention share = b*L^2 / f(L)",
            "attention_share_time": {"at_l1": t1, "at_l2": t2, "note": tnote},
            "attention_share_activation_memory": {"at_l1": m1, "at_l2": m2, "note": mnote}}
