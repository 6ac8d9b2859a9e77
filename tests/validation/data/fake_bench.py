#!/usr/bin/env python3
"""A stand-in for `simreplay_capture.bench run` in the validate orchestration tests.

Writes a synthetic, self-consistent trace (docs/trace-format.md) and a bench-style summary
(docs/capture.md) for the configuration on its command line, deterministically: the same arguments
give the same bytes. The repetition is read from the trace file name (validate names runs
"<case>.<kind>.r<rep>" and "<case>.warmup<k>"), so each repetition measures a known throughput:
   rep r -> 100 x (1 + num_workers) x [1.0, 1.1, 0.9][r % 3] samples/s; warm-up runs -> 1.0.
FAKE_BENCH_FAIL=<run id> makes that run exit 1 without writing anything.
FAKE_BENCH_OTHER_MACHINE=<run id> makes that run's manifest report 8 cores instead of 4 (another machine).
"""
import argparse
import gzip
import json
import os
import random
import re
import sys

p = argparse.ArgumentParser()
p.add_argument("--trace", required=True)
p.add_argument("--summary", required=True)
p.add_argument("--workers", type=int, required=True)
p.add_argument("--batch-size", type=int, required=True)
p.add_argument("--steps", type=int, required=True)
p.add_argument("--warmup-steps", type=int, required=True)
p.add_argument("--seed", type=int, required=True)
p.add_argument("--step-time-s", type=float, required=True)
p.add_argument("--pipeline-only", type=int, default=0)
a = p.parse_args()

run_id = os.path.basename(a.trace).split(".jsonl")[0]
if os.environ.get("FAKE_BENCH_FAIL") == run_id:
    print("fake bench: failing on purpose", file=sys.stderr)
    sys.exit(1)
m = re.search(r"\.r(\d+)$", run_id)
factor = [1.0, 1.1, 0.9][int(m.group(1)) % 3] if m else None

DATASET = 64
MS = 1_000_000
workers = a.workers
order = list(range(DATASET))
random.Random(a.seed).shuffle(order)
manifest = {
    "source": "synthetic",
    "hardware": {"cores": 4, "ram_bytes": 16 << 30},
    "loader": {"num_workers": workers, "batch_size": a.batch_size, "prefetch_factor": 2, "pin_memory": False,
               "persistent_workers": False, "drop_last": False, "shuffle": True},
    "data": {"files": DATASET, "bytes": DATASET * 30_000, "format": "files"},
    "accelerator": "emulated",
}
if os.environ.get("FAKE_BENCH_OTHER_MACHINE") == run_id:
    manifest["hardware"]["cores"] = 8
lines = [{"type": "header", "schema": "simreplay.trace/1", "manifest": manifest},
         {"type": "event", "t_ns": 0, "kind": "epoch_start", "epoch": 0, "iter_ns": 5 * MS}]
free = [10 * MS] * max(1, workers)  # each worker's clock
loop = 10 * MS
step_ns = round(a.step_time_s * 1e9)
for b in range(a.steps):
    w = b % workers if workers > 0 else -1
    t = free[max(0, w)]
    for i in range(a.batch_size):
        index = order[(b * a.batch_size + i) % DATASET]
        read_ns, decode_ns, augment_ns = 80_000, 600_000 + 1_000 * (index % 7), 2 * MS
        lines.append({"type": "sample", "rank": 0, "epoch": 0, "index": index, "batch": b, "worker": w,
                      "t_start_ns": t, "read_ns": read_ns, "decode_ns": decode_ns, "augment_ns": augment_ns,
                      "read_bytes": 30_000, "out_bytes": 49_152, "format": "jpeg", "width": 120, "height": 90,
                      "frames": 1, "cpu_ns": (read_ns + decode_ns + augment_ns) // 2, "hash": f"{a.seed}-{index}"})
        t += read_ns + decode_ns + augment_ns
    free[max(0, w)] = t
    next_start = max(loop, t + MS)
    lines.append({"type": "batch", "rank": 0, "epoch": 0, "batch": b, "worker": w, "size": a.batch_size,
                  "collate_ns": 0, "t_ready_ns": t, "wait_ns": 500_000, "pin_ns": 0, "h2d_ns": 0, "h2d_bytes": 0,
                  "t_next_start_ns": next_start, "bytes": a.batch_size * 49_152})
    lines.append({"type": "step", "rank": 0, "step": b, "t_start_ns": next_start + 500_000, "compute_ns": step_ns,
                  "comm_ns": 0, "step_ns": step_ns, "micro_batches": 1})
    loop = next_start + 500_000 + step_ns
lines.append({"type": "footer"})
text = "".join(json.dumps(line, sort_keys=True) + "\n" for line in lines).encode()
with open(a.trace, "wb") as f:
    # gzip with a fixed mtime: the same arguments give the same bytes.
    f.write(gzip.compress(text, mtime=0) if a.trace.endswith(".gz") else text)

throughput = 1.0 if factor is None else 100.0 * (1 + workers) * factor
summary = {"throughput_samples_per_s": throughput, "data_wait_s": {"mean": 0.0005, "p95": 0.0005},
           "gpu_idle_fraction": 0.25, "time_to_first_batch_s": 0.01, "cpu_s_per_sample": 0.0013}
with open(a.summary, "w") as f:
    json.dump(summary, f, sort_keys=True)
