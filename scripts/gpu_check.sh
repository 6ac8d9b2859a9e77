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
# Exit: 0 every sub-check passed (skipped ones aside), 1 one failed, 77 no CUDA here (nothing run).
# GPU_CHECK_CPU_DRYRUN=1 runs the same sub-checks on the CPU to test this script on a machine without
# a GPU: every result is then labelled "cpu-dry-run" and proves nothing about CUDA.
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=${1:-${OUT:-./gpu-check-out}}
PY=${PYTHON:-/usr/bin/python3}
SIM=${SIMREPLAY:-$ROOT/build/simreplay}
DRY=${GPU_CHECK_CPU_DRYRUN:-0}
SCALE=4  # model and sequence sizes: x4 on the GPU; the CPU dry run uses x1
export PYTHONPATH="$ROOT/capture${PYTHONPATH:+:$PYTHONPATH}"
T_START=$(date +%s.%N)

if [ "$DRY" != 1 ]; then
  if ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "gpu_check: no CUDA device visible to $PY (torch.cuda.is_available() is False): nothing to check here; run it on a CUDA GPU machine" >&2
    exit 77
  fi
  DEV=cuda
else
  DEV=cpu
  SCALE=1
  echo "gpu_check: GPU_CHECK_CPU_DRYRUN=1: running the sub-checks on the CPU; the results say nothing about CUDA" >&2
fi

mkdir -p "$OUT/logs" "$OUT/checks"
OUT=$(cd "$OUT" && pwd)
export OUT PY SIM DEV ROOT SCALE
rm -f "$OUT"/checks/*.json

# run_check NAME TIMEOUT_S COMMAND...: runs it with a time limit, log in OUT/logs/NAME.log; the verifier
# (verify NAME RC SECONDS) writes OUT/checks/NAME.json
run_check() {
  local name=$1 limit=$2; shift 2
  local t0 t1 rc
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
}

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
        res["detail"]["why"] = "timed out"
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
  if [ -x "$SIM" ]; then
    "$SIM" probe network --nprocs "$n" --backend "$backend" --max-bytes 16M --budget-s 0.1 --out "$OUT/probe-network.json" --python "$PY"
  else
    "$PY" -m simreplay_capture.probe_network --nprocs "$n" --backend "$backend" --max-bytes 16M --budget-s 0.1 --out "$OUT/probe-network.json"
  fi
}
export -f probe
run_check probe_nccl 120 probe

# ---------------------------------------------------------------------------------------- calibrate + self-check
calibrate() {
  if [ ! -x "$SIM" ]; then
    echo "building simreplay (not found at $SIM)"
    { cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=Release >/dev/null && \
      cmake --build "$ROOT/build" -j"$(nproc)" --target simreplay; } || { echo "no simreplay binary: the build failed (SimGrid and the other build dependencies: scripts/setup.sh); skipped"; return 77; }
  fi
  "$SIM" calibrate "$OUT/capture.jsonl.gz" --out "$OUT/model.json"
}
export -f calibrate
run_check calibrate 240 calibrate

# ---------------------------------------------------------------------------------------- summary
"$PY" - "$OUT" "$T_START" "$DEV" <<'PYEOF'
import datetime, json, os, sys, time
out, t0, dev = sys.argv[1], float(sys.argv[2]), sys.argv[3]
order = ["env", "capture_cuda", "bench_cuda", "preflight_cuda", "probe_nccl", "calibrate"]
checks = []
for n in order:
    p = os.path.join(out, "checks", n + ".json")
    checks.append(json.load(open(p)) if os.path.exists(p) else {"name": n, "pass": False, "skipped": False,
                                                                  "detail": {"why": "did not run"}})
ok = all(c["pass"] or c["skipped"] for c in checks)
doc = {"schema": "simreplay.gpu-check/1", "status": "pass" if ok else "fail",
       "device": "cuda" if dev == "cuda" else "cpu-dry-run (GPU_CHECK_CPU_DRYRUN=1: proves nothing about CUDA)",
       "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(), "total_s": time.time() - t0,
       "checks": checks}
tmp = os.path.join(out, "summary.json.tmp")
json.dump(doc, open(tmp, "w"), indent=1, sort_keys=True, default=str)
os.replace(tmp, os.path.join(out, "summary.json"))
for c in checks:
    print(f"{'SKIP' if c['skipped'] else 'PASS' if c['pass'] else 'FAIL'} {c['name']} {c.get('seconds', 0):.1f} s")
print(f"gpu_check {doc['status'].upper()} on {doc['device']} in {doc['total_s']:.0f} s: {out}/summary.json")
sys.exit(0 if ok else 1)
PYEOF
