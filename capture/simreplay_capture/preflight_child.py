"""The processes a preflight launches: `train` (measured steps, save, then killed), `reference`
(uninterrupted run one step further) and `restore` (fresh process: restore, fast-forward, one step).

Each is `python3 -m simreplay_capture.preflight _child ROLE SPEC.json`, once per rank, with RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT set as torchrun sets them. Each writes
WORK/ROLE-rank<R>.json (atomically); `train` then prints `SAVED` and keeps training until killed.
"""
from __future__ import annotations

import json
import os
import random
import sys
import time
from typing import Any, Dict, List, Optional

from . import preflight_ckpt as ck
from .preflight_protocol import PreflightContext, PreflightJob, build_job

def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


class Child:
    def __init__(self, role: str, spec: Dict[str, Any]) -> None:
        self.role, self.spec = role, spec
        self.rank = _env_int("RANK", 0)
        self.world = _env_int("WORLD_SIZE", 1)
        self.local_rank = _env_int("LOCAL_RANK", 0)
        self.t_start = time.perf_counter()

    # ------------------------------------------------------------------ setup
    def setup(self) -> None:
        import numpy as np
        import torch
        seed = int(self.spec["seed"])
        if self.spec["compare"] == "bitwise":
            # bit-identical runs need deterministic kernels (CUBLAS_WORKSPACE_CONFIG is set by the launcher)
            torch.use_deterministic_algorithms(True)
            torch.backends.cudnn.benchmark = False
            torch.backends.cudnn.deterministic = True
        use_cuda = self.spec["device"] == "cuda" or (self.spec["device"] == "auto" and torch.cuda.is_available())
        if use_cuda:
            torch.cuda.set_device(self.local_rank)
            self.device = torch.device("cuda", self.local_rank)
        else:
            self.device = torch.device("cpu")
        self.cuda = use_cuda
        if self.world > 1:
            import torch.distributed as dist
            dist.init_process_group("nccl" if use_cuda else "gloo", init_method="env://",
                                    rank=self.rank, world_size=self.world)
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        ctx = PreflightContext(seed=seed, device=self.device, rank=self.rank, world_size=self.world,
                               local_rank=self.local_rank, opts=dict(self.spec["opts"]),
                               work_dir=self.spec["entry_dir"])
        self.job: PreflightJob = build_job(self.spec["step"], ctx)
        from .preflight_state import LoaderCursor
        self.cursor = LoaderCursor(self.job.loader)
        self.step_count = 0
        self.t_built = time.perf_counter()

    def sync(self) -> None:
        if self.cuda:
            import torch
            torch.cuda.synchronize(self.device)

    # ------------------------------------------------------------------ one step
    def one_step(self, keep_batch_digest: bool = False) -> Dict[str, Any]:
        t0 = time.perf_counter()
        batch = self.cursor.next()
        t1 = time.perf_counter()
        digest = None
        if keep_batch_digest:
            from .preflight_state import tensor_digest
            digest = tensor_digest(batch)
        t1b = time.perf_counter()  # the digest is not part of the step
        out = self.job.step(batch)
        self.sync()
        t2 = time.perf_counter()
        comm_s = None
        loss = out
        if isinstance(out, dict):
            loss = out.get("loss")
            comm_s = out.get("comm_s")
        loss_f = float(loss.detach().float().cpu().item()) if hasattr(loss, "detach") else float(loss)
        self.step_count += 1
        step_s = (t2 - t1b) + (t1 - t0)
        comm = float(comm_s) if comm_s is not None else None
        rec = {"step": self.step_count, "data_wait_s": t1 - t0, "step_time_s": step_s,
               "compute_s": (t2 - t1b) - (comm or 0.0), "comm_s": comm, "loss": loss_f,
               "t_end": t2}
        if digest is not None:
            rec["batch_sha256"] = digest
        return rec

    # ------------------------------------------------------------------ state
    def state(self) -> Dict[str, Any]:
        from .preflight_state import rng_state
        st: Dict[str, Any] = {
            "model": self.job.model.state_dict(),
            "optimizer": self.job.optimizer.state_dict(),
            "scaler": self.job.scaler.state_dict() if self.job.scaler is not None else None,
            "extra": {k: v.state_dict() for k, v in self.job.extra_state.items()},
            "loader": self.cursor.state(),
            "rng": rng_state(self.job.loader),
            "step": self.step_count,
            "config": self.training_config(),
        }
        return st

    def training_config(self) -> Dict[str, Any]:
        """What the checkpoint records about how it was trained (JSON-able; compared at restore)."""
        opt = self.job.optimizer
        groups = [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]
        ld = self.job.loader
        cfg = {"entry": self.spec["step"], "opts": self.spec["opts"], "seed": self.spec["seed"],
               "world_size": self.world, "device": self.device.type, "compare": self.spec["compare"],
               "description": self.job.description, "training": self.job.config,
               "optimizer": {"type": type(opt).__name__, "param_groups": groups},
               "loader": {"batch_size": ld.batch_size, "num_workers": ld.num_workers,
                          "drop_last": ld.drop_last, "sampler": type(ld.sampler).__name__},
               "extra_state": {k: type(v).__name__ for k, v in self.job.extra_state.items()}}
        return json.loads(json.dumps(cfg, sort_keys=True, default=str))

    def run_eval(self, tag: str) -> Dict[str, Any]:
        """Run the entry's evaluate() on the current state, timed, without disturbing training: the RNG
        states and the model's train/eval mode are put back after it. Saves its output for comparison."""
        if self.job.evaluate is None:
            return {"available": False}
        import torch
        from .preflight_state import rng_state, set_rng_state
        rng = rng_state(self.job.loader)
        was_training = self.job.model.training
        self.sync()
        t0 = time.perf_counter()
        with torch.no_grad():
            out = self.job.evaluate()
        self.sync()
        eval_s = time.perf_counter() - t0
        self.job.model.train(was_training)
        set_rng_state(self.job.loader, rng)
        torch.save(_to_cpu_tree(out), os.path.join(self.spec["work_dir"], f"eval-{tag}-rank{self.rank}.pt"))
        return {"available": True, "eval_s": eval_s}

    def contents(self) -> List[str]:
        c = ["model", "optimizer"] + (["scaler"] if self.job.scaler is not None else [])
        return c + [f"extra:{k}" for k in sorted(self.job.extra_state)] + ["loader", "rng", "step", "config"]

    def _gather(self, obj: Any) -> List[Any]:
        if self.world == 1:
            return [obj]
        import torch.distributed as dist
        out: List[Any] = [None] * self.world
        dist.all_gather_object(out, obj)
        return out

    def save(self, d: str, state: Dict[str, Any]) -> Dict[str, Any]:
        """Synchronous save of this rank's file; rank 0 writes the manifest after every rank's file."""
        os.makedirs(d, exist_ok=True)
        t0 = time.perf_counter()
        staged = ck.to_cpu(state)
        n, sha = ck.save_rank_file(os.path.join(d, ck.rank_file(self.rank)), staged)
        t1 = time.perf_counter()
        metas = self._gather((ck.rank_file(self.rank), n, sha))
        if self.rank == 0:
            ck.write_manifest(d, self.step_count, self.world,
                              {name: {"bytes": b, "sha256": h} for name, b, h in metas})
        self._barrier()
        return {"bytes": n, "sha256": sha, "save_s": t1 - t0, "t_end": time.perf_counter()}

    def _barrier(self) -> None:
        if self.world > 1:
            import torch.distributed as dist
            dist.barrier()

    # ------------------------------------------------------------------ roles
    def run_steps(self, n: int, warmup: int, out: List[Dict[str, Any]]) -> None:
        for i in range(n):
            r = self.one_step()
            r["warmup"] = i < warmup
            out.append(r)

    def role_train(self) -> Dict[str, Any]:
        import torch
        from . import preflight_mem
        warm, steps = int(self.spec["warmup_steps"]), int(self.spec["steps"])
        rss_before = preflight_mem.vm_hwm_bytes()
        from . import procfs
        s = procfs.proc_sample(os.getpid(), with_pss=False)
        if s is not None:
            rss_before = s["rss_bytes"]
        sampler = preflight_mem.PeakSampler()
        if self.cuda:
            torch.cuda.reset_peak_memory_stats(self.device)
        sampler.start()
        recs: List[Dict[str, Any]] = []
        for i in range(warm + steps):
            r = self.one_step()
            r["warmup"] = i < warm
            recs.append(r)
            sampler.sample()
        sampler.stop()
        mem = preflight_mem.report(sampler, self.device if self.cuda else None, rss_before)
        root = self.spec["ckpt_dir"]
        state = self.state()
        saved_step = self.step_count
        sync = self.save(ck.step_dir(root, self.step_count), state)
        ev = self.run_eval("train")  # on the saved state, before the kill
        # asynchronous save of the same state: copy to host memory, write in the background while
        # one more step runs (the state was taken before that step, so it is the same checkpoint)
        ad = ck.step_dir(root, self.step_count, "-async")
        os.makedirs(ad, exist_ok=True)
        a = ck.AsyncSave(os.path.join(ad, ck.rank_file(self.rank)), state)
        del state
        overlapped = self.one_step()
        n, sha = a.wait()
        metas = self._gather((ck.rank_file(self.rank), n, sha))
        if self.rank == 0:
            ck.write_manifest(ad, saved_step, self.world,
                              {name: {"bytes": b, "sha256": h} for name, b, h in metas})
        self._barrier()
        res = {
            "role": "train", "rank": self.rank, "pid": os.getpid(), "world_size": self.world,
            "accelerator": "cuda" if self.cuda else "cpu",
            "device_name": torch.cuda.get_device_name(self.device) if self.cuda else None,
            "steps": recs, "memory": mem, "job": self.describe(recs), "eval": ev,
            "checkpoint": {"step": saved_step, "contents": self.contents(), "sync": sync,
                           "async": {"bytes": n, "sha256": sha, "blocking_s": a.blocking_s,
                                     "total_s": a.total_s, "overlapped_step_s": overlapped["step_time_s"]}},
            "t_saved": time.perf_counter(),
        }
        _write_json(self.result_path(), res)
        sys.stdout.write(f"SAVED {self.rank}\n")
        sys.stdout.flush()
        # keep training, as the real job would, until the launcher's SIGKILL arrives; stop on our own
        # if the launcher is gone (we were re-parented), so no rank outlives a crashed launcher
        ppid = os.getppid()
        while os.getppid() == ppid:
            self.one_step()
        return res

    def describe(self, recs: List[Dict[str, Any]]) -> Dict[str, Any]:
        m = self.job.model
        params = sum(p.numel() for p in m.parameters())
        pbytes = sum(p.numel() * p.element_size() for p in m.parameters())
        ld = self.job.loader
        loader = {"num_workers": ld.num_workers, "batch_size": ld.batch_size,
                  "prefetch_factor": ld.prefetch_factor if ld.num_workers > 0 else None,
                  "pin_memory": bool(ld.pin_memory), "persistent_workers": bool(ld.persistent_workers),
                  "batches_per_epoch": len(ld)}
        return {"parameters": params, "parameter_bytes": pbytes, "loader": loader,
                "description": dict(self.job.description),
                "micro_batch_samples": self.job.description.get("micro_batch_samples", ld.batch_size)}

    def role_reference(self) -> Dict[str, Any]:
        from .preflight_state import params_state
        import torch
        n = int(self.spec["warmup_steps"]) + int(self.spec["steps"])
        recs: List[Dict[str, Any]] = []
        for _ in range(n):
            recs.append(self.one_step())
        r = self.one_step(keep_batch_digest=True)
        torch.save(params_state(self.job.model), self.params_path())
        res = {"role": "reference", "rank": self.rank, "pid": os.getpid(), "step": r,
               "losses": [x["loss"] for x in recs]}
        _write_json(self.result_path(), res)
        # the comparison step is saved: measure precision, checkpointing and sequence length now
        _write_json(os.path.join(self.spec["work_dir"], f"measure-rank{self.rank}.json"), self.measure())
        return res

    def measure(self) -> Dict[str, Any]:
        from . import preflight_measure as pm
        m = self.spec.get("measure") or {}
        out: Dict[str, Any] = {}
        try:
            runner = pm.StepRunner(self.job, self.device)
            snap = pm.Snapshot(self.job)
            batches = [self.cursor.next() for _ in range(max(1, int(m.get("precision_steps", 3))))]
            if m.get("precision", "bf16") != "none":
                out["precision"] = pm.precision(self.job, runner, snap, batches, m.get("precision", "bf16"),
                                                float(m.get("precision_loss_rtol", 0.05)),
                                                float(m.get("precision_param_rtol", 0.01)))
            else:
                out["precision"] = {"measured": False, "note": "--precision none"}
            k = max(1, int(m.get("measure_steps", 2)))
            out["activation_checkpointing"] = pm.activation_checkpointing(self.job, runner, snap, [batches[0]] * (k + 1))
            lens = list(m.get("seq_lens") or [])
            if not lens and self.job.batch_at_sequence_length is not None:
                L = self.job.description.get("sequence_length")
                if isinstance(L, int) and L >= 2:
                    lens = [L // 2, L]
            out["sequence_length"] = pm.sequence_lengths(self.job, runner, snap, lens, k)
        except Exception as e:  # a measurement that fails is reported, never fails the cycle's figures
            import traceback
            out["error"] = f"{type(e).__name__}: {e}".splitlines()[0]
            out["traceback"] = traceback.format_exc()
        return out

    def role_restore(self) -> Dict[str, Any]:
        import torch
        from .preflight_state import params_state, set_rng_state
        inject = set(self.spec["inject"])
        root = self.spec["ckpt_dir"]
        t_restore0 = time.perf_counter()
        d = ck.resolve_dir(root)
        man = ck.read_manifest(d)
        if man["world_size"] != self.world:
            raise ck.CheckpointError(f"{os.path.join(d, 'manifest.json')}:1: expected world_size {self.world} "
                                     f"(this job), found {man['world_size']}")
        name = ck.rank_file(self.rank)
        timing: Dict[str, float] = {}
        data = ck.read_verified(d, name, man, timing)
        read_bytes = len(data)
        t_verified = time.perf_counter()
        # to host memory: RNG states must stay CPU tensors; load_state_dict copies onto the device
        st = ck.load_bytes(os.path.join(d, name), data, "cpu")
        del data
        self.job.model.load_state_dict(st["model"])
        if "skip-optimizer-restore" not in inject:
            self.job.optimizer.load_state_dict(st["optimizer"])
        if self.job.scaler is not None and st.get("scaler") is not None:
            self.job.scaler.load_state_dict(st["scaler"])
        for k, obj in self.job.extra_state.items():
            if k not in st["extra"]:
                raise ck.CheckpointError(f"{os.path.join(d, name)}: expected extra state {k!r}, found only "
                                         f"{sorted(st['extra'])}")
            obj.load_state_dict(st["extra"][k])
        self.step_count = int(st["step"])
        t_loaded = time.perf_counter()
        replayed = self.cursor.restore(st["loader"], replay="skip-fast-forward" not in inject)
        if "skip-rng-restore" not in inject:
            set_rng_state(self.job.loader, st["rng"])
        t_ff = time.perf_counter()
        saved_cfg = st.get("config")
        cfg_now = self.training_config()
        ev = self.run_eval("restore")  # on the restored state; RNG and mode put back, so the step is unchanged
        t_ev = time.perf_counter()
        self.t_eval_s = t_ev - t_ff
        r = self.one_step(keep_batch_digest=True)
        t_first = r["t_end"] - self.t_eval_s  # the restart figures exclude the evaluation
        torch.save(params_state(self.job.model), self.params_path())
        res = {"role": "restore", "rank": self.rank, "pid": os.getpid(), "step": r, "dir": d,
               "checkpoint_step": int(st["step"]),
               "checkpoint_verify_s": t_verified - t_restore0, "restore_s": t_loaded - t_restore0,
               "checkpoint_read_s": timing["read_s"], "checkpoint_read_bytes": read_bytes,
               "fast_forward": "none" if "skip-fast-forward" in inject else "replay",
               "fast_forward_batches": replayed, "fast_forward_s": t_ff - t_loaded,
               "first_step_s": t_first - t_ff, "time_to_first_step_s": t_first - t_restore0,
               "eval": ev, "config_saved": saved_cfg, "config_matches": saved_cfg == cfg_now,
               "config_diff": _first_diff(saved_cfg, cfg_now),
               "restart_s": t_first - float(self.spec["t_launch"]),
               "build_s": self.t_built - self.t_start}
        _write_json(self.result_path(), res)
        return res

    def result_path(self) -> str:
        return os.path.join(self.spec["work_dir"], f"{self.role}-rank{self.rank}.json")

    def params_path(self) -> str:
        return os.path.join(self.spec["work_dir"], f"params-{self.role}-rank{self.rank}.pt")


def _to_cpu_tree(x: Any) -> Any:
    import torch
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().clone()
    if isinstance(x, dict):
        return {k: _to_cpu_tree(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_to_cpu_tree(v) for v in x]
    return x


def _first_diff(a: Any, b: Any, path: str = "") -> Optional[str]:
    """The first key path where two JSON values differ (None when equal)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}" if path else k
            d = _first_diff(a[k], b[k], f"{path}.{k}" if path else k)
            if d:
                return d
        return None
    return None if a == b else (path or "(root)")


def _write_json(path: str, doc: Dict[str, Any]) -> None:
    data = json.dumps(doc, sort_keys=True, allow_nan=True).encode()
    ck.write_file_atomic(path, lambda f: f.write(data))


def main(argv: List[str]) -> int:
    role, spec_path = argv[0], argv[1]
    with open(spec_path) as f:
        spec = json.load(f)
    c = Child(role, spec)
    try:
        c.setup()
        if role == "train":
            c.role_train()
        elif role == "reference":
            c.role_reference()
        elif role == "restore":
            c.role_restore()
        else:
            raise ValueError(role)
    except ck.CheckpointError as e:
        _write_json(c.result_path(), {"role": role, "rank": c.rank, "error": str(e), "kind": "checkpoint"})
        sys.stderr.write(f"{e}\n")
        return 3
    except Exception as e:
        import traceback
        tb = traceback.format_exc()
        from .preflight_protocol import ProtocolError
        kind = "protocol" if isinstance(e, ProtocolError) else "exception"
        msg = (str(e) if kind == "protocol" else f"{type(e).__name__}: {e}").splitlines()[0]
        _write_json(c.result_path(), {"role": role, "rank": c.rank, "error": msg, "kind": kind,
                                      "traceback": tb})
        sys.stderr.write(tb)
        return 3 if kind == "protocol" else 1
    finally:
        try:
            import torch.distributed as dist
            if dist.is_available() and dist.is_initialized():
                dist.destroy_process_group()
        except Exception:
            pass
    return 0

