"""`python3 -m simreplay_capture.preflight`: prove one training step completely before scaling.

Runs the user's step (`--step module:function`, protocol in preflight_protocol.py) on its real
DataLoader: warm-up and measured steps, peak memory, a synchronous and an asynchronous checkpoint
save, SIGKILL of the whole job right after the save, a fresh process that restores, fast-forwards
the loader and runs the next step, compared with an uninterrupted reference run. Writes
DIR/preflight.json (docs/preflight-format.md) and DIR/summary.txt. Exit 0 when every check passes,
1 when one fails, 2 bad command line, 3 bad input.

    python3 -m simreplay_capture.preflight --out DIR [--step module:function] [--opt K=V ...]
    python3 -m simreplay_capture.preflight verify-checkpoint CKPT_DIR
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import shutil
import sys
import tempfile
from typing import Any, Dict, List, Optional

from . import preflight_ckpt as ck
from .preflight_protocol import DEFAULT_STEP, ProtocolError, parse_opts, prepare_opts
from .preflight_report import SCHEMA, Checks, close, same_float, steps_block, summary_text

FAULTS = ("skip-rng-restore", "skip-fast-forward", "skip-optimizer-restore", "corrupt-checkpoint",
          "truncate-checkpoint")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python3 -m simreplay_capture.preflight",
                                 description="prove one step: measure, checkpoint, kill, restore, resume")
    ap.add_argument("--out", required=True, help="output directory (preflight.json, summary.txt)")
    ap.add_argument("--step", default=DEFAULT_STEP, help=f"module:function building the job (default {DEFAULT_STEP})")
    ap.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE", help="option for the step entry")
    ap.add_argument("--warmup-steps", type=int, default=1)
    ap.add_argument("--steps", type=int, default=4, help="measured steps")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--nproc-per-node", type=int, default=1, help="ranks (gloo on CPU, nccl on CUDA)")
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--checkpoint-dir", help="where checkpoints go (default DIR/checkpoint): put it on the "
                                             "storage the long run checkpoints to")
    ap.add_argument("--compare", default="bitwise", choices=["bitwise", "tolerance"])
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--atol", type=float, default=1e-6)
    ap.add_argument("--timeout-s", type=float, default=600.0, help="limit per phase")
    ap.add_argument("--inject", action="append", default=[], choices=FAULTS,
                    help="break the resume on purpose (to see the checks catch it)")
    return ap


def _check_args(a: argparse.Namespace) -> Optional[str]:
    if a.steps < 1:
        return f"--steps: expected an integer >= 1, found {a.steps}"
    if a.warmup_steps < 0:
        return f"--warmup-steps: expected an integer >= 0, found {a.warmup_steps}"
    if a.nproc_per_node < 1:
        return f"--nproc-per-node: expected an integer >= 1, found {a.nproc_per_node}"
    for name in ("rtol", "atol", "timeout_s"):
        v = getattr(a, name)
        if not (v >= 0) or v == float("inf"):
            return f"--{name.replace('_', '-')}: expected a finite number >= 0, found {v}"
    return None


def _load(path: str) -> Optional[Dict[str, Any]]:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _write_atomic(path: str, text: str) -> None:
    ck.write_file_atomic(path, lambda f: f.write(text.encode()))


def _manifest(args: argparse.Namespace, opts: Dict[str, str], ckpt_dir: str) -> Dict[str, Any]:
    import torch  # noqa: F401  (so that versions() reports it)
    from . import manifest as mf
    g = mf.git_commit(os.getcwd())
    lacks = ["torch.distributed.checkpoint.async_save (torch >= 2.3): the asynchronous save is the "
             "preflight's own (stage to host memory, write from a thread)",
             "torch.distributed.checkpoint (public from torch 2.0; 1.13's private "
             "torch.distributed._shard.checkpoint does not import on Python 3.11): one torch.save file per rank"]
    return {"source": "preflight", "commit": g["commit"], "dirty": g["dirty"], "versions": mf.versions(),
            "hardware": mf.hardware(), "storage": mf.storage(ckpt_dir), "command": list(sys.argv),
            "cwd": os.getcwd(), "start_time": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "config": {"step": args.step, "opts": opts, "warmup_steps": args.warmup_steps, "steps": args.steps,
                       "seed": args.seed, "nproc_per_node": args.nproc_per_node, "device": args.device,
                       "checkpoint_dir": ckpt_dir, "compare": args.compare, "rtol": args.rtol,
                       "atol": args.atol, "fast_forward": "replay", "inject": list(args.inject)},
            "torch_lacks": lacks}


def _damage(path: str, how: str) -> None:
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


def _params_compare(work: str, world: int, rtol: float, atol: float) -> Dict[str, Any]:
    import torch
    from .preflight_state import tensor_digest
    maxdiff, bitwise, within, sha = 0.0, True, True, {}
    for r in range(world):
        a = torch.load(os.path.join(work, f"params-restore-rank{r}.pt"))
        b = torch.load(os.path.join(work, f"params-reference-rank{r}.pt"))
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


def _clear_own_checkpoints(d: str) -> None:
    """Remove an earlier preflight's step-<S>[-async] directories (else they would be restored), but
    never anything else: a --checkpoint-dir holding other files is refused."""
    if os.path.exists(d) and not os.path.isdir(d):
        raise ProtocolError(f"--checkpoint-dir {d}: expected a directory, found a file")
    os.makedirs(d, exist_ok=True)
    names = sorted(os.listdir(d))
    foreign = [n for n in names if not (n.startswith("step-") and n[5:].removesuffix("-async").isdigit()
                                        and os.path.isdir(os.path.join(d, n)))]
    if foreign:
        raise ProtocolError(f"--checkpoint-dir {d}: expected an empty directory or an earlier preflight's "
                            f"step-<S> directories, found {foreign[0]!r}")
    for n in names:
        shutil.rmtree(os.path.join(d, n))


def run(args: argparse.Namespace) -> int:
    from .preflight_launch import become_subreaper
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    entry_dir = os.path.join(out, "entry")
    os.makedirs(entry_dir, exist_ok=True)
    ckpt_dir = os.path.abspath(args.checkpoint_dir or os.path.join(out, "checkpoint"))
    _clear_own_checkpoints(ckpt_dir)
    opts = prepare_opts(args.step, parse_opts(args.opt), entry_dir)
    become_subreaper()
    work = tempfile.mkdtemp(prefix=".preflight-work-", dir=out)
    world = args.nproc_per_node
    spec = {"step": args.step, "opts": opts, "seed": args.seed, "warmup_steps": args.warmup_steps,
            "steps": args.steps, "ckpt_dir": ckpt_dir, "work_dir": work, "entry_dir": entry_dir,
            "inject": list(args.inject), "compare": args.compare, "device": args.device}
    checks = Checks()
    doc: Dict[str, Any] = {"schema": SCHEMA, "manifest": _manifest(args, opts, ckpt_dir)}
    exit_bad_input: Optional[str] = None
    phases: List[Any] = []
    try:
        exit_bad_input = _phases(args, spec, work, world, ckpt_dir, checks, doc, phases)
    finally:
        for ph in phases:  # on an exception (or Ctrl-C) no rank or worker outlives us
            if any(p.poll() is None for p in ph.procs):
                ph.kill()
            ph.reap_group(timeout_s=2.0)
        shutil.rmtree(work, ignore_errors=True)
    _measured(doc)
    doc["checks"] = checks.doc()
    doc["status"] = "pass" if checks.all_pass() else "fail"
    doc.setdefault("accelerator", "cuda" if args.device == "cuda" else "cpu")
    doc.setdefault("accelerator_note", "the run failed before the device was reported")
    _write_atomic(os.path.join(out, "preflight.json"),
                  json.dumps(_finite(doc), indent=1, sort_keys=True, allow_nan=False, default=str) + "\n")
    text = summary_text(doc)
    _write_atomic(os.path.join(out, "summary.txt"), text)
    sys.stdout.write(text)
    if exit_bad_input:
        sys.stderr.write(exit_bad_input + "\n")
        return 3
    return 0 if doc["status"] == "pass" else 1


def _finite(x: Any) -> Any:
    """JSON has no NaN or infinity: a non-finite figure (a diverged loss) becomes null; the checks say why."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    return x


def _fail_reason(phase: Any, res: Optional[Dict[str, Any]], what: str) -> str:
    if res and res.get("error"):
        return f"{what}: {res['error']}"
    tail = phase.log_tail().strip().splitlines()
    return f"{what}: exit codes {[p.returncode for p in phase.procs]}" + (f"; last log line: {tail[-1]}" if tail else "")


def _phases(args: argparse.Namespace, spec: Dict[str, Any], work: str, world: int, ckpt_dir: str,
            checks: Checks, doc: Dict[str, Any], phases: List[Any]) -> Optional[str]:
    """Runs train, kill, reference, restore; fills `doc` and `checks`. Returns a bad-input line or None."""
    from .preflight_launch import Phase
    # ---- 1+2: measured steps and the saves, then 3: SIGKILL of the job's process group
    tr = Phase("train", spec, world, work)
    phases.append(tr)
    saved, t_saved_seen = tr.wait_saved(args.timeout_s)
    t_kill = tr.kill()
    codes = [p.returncode for p in tr.procs]
    orphans = tr.reap_group()
    train = [_load(os.path.join(work, f"train-rank{r}.json")) for r in range(world)]
    if not saved or any(t is None or "error" in t for t in train):
        bad = next((t for t in train if t and t.get("error")), None)
        checks.set("steps_ran", False, _fail_reason(tr, bad, "the training process failed before the save"))
        if bad and bad.get("kind") == "protocol":
            return bad["error"]
        return None
    t0 = train[0]
    doc["accelerator"] = t0["accelerator"]
    doc["accelerator_note"] = (f"the step ran on CUDA ({t0['device_name']})" if t0["accelerator"] == "cuda"
                               else "no GPU: the step ran on the CPU; every figure is a CPU figure")
    job = t0["job"]
    micro = int(job["micro_batch_samples"] or 0)
    doc["job"] = {"entry": args.step, "description": job["description"], "world_size": world,
                  "micro_batch_samples": micro, "global_batch_samples": micro * world,
                  "parameters": job["parameters"], "parameter_bytes": job["parameter_bytes"], "loader": job["loader"]}
    doc["steps"] = steps_block(train, world, micro)
    losses = [s["loss"] for t in train for s in t["steps"]]
    bad_loss = [x for x in losses if x is None or x != x or x in (float("inf"), float("-inf"))]
    checks.set("steps_ran", not bad_loss,
               f"{doc['steps']['warmup_steps']} warm-up + {doc['steps']['measured_steps']} measured steps on "
               f"{world} rank(s); " + ("every loss finite" if not bad_loss else f"{len(bad_loss)} non-finite loss(es)"))
    # per-rank peaks: the planner needs the largest (each rank has its own device or memory share)
    peak_rank = max(range(world), key=lambda r: train[r]["memory"]["peak_memory_bytes"] or 0)
    doc["memory"] = dict(train[peak_rank]["memory"], rank=peak_rank)
    # checkpoint figures: bytes summed over ranks, time of the slowest rank
    sync_b = sum(t["checkpoint"]["sync"]["bytes"] for t in train)
    sync_s = max(t["checkpoint"]["sync"]["save_s"] for t in train)
    a_b = sum(t["checkpoint"]["async"]["bytes"] for t in train)
    a_tot = max(t["checkpoint"]["async"]["total_s"] for t in train)
    identical = all(t["checkpoint"]["async"]["sha256"] == t["checkpoint"]["sync"]["sha256"] for t in train)
    step = t0["checkpoint"]["step"]
    sdir = ck.step_dir(ckpt_dir, step)
    doc["checkpoint"] = {
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
        ok = v["files"] == world
        checks.set("checkpoint_saved", ok, f"{v['files']} file(s), {v['bytes']} bytes and the manifest in {sdir}; "
                   f"async copy in {sdir}-async")
    except ck.CheckpointError as e:
        checks.set("checkpoint_saved", False, str(e))
    checks.set("async_identical", identical,
               "the asynchronous files have the same sha256 as the synchronous ones" if identical
               else "the asynchronous files differ from the synchronous ones")
    sig_ok = all(c == -9 for c in codes)
    checks.set("killed", sig_ok, f"every rank ended by SIGKILL (exit codes {codes})" if sig_ok
               else f"expected every rank to end by SIGKILL (-9), found exit codes {codes}")
    t_save_end = max(t["t_saved"] for t in train)
    doc["kill"] = {"signal": "SIGKILL", "target": "process group", "pids": [t["pid"] for t in train],
                   "exit_signals": [-c if c is not None and c < 0 else None for c in codes],
                   "kill_after_save_s": t_kill - t_save_end, "orphans_left": orphans}
    tmp_left = ck.leftover_tmp(ckpt_dir)
    checks.set("no_orphans", orphans == 0 and not tmp_left,
               f"{orphans} live process(es) of the killed group, {len(tmp_left)} temporary file(s) in the "
               "checkpoint directory" + (f" ({tmp_left[0]})" if tmp_left else ""))
    for f in args.inject:
        if f in ("corrupt-checkpoint", "truncate-checkpoint"):
            _damage(os.path.join(sdir, ck.rank_file(0)), f)
    # ---- reference: an uninterrupted run one step further
    ref = Phase("reference", spec, world, work)
    phases.append(ref)
    ref.wait(args.timeout_s)
    refs = [_load(os.path.join(work, f"reference-rank{r}.json")) for r in range(world)]
    if any(r is None or "error" in r for r in refs):
        bad = next((r for r in refs if r and r.get("error")), None)
        for n in ("loader_position", "resume_loss", "resume_parameters"):
            checks.set(n, False, _fail_reason(ref, bad, "the reference run failed"))
        return None
    # ---- 4+5: a fresh process restores from storage (page cache evicted), fast-forwards, steps
    files = [os.path.join(sdir, ck.rank_file(r)) for r in range(world) if os.path.exists(os.path.join(sdir, ck.rank_file(r)))]
    why = ck.evict_page_cache(files)
    rs = Phase("restore", spec, world, work)
    phases.append(rs)
    rs.wait(args.timeout_s)
    rests = [_load(os.path.join(work, f"restore-rank{r}.json")) for r in range(world)]
    if any(r is None or "error" in r for r in rests):
        bad = next((r for r in rests if r and r.get("error")), None)
        reason = _fail_reason(rs, bad, "restore failed")
        ck_fail = bool(bad and bad.get("kind") == "checkpoint")
        checks.set("checkpoint_readable", False, reason)
        for n in ("loader_position", "resume_loss", "resume_parameters"):
            checks.set(n, False, "not run: the checkpoint could not be restored" if ck_fail else reason)
        return None
    r0 = rests[0]
    read_b = sum(r["checkpoint_read_bytes"] for r in rests)
    read_s = max(r["checkpoint_read_s"] for r in rests)
    doc["restore"] = {
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
    checks.set("checkpoint_readable", True, f"{world} file(s) of step {r0['checkpoint_step']} verified "
               f"(size, sha256) and loaded by a fresh process")
    rf0 = refs[0]["step"]
    st0 = r0["step"]
    same_batch = rf0["batch_sha256"] == st0["batch_sha256"]
    checks.set("loader_position", same_batch,
               f"the first resumed batch (step {st0['step']}) equals the reference's" if same_batch else
               f"the first resumed batch (step {st0['step']}) differs from the reference's: expected sha256 "
               f"{rf0['batch_sha256'][:16]}..., found {st0['batch_sha256'][:16]}...")
    pc = _params_compare(work, world, args.rtol, args.atol)
    la, lb = st0["loss"], rf0["loss"]
    loss_bits = same_float(la, lb)
    if args.compare == "bitwise":
        loss_ok = loss_bits
    else:
        loss_ok = close(la, lb, args.rtol, args.atol)
    checks.set("resume_loss", loss_ok, f"resumed loss {la!r} vs reference {lb!r} "
               + ("(bit-identical)" if loss_bits else f"(|diff| {abs(la - lb)!r}, compare {args.compare})"))
    if "error" in pc:
        checks.set("resume_parameters", False, pc["error"])
        pc = {"max_abs_diff": None, "bitwise": False, "sha": {}}
    else:
        p_ok = pc["bitwise"] if args.compare == "bitwise" else pc["within"]
        checks.set("resume_parameters", p_ok, f"parameters after the resumed step: max |diff| "
                   f"{pc['max_abs_diff']!r} over {world} rank(s)" + (" (bit-identical)" if pc["bitwise"] else ""))
    doc["resume"] = {
        "compare": args.compare, "rtol": args.rtol, "atol": args.atol,
        "loss_resumed": la, "loss_reference": lb, "loss_abs_diff": abs(la - lb),
        "batch_sha256_resumed": st0["batch_sha256"], "batch_sha256_reference": rf0["batch_sha256"],
        "param_max_abs_diff": pc["max_abs_diff"], "param_sha256_resumed": pc["sha"].get("resumed"),
        "param_sha256_reference": pc["sha"].get("reference"),
        "bitwise_equal": bool(loss_bits and pc["bitwise"]),
        "losses_before_save_equal": [s["loss"] for s in t0["steps"]] == refs[0]["losses"],
        "determinism_note": ("torch.use_deterministic_algorithms(True), cuDNN deterministic, "
                             "CUBLAS_WORKSPACE_CONFIG=:4096:8, the same seed and thread count in every process"
                             if args.compare == "bitwise" else
                             "deterministic algorithms not enforced; compared within rtol/atol"),
    }
    return None


def _measured(doc: Dict[str, Any]) -> None:
    st, mem, ckd, rs = doc.get("steps"), doc.get("memory"), doc.get("checkpoint"), doc.get("restore")

    def mean(b: Optional[Dict[str, Any]]) -> Optional[float]:
        return b["mean"] if b else None
    m = {"accelerator": doc.get("accelerator"), "world_size": (doc.get("job") or {}).get("world_size"),
         "global_batch_samples": (doc.get("job") or {}).get("global_batch_samples"),
         "step_time_s": mean(st["step_time_s"]) if st else None,
         "compute_s": mean(st["compute_s"]) if st else None,
         "data_wait_s": mean(st["data_wait_s"]) if st else None,
         "comm_s": mean(st["comm_s"]) if st else None,
         "samples_per_s": st["samples_per_s"] if st else None,
         "peak_memory_bytes": mem["peak_memory_bytes"] if mem else None,
         "peak_memory_kind": (("cuda_reserved" if mem["kind"] == "cuda" else "host_pss") if mem else None),
         "checkpoint_bytes": ckd["sync"]["bytes"] if ckd else None,
         "checkpoint_save_s": ckd["sync"]["save_s"] if ckd else None,
         "checkpoint_write_bytes_per_s": ckd["sync"]["write_bytes_per_s"] if ckd else None,
         "checkpoint_blocking_s": ((ckd["async"]["blocking_s"] if ckd["async"]["available"] else ckd["sync"]["save_s"])
                                   if ckd else None),
         "checkpoint_read_bytes_per_s": rs["read_bytes_per_s"] if rs else None,
         "restore_s": rs["restore_s"] if rs else None, "restart_s": rs["restart_s"] if rs else None}
    doc["measured"] = m


def verify_main(argv: List[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python3 -m simreplay_capture.preflight verify-checkpoint CKPT_DIR\n")
        return 2
    try:
        v = ck.verify_dir(argv[0], load=True)
    except ck.CheckpointError as e:
        sys.stderr.write(f"{e}\n")
        return 3
    print(f"ok: {v['dir']}: step {v['step']}, {v['files']} file(s), {v['bytes']} bytes, sizes and sha256 "
          "match the manifest, every file loads")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_child"]:
        from .preflight_child import main as child_main
        return child_main(argv[1:])
    if argv[:1] == ["verify-checkpoint"]:
        return verify_main(argv[1:])
    args = parser().parse_args(argv)
    bad = _check_args(args)
    if bad:
        sys.stderr.write(f"preflight: {bad}\n")
        return 2
    if args.device != "cpu" and args.nproc_per_node > 1:
        import torch
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n and args.nproc_per_node > n:
            sys.stderr.write(f"preflight: --nproc-per-node: expected at most {n} (one rank per CUDA device), "
                             f"found {args.nproc_per_node}; use --device cpu for more ranks\n")
            return 2
    try:
        return run(args)
    except ProtocolError as e:
        sys.stderr.write(f"{e}\n")
        return 3


if __name__ == "__main__":
    sys.exit(main())
