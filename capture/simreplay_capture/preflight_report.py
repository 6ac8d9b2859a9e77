"""Turning the phases' results into preflight.json (docs/preflight-format.md) and summary.txt."""
from __future__ import annotations

import math
import struct
from typing import Any, Dict, List, Optional

SCHEMA = "simreplay.preflight/1"
CHECKS = ("steps_ran", "checkpoint_saved", "async_identical", "killed", "no_orphans",
          "checkpoint_readable", "loader_position", "resume_loss", "resume_parameters", "checkpoint_config",
          "eval_restored", "precision", "pilot_matches_plan")


def stats(xs: List[float]) -> Optional[Dict[str, float]]:
    if not xs:
        return None
    s = sorted(xs)

    def q(p: float) -> float:  # nearest rank
        return s[max(0, min(len(s) - 1, math.ceil(p * len(s)) - 1))]
    return {"mean": sum(s) / len(s), "p50": q(0.5), "p95": q(0.95), "max": s[-1], "min": s[0]}


def same_float(a: float, b: float) -> bool:
    return struct.pack("<d", a) == struct.pack("<d", b)


def close(a: float, b: float, rtol: float, atol: float) -> bool:
    return abs(a - b) <= atol + rtol * abs(b)


class Checks:
    def __init__(self) -> None:
        self.items: Dict[str, Dict[str, Any]] = {}

    def set(self, name: str, ok: bool, reason: str) -> bool:
        assert name in CHECKS, name
        self.items[name] = {"name": name, "pass": bool(ok), "reason": reason}
        return ok

    def doc(self) -> List[Dict[str, Any]]:
        out = []
        for n in CHECKS:
            out.append(self.items.get(n) or {"name": n, "pass": False,
                                             "reason": "not run: an earlier phase failed"})
        return out

    def all_pass(self) -> bool:
        return all(c["pass"] for c in self.doc())


def steps_block(train: List[Dict[str, Any]], world: int, micro_batch: int) -> Dict[str, Any]:
    r0 = train[0]["steps"]
    meas = [s for s in r0 if not s["warmup"]]
    comm = [s["comm_s"] for s in meas if s["comm_s"] is not None]
    wall = sum(s["step_time_s"] for s in meas)
    out = {
        "warmup_steps": sum(1 for s in r0 if s["warmup"]), "measured_steps": len(meas),
        "step_time_s": stats([s["step_time_s"] for s in meas]),
        "data_wait_s": stats([s["data_wait_s"] for s in meas]),
        "compute_s": stats([s["compute_s"] for s in meas]),
        "comm_s": stats(comm) if comm else None,
        "comm_note": ("reported by the step callable (the bundled entry: a synchronous gradient all-reduce "
                      "after backward, timed around the collective)" if comm else
                      "null: a single process has no communication" if world == 1 else
                      "null: the step callable reported no comm_s"),
        "samples_per_s": (micro_batch * world * len(meas) / wall) if wall > 0 else None,
        "per_rank_step_time_s": [
            (lambda m: sum(m) / len(m) if m else None)([s["step_time_s"] for s in t["steps"] if not s["warmup"]])
            for t in train],
        "per_step": [{k: s[k] for k in ("step", "warmup", "data_wait_s", "compute_s", "comm_s", "step_time_s",
                                        "loss")} for s in r0],
    }
    return out


def _g(x: Any) -> str:
    return "n/a" if x is None else f"{x:.3g}"


def fmt_bytes(n: Optional[float]) -> str:
    if n is None:
        return "n/a"
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{int(n)} B"


def fmt_s(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{x:.3f} s"


def summary_text(doc: Dict[str, Any]) -> str:
    L: List[str] = []
    L.append(f"preflight {doc['status'].upper()} ({doc['accelerator']}: {doc['accelerator_note']})")
    pl = doc.get("pilot") or {}
    if pl.get("smaller_than_plan"):
        L.append("!!! PILOT SMALLER THAN THE PLAN: " + "; ".join(pl["why"]) + " !!!")
    j, st, mem = doc.get("job") or {}, doc.get("steps") or {}, doc.get("memory") or {}
    if j:
        L.append(f"job: {j.get('description', {}).get('model', j.get('entry'))}; {j.get('world_size')} rank(s), "
                 f"micro-batch {j.get('micro_batch_samples')} samples, {j.get('parameters')} parameters")
    if st and st.get("step_time_s"):
        c = st["comm_s"]["mean"] if st.get("comm_s") else None
        L.append(f"steps: {st['warmup_steps']} warm-up + {st['measured_steps']} measured; step "
                 f"{fmt_s(st['step_time_s']['mean'])} mean (data wait {fmt_s(st['data_wait_s']['mean'])}, "
                 f"compute {fmt_s(st['compute_s']['mean'])}"
                 + (f", comm {fmt_s(c)}" if c is not None else "")
                 + f"); {st['samples_per_s'] or 0.0:.1f} samples/s")
    if mem:
        if mem["kind"] == "cuda":
            L.append(f"peak memory (CUDA): allocated {fmt_bytes(mem['cuda_max_allocated_bytes'])}, reserved "
                     f"{fmt_bytes(mem['cuda_max_reserved_bytes'])}; host RSS peak {fmt_bytes(mem['host_rss_peak_bytes'])}")
        else:
            L.append(f"peak memory (host, no GPU): PSS main+workers {fmt_bytes(mem['host_tree_pss_peak_bytes'])}, "
                     f"main PSS {fmt_bytes(mem['host_pss_peak_bytes'])}, main RSS high-water "
                     f"{fmt_bytes(mem['host_rss_peak_bytes'])}")
    ck = doc.get("checkpoint") or {}
    if ck.get("sync"):
        s = ck["sync"]
        L.append(f"checkpoint: {fmt_bytes(s['bytes'])} in {s['files']} file(s), sync save {fmt_s(s['save_s'])} "
                 f"({fmt_bytes(s['write_bytes_per_s'])}/s)")
        a = ck.get("async") or {}
        if a.get("available"):
            L.append(f"  async (preflight's own, torch 1.13 has none): blocking {fmt_s(a['blocking_s'])}, "
                     f"total {fmt_s(a['total_s'])}, identical to sync: {a['identical_to_sync']}")
    k = doc.get("kill") or {}
    if k:
        L.append(f"kill: SIGKILL to the job's process group {fmt_s(k.get('kill_after_save_s'))} after the save; "
                 f"exit signals {k.get('exit_signals')}; orphans left {k.get('orphans_left')}")
    r = doc.get("restore") or {}
    if r.get("restore_s") is not None:
        L.append(f"restore: {fmt_s(r['restore_s'])} (verify {fmt_s(r['checkpoint_verify_s'])}, page cache "
                 f"{r['page_cache']}); fast-forward {r['fast_forward_batches']} batch(es) "
                 f"{fmt_s(r['fast_forward_s'])}; first step {fmt_s(r['first_step_s'])}; restart (launch to "
                 f"first step) {fmt_s(r['restart_s'])}")
    rs = doc.get("resume") or {}
    if rs.get("loss_resumed") is not None:
        L.append(f"resume ({rs['compare']}): loss {rs['loss_resumed']!r} vs reference {rs['loss_reference']!r}; "
                 f"parameters max |diff| {rs['param_max_abs_diff']!r}; bitwise equal: {rs['bitwise_equal']}")
    ev = doc.get("eval") or {}
    if ev.get("available"):
        L.append(f"eval: {fmt_s(ev['eval_s'])} before the kill, {fmt_s(ev['eval_s_after_restore'])} after the restore; "
                 f"output max |diff| {ev['max_abs_diff']!r} (within rtol/atol: {ev['within_tolerance']})")
    p = doc.get("precision") or {}
    if p.get("measured"):
        L.append(f"precision: fp32 {fmt_s(p['step_time_s_fp32'])} vs {p['low']} {fmt_s(p['step_time_s_low'])} per step; "
                 f"loss rel diff {_g(p['loss_max_rel_diff'])}, parameter drift {_g(p['param_drift_rel_to_norm'])}")
    else:
        L.append(f"precision: {p.get('note', 'not measured')}")
    a = doc.get("activation_checkpointing") or {}
    if a.get("measured"):
        L.append(f"activation checkpointing: saves {fmt_bytes(a['activation_bytes_saved'])} of activations "
                 f"({fmt_bytes(a['activation_bytes_off'])} -> {fmt_bytes(a['activation_bytes_on'])}), recompute "
                 f"{fmt_s(a['recompute_s'])} per step")
    else:
        L.append(f"activation checkpointing: {a.get('note', 'not measured')}")
    q = doc.get("sequence_length") or {}
    if q.get("measured"):
        p1, p2 = q["points"]
        t = q["attention_share_time"]
        L.append(f"sequence length: {p1['sequence_length']} -> {fmt_s(p1['step_time_s'])}, {p2['sequence_length']} -> "
                 f"{fmt_s(p2['step_time_s'])}; attention share of step time {_g(t['at_l2'])} at {p2['sequence_length']} "
                 f"({t['note']})")
    else:
        L.append(f"sequence length: {q.get('note', 'not measured')}")
    for c in doc["checks"]:
        L.append(f"[{'PASS' if c['pass'] else 'FAIL'}] {c['name']}: {c['reason']}")
    return "\n".join(L) + "\n"
