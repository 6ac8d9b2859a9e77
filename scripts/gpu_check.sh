#!/usr/bin/env bash
# scripts/gpu_check.sh [OUT]: exercise every CUDA path of simreplay on one CUDA GPU machine, in under
# 8 minutes, and write each sub-check's pass/fail and timing to OUT/summary.json (OUT: $OUT, else
# ./gpu-check-out). Sub-checks (docs/gpu-check.md):
#   env            nvidia-smi, torch's CUDA build, the device
#   capture_cuda   a real training step (TinyLM over real text files) captured with CUDA events,
#                  to_device H2D timing and pinned memory (pin_memory=True)
#   bench_cuda     the bench pipeline's real resnet18 step on CUDA (needs opencv-doc's media; else skipped)
#   preflight_cuda the preflight on CUDA: peak memory, device memory, SIGKILL/restore, eval, bf16, seq lengths
#   probe_nccl     simreplay probe network over nccl: 2 ranks on 2 GPUs, else 1 rank (nccl refuses two
#                  ranks on one device)
#   calibrate      simreplay calibrate on the CUDA trace, with its self-check
#   plan_preflight simreplay plan --preflight on the CUDA preflight: its checks against a plan whose
#                  measured_on is this GPU (device-name match), the GPU step time used as measured
# Exit: 0 every sub-check passed (skipped ones aside), 1 one failed, 77 no CUDA here (nothing run).
# The whole script keeps to GPU_CHECK_BUDGET_S (default 480 s): each sub-check's limit is cut to what is
# left, and OUT/summary.json is rewritten after every sub-check, so a run killed from outside still
# leaves the results so far ("status": "incomplete").
# GPU_CHECK_CPU_DRYRUN=1 runs the same sub-checks on the CPU to test this script on a machine without
# a GPU: every result is then labelled "cpu-dry-run" and proves nothing about CUDA.
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=${1:-${OUT:-./gpu-check-out}}
SIM=${SIMREPLAY:-$ROOT/build/simreplay}
DRY=${GPU_CHECK_CPU_DRYRUN:-0}
BUDGET_S=${GPU_CHECK_BUDGET_S:-480}
SCALE=4  # model and sequence sizes: x4 on the GPU; the CPU dry run uses x1
export PYTHONPATH="$ROOT/capture${PYTHONPATH:+:$PYTHONPATH}"
T_START=$(date +%s.%N)

# The interpreter: $PYTHON, else the first of these whose torch sees a CUDA device (a GPU machine's
# torch is often not Debian's CPU-only python3-torch).
cuda_python() {
  local p
  for p in "$@"; do
    [ -n "$p" ] && [ -x "$p" ] || continue
    if "$p" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  return 1
}
if [ "$DRY" != 1 ]; then
  if [ -n "${PYTHON:-}" ]; then TRIED=("$PYTHON"); else
    TRIED=(/usr/bin/python3 "$(command -v python3 2>/dev/null)" /opt/conda/bin/python /usr/local/bin/python3
           "$(command -v python 2>/dev/null)")
  fi
  if ! PY=$(cuda_python "${TRIED[@]}"); then
    echo "gpu_check: no CUDA device visible to torch of ${TRIED[*]} (torch.cuda.is_available() is False or torch is missing): nothing to check here; run it on a CUDA GPU machine, or set PYTHON" >&2
    exit 77
  fi
  DEV=cuda
else
  PY=${PYTHON:-/usr/bin/python3}
  DEV=cpu
  SCALE=1
  echo "gpu_check: GPU_CHECK_CPU_DRYRUN=1: running the sub-checks on the CPU; the results say nothing about CUDA" >&2
fi

mkdir -p "$OUT/logs" "$OUT/checks"
OUT=$(cd "$OUT" && pwd)
export OUT PY SIM DEV ROOT SCALE
rm -f "$OUT"/checks/*.json

# summarize FINAL: OUT/summary.json from the sub-checks so far ("incomplete" until FINAL=1, when it also
# prints the table and sets the exit code).
summarize() {
  "$PY" - "$OUT" "$T_START" "$DEV" "$1" <<'PYEOF'
import datetime, json, os, sys, time
out, t0, dev, final = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"
order = ["env", "capture_cuda", "bench_cuda", "preflight_cuda", "probe_nccl", "calibrate", "plan_preflight"]
checks = []
for n in order:
    p = os.path.join(out, "checks", n + ".json")
    if os.path.exists(p):
        checks.append(json.load(open(p)))
    elif final:
        checks.append({"name": n, "pass": False, "skipped": False, "detail": {"why": "did not run"}})
ok = all(c["pass"] or c["skipped"] for c in checks)
doc = {"schema": "simreplay.gpu-check/1",
       "status": ("pass" if ok else "fail") if final else f"incomplete ({len(checks)} of {len(order)} sub-checks so far)",
       "device": "cuda" if dev == "cuda" else "cpu-dry-run (GPU_CHECK_CPU_DRYRUN=1: proves nothing about CUDA)",
       "python": sys.executable, "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(),
       "total_s": time.time() - t0, "checks": checks}
tmp = os.path.join(out, "summary.json.tmp")
json.dump(doc, open(tmp, "w"), indent=1, sort_keys=True, default=str)
os.replace(tmp, os.path.join(out, "summary.json"))
if final:
    for c in checks:
        print(f"{'SKIP' if c['skipped'] else 'PASS' if c['pass'] else 'FAIL'} {c['name']} {c.get('seconds', 0):.1f} s")
    print(f"gpu_check {doc['status'].upper()} on {doc['device']} in {doc['total_s']:.0f} s: {out}/summary.json")
    sys.exit(0 if ok else 1)
PYEOF
}

# run_check NAME TIMEOUT_S COMMAND...: runs it with a time limit (cut to what is left of the budget), log
# in OUT/logs/NAME.log; the verifier (verify NAME RC SECONDS) writes OUT/checks/NAME.json, and the
# summary is rewritten.
run_check() {
  local name=$1 limit=$2; shift 2
  local t0 t1 rc left
  left=$(awk -v a="$T_START" -v b="$(date +%s.%N)" -v B="$BUDGET_S" 'BEGIN { printf "%d", B - (b - a) }')
  if [ "$left" -lt 20 ]; then
    echo "== $name: not run, the budget of ${BUDGET_S}s is spent" >&2
    echo "not run: the script's time budget (GPU_CHECK_BUDGET_S=${BUDGET_S}) was spent before it" >"$OUT/logs/$name.log"
    verify "$name" 124 0
    summarize 0
    return
  fi
  [ "$limit" -gt $((left - 5)) ] && limit=$((left - 5))
  echo "== $name (limit ${limit}s)" >&2
  t0=$(date +%s.%N)
  if declare -F "$1" >/dev/null; then  # a shell function of this script: timeout needs a process
    timeout --kill-after=10 "$limit" bash -c "$1" >"$OUT/logs/$name.log" 2>&1
  else
    timeout --kill-after=10 "$limit" "$@" >"$OUT/logs/$name.log" 2>&1
  fi
  rc=$?
  t1=$(date +%s.%N)
  verify "$name" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
  summarize 0
}

# simreplay can run here (built, and its shared libraries, SimGrid's, present).
sim_runs() { [ -x "$SIM" ] && "$SIM" --version >/dev/null 2>&1; }
export -f sim_runs

verify() {
  "$PY" - "$OUT" "$1" "$2" "$3" "$DEV" <<'PYEOF'
import json, os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "capture"))
out, name, rc, secs, dev = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
res = {"name": name, "exit_code": rc, "seconds": secs, "pass": False, "skipped": False, "detail": {},
       "log": f"logs/{name}.log"}
def log_tail():
    try:
        return open(os.path.join(out, "logs", name + ".log")).read().strip().splitlines()[-3:]
    except OSError:
        return []
try:
    if rc in (124, 137):
        res["detail"]["why"] = "timed out" if secs > 0 else "not run: the time budget was spent"
    elif name == "env":
        res["detail"] = json.load(open(os.path.join(out, "env.json")))
        res["pass"] = rc == 0
    elif name in ("capture_cuda", "bench_cuda"):
        if rc == 77:
            res.update(skipped=True, detail={"why": " ".join(log_tail())})
        else:
            from simreplay_capture.trace import read_trace
            t = read_trace(os.path.join(out, "capture.jsonl.gz" if name == "capture_cuda" else "bench.jsonl.gz"))
            steps, batches, samples = t.of("step"), t.of("batch"), t.of("sample")
            d = {"accelerator": t.manifest.get("accelerator"), "steps": len(steps), "batches": len(batches),
                 "steps_with_compute": sum(1 for s in steps if s["compute_ns"] > 0),
                 "batches_with_h2d": sum(1 for b in batches if b["h2d_ns"] > 0 and b["h2d_bytes"] > 0),
                 "batches_with_pin": sum(1 for b in batches if b["pin_ns"] > 0),
                 "mean_compute_ms": sum(s["compute_ns"] for s in steps) / max(1, len(steps)) / 1e6,
                 "mean_h2d_ms": sum(b["h2d_ns"] for b in batches) / max(1, len(batches)) / 1e6,
                 "mean_pin_ms": sum(b["pin_ns"] for b in batches) / max(1, len(batches)) / 1e6,
                 "samples_with_tokens": sum(1 for s in samples if "tokens" in s)}
            want = "cuda" if dev == "cuda" else "emulated"
            ok = rc == 0 and d["accelerator"] == want and d["steps"] > 0 and d["steps_with_compute"] == d["steps"]
            if dev == "cuda":  # the CUDA paths proper: H2D copies timed, pinned batches
                ok = ok and d["batches_with_h2d"] == d["batches"] and d["batches_with_pin"] > 0
            res.update(detail=d, **{"pass": bool(ok)})
    elif name == "preflight_cuda":
        doc = json.load(open(os.path.join(out, "preflight", "preflight.json")))
        d = {"status": doc["status"], "accelerator": doc["accelerator"], "accelerator_note": doc["accelerator_note"],
             "failed_checks": [c["name"] + ": " + c["reason"] for c in doc["checks"] if not c["pass"]],
             "memory": {k: doc["memory"].get(k) for k in ("kind", "cuda_max_allocated_bytes", "cuda_max_reserved_bytes")},
             "device_memory": doc["memory"].get("device"), "measured": doc["measured"]}
        res.update(detail=d, **{"pass": rc == 0 and doc["status"] == "pass" and doc["accelerator"] == dev})
    elif name == "probe_nccl":
        doc = json.load(open(os.path.join(out, "probe-network.json")))
        d = {"backend": doc.get("backend"), "world_size": doc.get("world_size"),
             "note": open(os.path.join(out, "probe_nccl.note")).read().strip()}
        res.update(detail=d, **{"pass": rc == 0 and (doc.get("backend") == "nccl" or dev != "cuda")})
    elif name == "calibrate":
        if rc == 77:
            res.update(skipped=True, detail={"why": " ".join(log_tail())})
        else:
            m = json.load(open(os.path.join(out, "model.json")))
            res.update(detail={"self_check": m.get("self_check")}, **{"pass": rc == 0 and "self_check" in m})
    elif name == "plan_preflight":
        if rc == 77:
            res.update(skipped=True, detail={"why": " ".join(log_tail())})
        else:
            plan = json.load(open(os.path.join(out, "plan", "out", "plan.json")))
            gpu = plan["measured_on"]
            rows = {a["input"]: a for a in plan["assumptions"]}
            step = rows.get(f"step_time_s[{gpu}]", {})
            checks = [a for a in plan["assumptions"] if a["input"] in ("preflight_check", "manifest_check",
                                                                       "preflight.step_time_s", "precision_step_time_s",
                                                                       "sequence.length") or a["input"].startswith("sequence_scaling")]
            c = plan["candidates"][0]
            d = {"measured_on": gpu, "step_time": step, "pilot_rows": checks,
                 "candidate": {k: c.get(k) for k in ("step_time_s", "step_time_source", "memory_per_gpu_bytes",
                                                     "memory_breakdown", "fits_memory", "needs", "assumed")}}
            # On CUDA the GPU step must be used as measured (its device name matched measured_on, its
            # micro-batch, sequence and software matched); on the CPU dry run it must not be used.
            want = "measured" if dev == "cuda" else "assumed"
            ok = rc == 0 and step.get("status") == want and not any(a["status"] == "overridden" for a in checks)
            res.update(detail=d, **{"pass": bool(ok)})
except Exception as e:  # a missing or malformed output: the sub-check failed, say why
    res["detail"]["why"] = f"{type(e).__name__}: {e}"
    res["detail"]["log_tail"] = log_tail()
res["device"] = dev if dev == "cuda" else "cpu-dry-run"
json.dump(res, open(os.path.join(out, "checks", name + ".json"), "w"), indent=1, sort_keys=True, default=str)
print(f"   {'SKIP' if res['skipped'] else 'PASS' if res['pass'] else 'FAIL'} {name} ({secs:.1f} s)", file=sys.stderr)
PYEOF
}

# ---------------------------------------------------------------------------------------- env
run_check env 60 "$PY" - "$OUT" <<'PYEOF'
import json, os, shutil, subprocess, sys, torch
from simreplay_capture import manifest as mf
cuda = torch.cuda.is_available()
smi = shutil.which("nvidia-smi")
env = {"torch": torch.__version__, "cuda_build": torch.version.cuda, "hip": getattr(torch.version, "hip", None),
       "cuda_available": cuda, "devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else [],
       "nccl": ".".join(map(str, torch.cuda.nccl.version())) if cuda else None,
       "nvidia_smi": subprocess.run([smi, "-L"], capture_output=True, text=True).stdout.strip() if smi else None,
       "driver": mf.versions().get("driver"), "cpu_count": os.cpu_count()}
json.dump(env, open(os.path.join(sys.argv[1], "env.json"), "w"), indent=1)
PYEOF

# ---------------------------------------------------------------------------------------- capture
run_check capture_cuda 150 "$PY" - "$OUT" "$DEV" "$SCALE" <<'PYEOF'
# A real training step on the device: TinyLM over byte windows of the Python sources, a real
# DataLoader with 2 workers and pin_memory, the Recorder's to_device (timed H2D) and step (CUDA events).
import os, sys, torch
import simreplay_capture as sc
from simreplay_capture.bench.preflight_text_step import ByteWindows, TinyLM, default_data, text_files
out, dev, scale = sys.argv[1], torch.device(sys.argv[2]), int(sys.argv[3])
torch.manual_seed(0)
files = text_files(default_data())
ds = ByteWindows(files, 64 * scale, 512)
model = TinyLM(64 * scale, 8, 4, 1024).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
with sc.Recorder(os.path.join(out, "capture.jsonl.gz"), seed=0, data_path=default_data(),
                 notes={"gpu_check": "capture_cuda"}) as rec:
    loader = rec.wrap_loader(torch.utils.data.DataLoader(ds, batch_size=16, num_workers=2, shuffle=True,
                                                         pin_memory=dev.type == "cuda", drop_last=True))
    for i, batch in enumerate(loader):
        b = rec.to_device(batch, dev)
        with rec.step():
            loss = torch.nn.functional.cross_entropy(model(b["x"]).reshape(-1, 256), b["y"].reshape(-1))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        if i >= 30:
            break
print("loss", float(loss))
PYEOF

# ---------------------------------------------------------------------------------------- bench (opencv-doc media)
bench() {
  "$PY" -m simreplay_capture.bench make-dataset --out "$OUT/bench-data" --images 48 --videos 8 --formats files --frames 4 \
    || { echo "no bench dataset (opencv-doc media missing?): skipped"; return 77; }
  "$PY" -m simreplay_capture.bench run --data "$OUT/bench-data" --trace "$OUT/bench.jsonl.gz" --workers 2 \
    --batch-size 16 --pin-memory --steps 40 --warmup-steps 5 $([ "$DEV" = cpu ] && echo --emulate --step-time-s 0.01)
}
export -f bench
run_check bench_cuda 150 bench

# ---------------------------------------------------------------------------------------- preflight
run_check preflight_cuda 200 "$PY" -m simreplay_capture.preflight --out "$OUT/preflight" --device "$DEV" \
  --step simreplay_capture.bench.preflight_text_step:build --opt seq_len=$((64 * SCALE)) --opt d_model=$((64 * SCALE)) \
  --opt heads=8 --opt layers=4 --opt batch_size=8 --opt workers=2 --steps 4 --seq-lens $((64 * SCALE)),$((256 * SCALE)) \
  --precision bf16 --plan-sequence-length $((64 * SCALE)) --plan-micro-batch 8 --timeout-s 150

# ---------------------------------------------------------------------------------------- network probe
probe() {
  local n=1 backend=nccl
  if [ "$DEV" = cuda ]; then
    n=$("$PY" -c 'import torch; print(min(2, torch.cuda.device_count()))')
  else
    backend=gloo; n=2
  fi
  if [ "$n" -ge 2 ]; then echo "nccl between $n processes, one GPU each" >"$OUT/probe_nccl.note"
  else echo "one GPU: nccl with 1 rank (NCCL refuses two ranks on one device); two-process nccl needs two GPUs" >"$OUT/probe_nccl.note"; fi
  [ "$DEV" = cpu ] && echo "cpu dry run: gloo between 2 processes" >"$OUT/probe_nccl.note"
  if sim_runs; then
    "$SIM" probe network --nprocs "$n" --backend "$backend" --max-bytes 16M --budget-s 0.1 --out "$OUT/probe-network.json" --python "$PY"
  else
    "$PY" -m simreplay_capture.probe_network --nprocs "$n" --backend "$backend" --max-bytes 16M --budget-s 0.1 --out "$OUT/probe-network.json"
  fi
}
export -f probe
run_check probe_nccl 120 probe

# ---------------------------------------------------------------------------------------- calibrate + self-check
calibrate() {
  if ! sim_runs; then
    if [ "${GPU_CHECK_BUILD:-0}" != 1 ]; then
      echo "no runnable simreplay binary at $SIM (missing, or its shared libraries such as SimGrid's are absent): skipped; carry build/simreplay or set GPU_CHECK_BUILD=1 to build it here"
      return 77
    fi
    echo "building simreplay (not runnable at $SIM)"
    { cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=Release >/dev/null && \
      cmake --build "$ROOT/build" -j"$(nproc)" --target simreplay; } || { echo "no simreplay binary: the build failed (SimGrid and the other build dependencies: scripts/setup.sh); skipped"; return 77; }
  fi
  "$SIM" calibrate "$OUT/capture.jsonl.gz" --out "$OUT/model.json"
}
export -f calibrate
run_check calibrate 240 calibrate

# ---------------------------------------------------------------------------------------- plan --preflight
plan_preflight() {
  sim_runs || { echo "no runnable simreplay binary at $SIM: skipped"; return 77; }
  [ -f "$OUT/model.json" ] || { echo "no calibrated model (the calibrate sub-check did not write one): skipped"; return 77; }
  [ -f "$OUT/preflight/preflight.json" ] || { echo "no preflight.json (preflight_cuda did not write one): skipped"; return 77; }
  "$PY" - "$OUT" "$DEV" "$SCALE" "$ROOT" <<'PYEOF' || return 1
# A one-candidate plan on this GPU whose scenario replays the CUDA capture's model with the preflight's
# micro-batch, and whose sequence length is the pilot's: every check of plan --preflight should pass.
import json, os, sys
out, dev, scale, root = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
pf = json.load(open(os.path.join(out, "preflight", "preflight.json")))
cat = json.load(open(os.path.join(root, "models", "accelerator_catalogue.json")))["accelerators"]
gpus = (pf.get("manifest") or {}).get("hardware", {}).get("gpus") or [{}]
name = str(gpus[0].get("name") or "")
gpu = next((a["name"] for a in cat if any(p.lower() in name.lower() for p in a.get("device_names", []))), "h200")
d = os.path.join(out, "plan")
os.makedirs(d, exist_ok=True)
scenario = {"model": os.path.join(out, "model.json"),
            "loader": {"num_workers": 2, "batch_size": pf["job"]["micro_batch_samples"], "prefetch_factor": 2,
                       "pin_memory": dev == "cuda", "persistent_workers": False},
            "hardware": {"cpu_cores": os.cpu_count() or 2, "gpus": 1}, "train": {"steps": 50, "dataset_samples": 4096},
            "replay": {"fidelity": "batch"}, "seed": 0}
plan = {"scenario": "scenario.json",
        "job": {"target": {"steps": 2000},
                "model": {"parameters": pf["job"]["parameters"], "optimizer": "adamw", "precision": "bf16"},
                "sequence": {"length": 64 * scale},
                "checkpoint": {"every_s": "auto", "write_bytes_per_s": 1e9, "read_bytes_per_s": 2e9}},
        "measured_on": gpu, "candidates": {"gpu": [gpu], "nodes": [1], "gpus_per_node": 1},
        "prices_per_gpu_hour": {gpu: 3.8}, "simulation": {"initial_steps": 60, "max_steps": 240}}
json.dump(scenario, open(os.path.join(d, "scenario.json"), "w"), indent=1)
json.dump(plan, open(os.path.join(d, "plan.json"), "w"), indent=1)
print(f"plan on {gpu} (device name {name!r})")
PYEOF
  "$SIM" plan "$OUT/plan/plan.json" --out "$OUT/plan/out" --preflight "$OUT/preflight/preflight.json" --jobs 2
}
export -f plan_preflight
run_check plan_preflight 90 plan_preflight

# ---------------------------------------------------------------------------------------- summary
summarize 1
