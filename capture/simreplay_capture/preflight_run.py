"""The preflight's phases in order: train (measured steps, saves) and SIGKILL, reference, restore,
then the comparison. Each fills its part of preflight.json and its checks (docs/preflight-format.md)."""
from __future__ import annotations

import argparse
import json
import os
from typing import Any, Dict, List, Optional

from . import preflight_ckpt as ck
from .preflight_launch import Phase
from .preflight_report import Checks, close, same_float, steps_block


def load_json(path: str) -> Optional[Dict[str, Any]]:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def damage(path: str, how: str) -> None:
    """Fault injection: truncate a checkpoint file to half, or flip one byte in its middle."""
    size = os.path.getsize(path)
    if how == "truncate-checkpoint":
        os.truncate(path, size // 2)
    else:
        with open(path, "r+b") as f:
            f.seek(size // 2)
            b = f.read(1)
            f.seek(size // 2)
            f.write(bytes([b[0] ^ 0xFF]))


def params_compare(work: str, world: int, rtol: float, atol: float) -> Dict[str, Any]:
    import torch
    from .preflight_state import tensor_digest
    maxdiff, bitwise, within, sha = 0.0, True, True, {}
    for r in range(world):
        a = ck.load_own(os.path.join(work, f"params-restore-rank{r}.pt"))
        b = ck.load_own(os.path.join(work, f"params-reference-rank{r}.pt"))
        if sorted(a) != sorted(b):
            return {"error": f"rank {r}: parameter names differ"}
        for k in a:
            x, y = a[k], b[k]
            if x.shape != y.shape or x.dtype != y.dtype:
                return {"error": f"rank {r}: {k}: shape/dtype {tuple(x.shape)}/{x.dtype} vs {tuple(y.shape)}/{y.dtype}"}
            if x.numel() == 0:
                continue
            bitwise &= bool(torch.equal(x.reshape(-1).view(torch.uint8), y.reshape(-1).view(torch.uint8)))
            if x.is_floating_point():
                maxdiff = max(maxdiff, float((x.double() - y.double()).abs().max()))
                within &= bool(torch.allclose(x.double(), y.double(), rtol=rtol, atol=atol))
            elif not torch.equal(x, y):
                maxdiff = max(maxdiff, float((x.double() - y.double()).abs().max()))
                within = False
        if r == 0:
            sha = {"resumed": tensor_digest(a), "reference": tensor_digest(b)}
    return {"max_abs_diff": maxdiff, "bitwise": bitwise, "within": within, "sha": sha}


def fail_reason(phase: Any, res: Optional[Dict[str, Any]], what: str) -> str:
    if res and res.get("error"):
        return f"{what}: {res['error']}"
    tail = phase.log_tail().strip().splitlines()
    codes = [p.returncode for p in phase.procs]
    return f"{what}: exit codes {codes}" + (f"; last log line: {tail[-1]}" if tail else "")


class PreflightRun:
    """One preflight: launches the phases as real processes and records what they report."""

    def __init__(self, args: argparse.Namespace, spec: Dict[str, Any], work: str, world: int, ckpt_dir: str,
                 doc: Dict[str, Any]) -> None:
        self.args, self.spec, self.work, self.world, self.ckpt_dir = args, spec, work, world, ckpt_dir
        self.doc = doc
        self.checks = Checks()
        self.phases: List[Phase] = []  # every launched phase, so the caller can make sure none outlives it
        self.train: List[Dict[str, Any]] = []
        self.refs: List[Dict[str, Any]] = []
        self.rests: List[Dict[str, Any]] = []
        self.sdir = ""

    def run(self) -> Optional[str]:
        """train + kill, reference, restore, compare. Returns a bad-input line (exit 3) or None."""
        bad = self.train_and_kill()
        if bad is not None or not self.train:
            return bad
        ref_ok = self.reference()
        if ref_ok and self.restore():
            self.compare()
            self.compare_eval()
        self.measurements(ref_ok)
        return None

    def train_and_kill(self) -> Optional[str]:
        """Phases 1-3: warm-up and measured steps, sync and async save, SIGKILL of the process group."""
        work, world, ckpt_dir = self.work, self.world, self.ckpt_dir
        tr = Phase("train", self.spec, world, work)
        self.phases.append(tr)
        saved, t_saved_seen = tr.wait_saved(self.args.timeout_s)
        t_kill = tr.kill()
        codes = [p.returncode for p in tr.procs]
        orphans = tr.reap_group()
        train = [load_json(os.path.join(work, f"train-rank{r}.json")) for r in range(world)]
        if not saved or any(t is None or "error" in t for t in train):
            bad = next((t for t in train if t and t.get("error")), None)
            self.checks.set("steps_ran", False, fail_reason(tr, bad, "the training process failed before the save"))
            if bad and bad.get("kind") == "protocol":
                return bad["error"]
            return None  # steps_ran says why
        t0 = train[0]
        self.doc["accelerator"] = t0["accelerator"]
        self.doc["accelerator_note"] = (f"the step ran on CUDA ({t0['device_name']})" if t0["accelerator"] == "cuda"
                                        else "no GPU: the step ran on the CPU; every figure is a CPU figure")
        job = t0["job"]
        micro = int(job["micro_batch_samples"] or 0)
        self.doc["job"] = {"entry": self.args.step, "description": job["description"], "world_size": world,
                           "micro_batch_samples": micro, "global_batch_samples": micro * world,
                           "parameters": job["parameters"], "parameter_bytes": job["parameter_bytes"],
                           "loader": job["loader"]}
        self.doc["steps"] = steps_block(train, world, micro)
        self.pilot_vs_plan(job["description"], micro)
        losses = [s["loss"] for t in train for s in t["steps"]]
        bad_loss = [x for x in losses if x is None or x != x or x in (float("inf"), float("-inf"))]
        st = self.doc["steps"]
        self.checks.set("steps_ran", not bad_loss,
                        f"{st['warmup_steps']} warm-up + {st['measured_steps']} measured steps on {world} rank(s); "
                        + ("every loss finite" if not bad_loss else f"{len(bad_loss)} non-finite loss(es)"))
        # per-rank peaks: the planner needs the largest (each rank has its own device or memory share)
        peak_rank = max(range(world), key=lambda r: train[r]["memory"]["peak_memory_bytes"] or 0)
        self.doc["memory"] = dict(train[peak_rank]["memory"], rank=peak_rank)
        # checkpoint figures: bytes summed over ranks, time of the slowest rank
        sync_b = sum(t["checkpoint"]["sync"]["bytes"] for t in train)
        sync_s = max(t["checkpoint"]["sync"]["save_s"] for t in train)
        a_b = sum(t["checkpoint"]["async"]["bytes"] for t in train)
        a_tot = max(t["checkpoint"]["async"]["total_s"] for t in train)
        identical = all(t["checkpoint"]["async"]["sha256"] == t["checkpoint"]["sync"]["sha256"] for t in train)
        step = t0["checkpoint"]["step"]
        sdir = ck.step_dir(ckpt_dir, step)
        self.doc["checkpoint"] = {
            "dir": ckpt_dir, "step": step, "contents": t0["checkpoint"]["contents"],
            "sync": {"bytes": sync_b, "files": world, "save_s": sync_s,
                     "write_bytes_per_s": sync_b / sync_s if sync_s > 0 else None},
            "async": {"available": True,
                      "implementation": ("preflight's own: torch 1.13 has no async_save (torch >= 2.3); the state is "
                                         "copied to host memory in the training thread, then written and fsynced by a "
                                         "background thread while the next step runs"),
                      "blocking_s": max(t["checkpoint"]["async"]["blocking_s"] for t in train), "total_s": a_tot,
                      "overlapped_step_s": t0["checkpoint"]["async"]["overlapped_step_s"], "bytes": a_b,
                      "write_bytes_per_s": a_b / a_tot if a_tot > 0 else None, "identical_to_sync": identical},
            "distributed": {"used": False, "note": (
                "torch 1.13 offers no usable distributed checkpoint here (torch.distributed.checkpoint is public from "
                "torch 2.0; 1.13's private _shard.checkpoint does not import on Python 3.11): each rank saves its own "
                "file, model and optimizer are replicated") if world > 1 else "single process"},
        }
        try:
            v = ck.verify_dir(sdir, load=False)
            va = ck.verify_dir(sdir + "-async", load=False)
            ok = v["files"] == world and va["files"] == world
            self.checks.set("checkpoint_saved", ok, f"{v['files']} file(s), {v['bytes']} bytes and the manifest in "
                            f"{sdir}; the async save's {va['files']} file(s) and manifest in {sdir}-async")
        except ck.CheckpointError as e:
            self.checks.set("checkpoint_saved", False, str(e))
        self.checks.set("async_identical", identical,
                        "the asynchronous files have the same sha256 as the synchronous ones" if identical
                        else "the asynchronous files differ from the synchronous ones")
        sig_ok = all(c == -9 for c in codes)
        self.checks.set("killed", sig_ok, f"every rank ended by SIGKILL (exit codes {codes})" if sig_ok
                        else f"expected every rank to end by SIGKILL (-9), found exit codes {codes}")
        t_save_end = max(t["t_saved"] for t in train)
        self.doc["kill"] = {"signal": "SIGKILL", "target": "process group", "pids": [t["pid"] for t in train],
                            "exit_signals": [-c if c is not None and c < 0 else None for c in codes],
                            "kill_after_save_s": t_kill - t_save_end, "orphans_left": orphans}
        tmp_left = ck.leftover_tmp(ckpt_dir)
        self.checks.set("no_orphans", orphans == 0 and not tmp_left,
                        f"{orphans} live process(es) of the killed group, {len(tmp_left)} temporary file(s) in the "
                        "checkpoint directory" + (f" ({tmp_left[0]})" if tmp_left else ""))
        for f in self.args.inject:
            if f in ("corrupt-checkpoint", "truncate-checkpoint"):
                damage(os.path.join(sdir, ck.rank_file(0)), f)
        self.train, self.sdir = train, sdir
        return None

    def reference(self) -> bool:
        """An uninterrupted run from the same seed, one step past the save."""
        work, world = self.work, self.world
        ref = Phase("reference", self.spec, world, work)
        self.phases.append(ref)
        ref.wait(self.args.timeout_s)
        refs = [load_json(os.path.join(work, f"reference-rank{r}.json")) for r in range(world)]
        if any(r is None or "error" in r for r in refs):
            bad = next((r for r in refs if r and r.get("error")), None)
            for n in ("loader_position", "resume_loss", "resume_parameters"):
                self.checks.set(n, False, fail_reason(ref, bad, "the reference run failed"))
            return False
        self.refs = refs
        return True

    def restore(self) -> bool:
        """Phases 4-5: a fresh process restores from storage (page cache evicted), fast-forwards, steps."""
        work, world, sdir = self.work, self.world, self.sdir
        files = [f for f in (os.path.join(sdir, ck.rank_file(r)) for r in range(world)) if os.path.exists(f)]
        why = ck.evict_page_cache(files)
        rs = Phase("restore", self.spec, world, work)
        self.phases.append(rs)
        rs.wait(self.args.timeout_s)
        rests = [load_json(os.path.join(work, f"restore-rank{r}.json")) for r in range(world)]
        if any(r is None or "error" in r for r in rests):
            bad = next((r for r in rests if r and r.get("error")), None)
            reason = fail_reason(rs, bad, "restore failed")
            ck_fail = bool(bad and bad.get("kind") == "checkpoint")
            self.checks.set("checkpoint_readable", False, reason)
            for n in ("loader_position", "resume_loss", "resume_parameters"):
                self.checks.set(n, False, "not run: the checkpoint could not be restored" if ck_fail else reason)
            return False
        r0 = rests[0]
        read_b = sum(r["checkpoint_read_bytes"] for r in rests)
        read_s = max(r["checkpoint_read_s"] for r in rests)
        self.doc["restore"] = {
            "checkpoint_read_s": read_s, "checkpoint_read_bytes": read_b,
            "read_bytes_per_s": read_b / read_s if read_s > 0 else None,
            "checkpoint_verify_s": max(r["checkpoint_verify_s"] for r in rests),
            "restore_s": max(r["restore_s"] for r in rests), "fast_forward": r0["fast_forward"],
            "fast_forward_batches": r0["fast_forward_batches"],
            "fast_forward_s": max(r["fast_forward_s"] for r in rests),
            "first_step_s": max(r["first_step_s"] for r in rests),
            "time_to_first_step_s": max(r["time_to_first_step_s"] for r in rests),
            "restart_s": max(r["restart_s"] for r in rests),
            "page_cache": "evicted" if why is None else f"warm ({why})",
        }
        self.checks.set("checkpoint_readable", True, f"{world} file(s) of step {r0['checkpoint_step']} verified "
                        f"(size, sha256) and loaded by a fresh process")
        cfg_ok = all(r["config_matches"] for r in rests)
        self.doc["restore"]["config_saved"] = r0["config_saved"]
        self.doc["restore"]["config_matches"] = cfg_ok
        bad_cfg = next((r for r in rests if not r["config_matches"]), None)
        self.checks.set("checkpoint_config", cfg_ok,
                        "the checkpoint's training configuration equals the restored job's" if cfg_ok else
                        ("the checkpoint holds no training configuration" if bad_cfg["config_saved"] is None else
                         f"the checkpoint's training configuration differs from the restored job's at "
                         f"{bad_cfg['config_diff']}"))
        self.rests = rests
        return True

    def compare(self) -> None:
        """The resumed step against the reference's: batch, loss, parameters."""
        work, world = self.work, self.world
        refs, r0, t0 = self.refs, self.rests[0], self.train[0]
        rf0 = refs[0]["step"]
        st0 = r0["step"]
        same_batch = rf0["batch_sha256"] == st0["batch_sha256"]
        self.checks.set("loader_position", same_batch,
                        f"the first resumed batch (step {st0['step']}) equals the reference's" if same_batch else
                        f"the first resumed batch (step {st0['step']}) differs from the reference's: expected sha256 "
                        f"{rf0['batch_sha256'][:16]}..., found {st0['batch_sha256'][:16]}...")
        pc = params_compare(work, world, self.args.rtol, self.args.atol)
        la, lb = st0["loss"], rf0["loss"]
        loss_bits = same_float(la, lb)
        if self.args.compare == "bitwise":
            loss_ok = loss_bits
        else:
            loss_ok = close(la, lb, self.args.rtol, self.args.atol)
        self.checks.set("resume_loss", loss_ok, f"resumed loss {la!r} vs reference {lb!r} "
                        + ("(bit-identical)" if loss_bits
                           else f"(|diff| {abs(la - lb)!r}, compare {self.args.compare})"))
        if "error" in pc:
            self.checks.set("resume_parameters", False, pc["error"])
            pc = {"max_abs_diff": None, "bitwise": False, "sha": {}}
        else:
            p_ok = pc["bitwise"] if self.args.compare == "bitwise" else pc["within"]
            self.checks.set("resume_parameters", p_ok, f"parameters after the resumed step: max |diff| "
                            f"{pc['max_abs_diff']!r} over {world} rank(s)"
                            + (" (bit-identical)" if pc["bitwise"] else ""))
        self.doc["resume"] = {
            "compare": self.args.compare, "rtol": self.args.rtol, "atol": self.args.atol,
            "loss_resumed": la, "loss_reference": lb, "loss_abs_diff": abs(la - lb),
            "batch_sha256_resumed": st0["batch_sha256"], "batch_sha256_reference": rf0["batch_sha256"],
            "param_max_abs_diff": pc["max_abs_diff"], "param_sha256_resumed": pc["sha"].get("resumed"),
            "param_sha256_reference": pc["sha"].get("reference"),
            "bitwise_equal": bool(loss_bits and pc["bitwise"]),
            "losses_before_save_equal": [s["loss"] for s in t0["steps"]] == refs[0]["losses"],
            "determinism_note": ("torch.use_deterministic_algorithms(True), cuDNN deterministic, "
                                 "CUBLAS_WORKSPACE_CONFIG=:4096:8, the same seed and thread count in every process"
                                 if self.args.compare == "bitwise" else
                                 "deterministic algorithms not enforced; compared within rtol/atol"),
        }

    def pilot_vs_plan(self, desc: Dict[str, Any], micro: int) -> None:
        """The pilot must run at the long run's micro-batch and sequence length (or larger)."""
        a = self.args
        plan_mb, plan_L = a.plan_micro_batch, a.plan_sequence_length
        L = desc.get("sequence_length")
        L = L if isinstance(L, int) and not isinstance(L, bool) else None
        short: List[str] = []
        if plan_mb is not None and micro < plan_mb:
            short.append(f"micro-batch {micro} < the plan's {plan_mb}")
        if plan_L is not None and (L is None or L < plan_L):
            short.append(f"sequence length {L} < the plan's {plan_L}" if L is not None else
                         f"the pilot declares no sequence length (description.sequence_length), the plan's is {plan_L}")
        self.doc["pilot"] = {"micro_batch_samples": micro, "sequence_length": L, "plan_micro_batch_samples": plan_mb,
                             "plan_sequence_length": plan_L, "smaller_than_plan": bool(short), "why": short}
        if plan_mb is None and plan_L is None:
            self.checks.set("pilot_matches_plan", True, "not checked: no --plan-micro-batch or --plan-sequence-length "
                                                        "declared")
        else:
            self.checks.set("pilot_matches_plan", not short,
                            ("PILOT SMALLER THAN THE PLAN: " + "; ".join(short) + ": its step time and memory "
                             "understate the long run's") if short else
                            f"pilot micro-batch {micro}, sequence length {L}: not smaller than the plan's "
                            f"({plan_mb}, {plan_L})")

    def compare_eval(self) -> None:
        """The evaluation output before the kill against the one after the restore, within rtol/atol."""
        t0, r0 = self.train[0].get("eval") or {}, self.rests[0].get("eval") or {}
        if not t0.get("available"):
            self.doc["eval"] = {"available": False, "note": "the step entry has no evaluate callable"}
            self.checks.set("eval_restored", True, "not run: the step entry has no evaluate callable")
            return
        import torch
        a, b = self.args, None
        maxdiff, within, bitwise, n = 0.0, True, True, 0
        for r in range(self.world):
            x = _leaves(ck.load_own(os.path.join(self.work, f"eval-train-rank{r}.pt")))
            y = _leaves(ck.load_own(os.path.join(self.work, f"eval-restore-rank{r}.pt")))
            if len(x) != len(y):
                within = bitwise = False
                b = f"rank {r}: {len(x)} output value(s) before the kill, {len(y)} after the restore"
                break
            for u, v in zip(x, y):
                u, v = torch.as_tensor(u).double(), torch.as_tensor(v).double()
                n += u.numel()
                if u.shape != v.shape:
                    within = bitwise = False
                    b = f"rank {r}: shape {tuple(u.shape)} vs {tuple(v.shape)}"
                    break
                if u.numel():
                    maxdiff = max(maxdiff, float((u - v).abs().max()))
                    bitwise &= bool(torch.equal(u, v))
                    within &= bool(torch.allclose(v, u, rtol=a.rtol, atol=a.atol))
        ev = [t.get("eval", {}).get("eval_s") for t in self.train]
        rv = [t.get("eval", {}).get("eval_s") for t in self.rests]
        self.doc["eval"] = {"available": True, "eval_s": max(x for x in ev if x is not None),
                            "eval_s_after_restore": max(x for x in rv if x is not None),
                            "values": n, "max_abs_diff": maxdiff, "bitwise_equal": bitwise, "rtol": a.rtol,
                            "atol": a.atol, "within_tolerance": within,
                            "note": "evaluate() ran on the saved state before the kill and on the restored state "
                                    "after it (torch.no_grad, RNG and train/eval mode put back); eval_s is the "
                                    "slowest rank's wall time (CUDA synchronized)"}
        self.checks.set("eval_restored", within,
                        b or f"evaluation output after the restore vs before the kill: max |diff| {maxdiff!r} over "
                             f"{n} value(s) (rtol {a.rtol}, atol {a.atol})" + (", bit-identical" if bitwise else ""))

    def measurements(self, ref_ok: bool) -> None:
        m = load_json(os.path.join(self.work, "measure-rank0.json")) if ref_ok else None
        if m is None:
            why = "not run: the reference run failed" if not ref_ok else "not run: the measurements wrote nothing"
            for k in ("precision", "activation_checkpointing", "sequence_length"):
                self.doc[k] = {"measured": False, "note": why}
            self.checks.set("precision", False, why)
            return
        if m.get("error"):
            for k in ("precision", "activation_checkpointing", "sequence_length"):
                self.doc[k] = m.get(k) or {"measured": False, "note": f"failed: {m['error']}"}
            self.doc["measure_error"] = m["error"]
        else:
            for k in ("precision", "activation_checkpointing", "sequence_length"):
                self.doc[k] = m[k]
        p = self.doc["precision"]
        if not p.get("measured"):
            self.checks.set("precision", True, f"not measured: {p.get('note')}")
        else:
            self.checks.set("precision", p["pass"],
                            f"{p['steps']} steps fp32 vs {p['low']} from the same state: loss max rel diff "
                            f"{_g(p['loss_max_rel_diff'])} (tolerance {p['loss_rtol']}), parameter drift "
                            f"{_g(p['param_drift_rel_to_norm'])} of the parameters' norm (tolerance {p['param_rtol']})")


def _g(x: Any) -> str:
    return "n/a" if x is None else f"{x:.3g}"


def _leaves(x: Any) -> List[Any]:
    """Tensors and numbers of an evaluation output, in a fixed order (dicts by sorted key)."""
    if isinstance(x, dict):
        return [v for k in sorted(x, key=str) for v in _leaves(x[k])]
    if isinstance(x, (list, tuple)):
        return [v for e in x for v in _leaves(e)]
    return [x]
