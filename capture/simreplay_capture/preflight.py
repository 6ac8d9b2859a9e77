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
from .preflight_report import SCHEMA, summary_text
from .preflight_run import PreflightRun

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
    ap.add_argument("--plan-micro-batch", type=int, help="the long run's per-rank micro-batch (samples): a smaller "
                                                         "pilot fails the pilot_matches_plan check")
    ap.add_argument("--plan-sequence-length", type=int, help="the long run's sequence length (tokens): a shorter "
                                                             "pilot fails the pilot_matches_plan check")
    ap.add_argument("--precision", default="bf16", choices=["bf16", "fp16", "none"],
                    help="low precision compared with fp32 from the same state (fp16 needs CUDA)")
    ap.add_argument("--precision-steps", type=int, default=3, help="steps of each precision")
    ap.add_argument("--precision-loss-rtol", type=float, default=0.05,
                    help="largest relative loss difference, any step (default 0.05)")
    ap.add_argument("--precision-param-rtol", type=float, default=0.01,
                    help="largest parameter drift ||p_low - p_fp32|| / ||p_fp32|| after the steps (default 0.01)")
    ap.add_argument("--seq-lens", help="L1,L2: two sequence lengths to time (needs the entry's "
                                       "batch_at_sequence_length; default L/2,L of its description.sequence_length)")
    ap.add_argument("--measure-steps", type=int, default=2, help="measured steps per checkpointing/sequence variant")
    ap.add_argument("--model-revision", help="the model's revision, recorded in the manifest")
    ap.add_argument("--dataset-revision", help="the dataset's revision, recorded in the manifest")
    ap.add_argument("--dataset-path", help="dataset directory whose file list is hashed into the manifest "
                                           "(default: the entry's data option)")
    return ap


def _check_args(a: argparse.Namespace) -> Optional[str]:
    if a.steps < 1:
        return f"--steps: expected an integer >= 1, found {a.steps}"
    if a.warmup_steps < 0:
        return f"--warmup-steps: expected an integer >= 0, found {a.warmup_steps}"
    if a.nproc_per_node < 1:
        return f"--nproc-per-node: expected an integer >= 1, found {a.nproc_per_node}"
    if a.precision_steps < 1 or a.measure_steps < 1:
        return f"--precision-steps/--measure-steps: expected integers >= 1, found {a.precision_steps}/{a.measure_steps}"
    for name in ("plan_micro_batch", "plan_sequence_length"):
        v = getattr(a, name)
        if v is not None and v < 1:
            return f"--{name.replace('_', '-')}: expected an integer >= 1, found {v}"
    if a.seq_lens is not None:
        parts = a.seq_lens.split(",")
        if len(parts) != 2 or not all(x.strip().isdigit() for x in parts) or not 0 < int(parts[0]) < int(parts[1]):
            return f"--seq-lens: expected L1,L2 with 0 < L1 < L2, found {a.seq_lens!r}"
    for name in ("rtol", "atol", "timeout_s", "precision_loss_rtol", "precision_param_rtol"):
        v = getattr(a, name)
        if not (v >= 0) or v == float("inf"):
            return f"--{name.replace('_', '-')}: expected a finite number >= 0, found {v}"
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
    env = mf.environment(args.model_revision, args.dataset_revision, args.dataset_path or opts.get("data"))
    return {**env, "source": "preflight", "commit": g["commit"], "dirty": g["dirty"], "versions": mf.versions(),
            "hardware": mf.hardware(), "storage": mf.storage(ckpt_dir), "command": list(sys.argv),
            "cwd": os.getcwd(), "start_time": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "config": {"step": args.step, "opts": opts, "warmup_steps": args.warmup_steps, "steps": args.steps,
                       "seed": args.seed, "nproc_per_node": args.nproc_per_node, "device": args.device,
                       "checkpoint_dir": ckpt_dir, "compare": args.compare, "rtol": args.rtol,
                       "atol": args.atol, "fast_forward": "replay", "inject": list(args.inject),
                       "plan_micro_batch": args.plan_micro_batch, "plan_sequence_length": args.plan_sequence_length,
                       "precision": args.precision, "precision_steps": args.precision_steps,
                       "precision_loss_rtol": args.precision_loss_rtol,
                       "precision_param_rtol": args.precision_param_rtol, "seq_lens": args.seq_lens,
                       "measure_steps": args.measure_steps},
            "torch_lacks": lacks}


def _clear_own_checkpoints(d: str) -> None:
    """Remove an earlier preflight's step-<S>[-async] directories (else they would be restored), but
    never anything else: a --checkpoint-dir holding other files is refused."""
    if os.path.exists(d) and not os.path.isdir(d):
        raise ProtocolError(f"--checkpoint-dir {d}: expected a directory, found a file")
    os.makedirs(d, exist_ok=True)
    names = sorted(os.listdir(d))
    foreign = [n for n in names if not (n.startswith("step-") and (n[5:-6] if n.endswith("-async") else n[5:]).isdigit()
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
            "inject": list(args.inject), "compare": args.compare, "device": args.device,
            "measure": {"precision": args.precision, "precision_steps": args.precision_steps,
                        "precision_loss_rtol": args.precision_loss_rtol,
                        "precision_param_rtol": args.precision_param_rtol, "measure_steps": args.measure_steps,
                        "seq_lens": [int(x) for x in args.seq_lens.split(",")] if args.seq_lens else []}}
    doc: Dict[str, Any] = {"schema": SCHEMA, "manifest": _manifest(args, opts, ckpt_dir)}
    pr = PreflightRun(args, spec, work, world, ckpt_dir, doc)
    checks = pr.checks
    try:
        exit_bad_input = pr.run()
    finally:
        for ph in pr.phases:  # on an exception (or Ctrl-C) no rank or worker outlives us
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
    ev, p = doc.get("eval") or {}, doc.get("precision") or {}
    a, q = doc.get("activation_checkpointing") or {}, doc.get("sequence_length") or {}
    pl = doc.get("pilot") or {}
    m.update({
        "micro_batch_samples": (doc.get("job") or {}).get("micro_batch_samples"),
        "sequence_length": pl.get("sequence_length"),
        "pilot_smaller_than_plan": pl.get("smaller_than_plan"),
        "eval_s": ev.get("eval_s") if ev.get("available") else None,
        "precision_low": p.get("low") if p.get("measured") else None,
        "step_time_s_fp32": p.get("step_time_s_fp32") if p.get("measured") else None,
        "step_time_s_low_precision": p.get("step_time_s_low") if p.get("measured") else None,
        "precision_pass": p.get("pass") if p.get("measured") else None,
        "activation_checkpointing_bytes_saved": a.get("activation_bytes_saved") if a.get("measured") else None,
        "activation_checkpointing_recompute_s": a.get("recompute_s") if a.get("measured") else None,
        "attention_share_time": (q["attention_share_time"]["at_l2"] if q.get("measured") else None),
        "attention_share_activation_memory": (q["attention_share_activation_memory"]["at_l2"]
                                              if q.get("measured") else None),
        "attention_share_at_sequence_length": (q["points"][1]["sequence_length"] if q.get("measured") else None),
    })
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
